"""Traps that surface at a jitted call rather than inside its trace: an unhashable static argument
(``unhashable-static``) and an array read after it was donated (``donated-buffer``).

The jitted function is found from the call as written at the user's line, its static and donated
parameters from its ``jax.jit`` options; the donating call is searched in this cell and the ones
before it.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any

import jax

import jaxmagic.doctor.clues as clues
import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING, Span, UserFrame
from jaxmagic.doctor.diagnosis import Diagnosis
from jaxmagic.doctor.registry import describes, pitfall
from jaxmagic.tracing import sources
from jaxmagic.words import code, place, say

_UNHASHABLE_RE = re.compile(r"object of type <class '(?P<type>[\w.]+)'>, (?P<value>.*?)\. The error was", re.S)


def _jitted_callee(case, frame: UserFrame) -> tuple[ast.Call | None, Any]:
    """The call at the frame's position and the ``jax.jit`` object it calls (or ``case.fn``)."""
    call = case.expression(frame, ast.Call)
    callee = MISSING
    if isinstance(call, ast.Call):
        callee = frame.resolve(call.func)
        if callee is MISSING and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            # model.step(...): looked up statically, so that a property of the user's object does not run here
            owner = frame.lookup(call.func.value.id)
            callee = inspect.getattr_static(owner, call.func.attr, MISSING) if owner is not MISSING else MISSING
    if not _jax_private.is_jitted(callee) and case.fn is not None and _jax_private.is_jitted(case.fn):
        callee = case.fn
    return (call if isinstance(call, ast.Call) else None), callee


def _is_unhashable(value: Any) -> bool:
    if value is MISSING:
        return False
    return isinstance(value, (list, dict, set, bytearray)) or getattr(type(value), "__hash__", None) is None


def _hashable_form(case, frame: UserFrame, node: ast.expr) -> str | None:
    """The same value written in a hashable form: ``[1, 2]`` -> ``(1, 2)``, ``jnp.array([1, 2])`` -> ``(1, 2)``."""
    if isinstance(node, ast.List):
        return "(" + ", ".join(case.text(frame, e) for e in node.elts) + ("," if len(node.elts) == 1 else "") + ")"
    if isinstance(node, ast.Set):
        return "frozenset({" + ", ".join(case.text(frame, e) for e in node.elts) + "})"
    if (
        isinstance(node, ast.Call)
        and node.args
        and getattr(frame.resolve(node.func), "__name__", "") in ("array", "asarray")
    ):
        inner = node.args[0]
        if isinstance(inner, (ast.List, ast.Tuple)):
            return (
                "(" + ", ".join(case.text(frame, e) for e in inner.elts) + ("," if len(inner.elts) == 1 else "") + ")"
            )
    text = case.text(frame, node)
    value = frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
    if isinstance(value, (set,)):
        return f"frozenset({text})"
    if isinstance(value, dict):
        return f"tuple({text}.items())"
    if isinstance(value, list):
        return f"tuple({text})"
    if hasattr(value, "tolist"):
        return f"tuple({text}.tolist())"
    return None


def _frozen_mapping(case, frame: UserFrame, node: ast.expr) -> tuple[str, str] | None:
    """A dict (written, or held by a name) as a frozen dict: ``(import line or "", FrozenDict(...))``;
    ``None`` for anything else, or where Flax, whose ``FrozenDict`` it is, is not installed."""
    value = frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
    if not (isinstance(node, ast.Dict) or isinstance(value, dict)):
        return None
    try:
        from flax.core import FrozenDict
    except ImportError:
        return None
    name = rewrites.alias(frame.frame.f_globals, FrozenDict, "FrozenDict")
    imported = "" if frame.lookup(name) is FrozenDict else "from flax.core import FrozenDict\n"
    return imported, f"{name}({case.text(frame, node)})"


@dataclass(frozen=True)
class UnhashableStatic:
    """What ``unhashable_static`` found: the call, the jitted callee and its options, the static
    parameter and the argument written for it (where known), and how JAX showed the value."""

    call: ast.Call | None
    callee: Any
    options: Any
    parameter: str | None
    argument: ast.expr | None
    type_name: str
    shown_value: str


@pitfall(
    "unhashable-static",
    "An unhashable value passed as a static argument",
    "error",
    order=10,
    messages=("Non-hashable static arguments are not supported",),
)
def unhashable_static(case) -> UnhashableStatic | None:
    """``unhashable-static``: a list, dict or array passed where ``jax.jit`` expects a static value.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.case import Case
    >>> tile = jax.jit(lambda x, reps: jnp.tile(x, reps), static_argnums=1)
    >>> try:
    ...     tile(jnp.ones(2), [2])
    ... except ValueError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe_unhashable_static(case, unhashable_static(case))
    >>> found.pitfall, found.variable, found.fix
    ('unhashable-static', 'reps', 'tile(jnp.ones(2), (2,))')
    """
    if not (isinstance(case.exc, (ValueError, TypeError)) and case.says("unhashable-static")):
        return None
    frame = case.innermost
    if frame is None:
        return None
    detail = _UNHASHABLE_RE.search(case.message)
    type_name = detail.group("type").rsplit(".", 1)[-1] if detail else "value"
    if type_name == "ArrayImpl":
        type_name = "jax.Array"
    shown_value = " ".join(detail.group("value").split()) if detail else ""
    call, callee = _jitted_callee(case, frame)
    options = _jax_private.jit_options(callee) if _jax_private.is_jitted(callee) else None
    parameter, argument = None, None
    if call is not None and options is not None:
        arguments = rewrites.call_parameters(call, callee)
        sig = rewrites.signature_of(callee)
        names = list(sig.parameters) if sig else []
        static = set(options.static_argnames) | {names[i] for i in options.static_argnums if i < len(names)}
        for name, node in arguments.items():
            if name not in static:
                continue
            value = frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
            literal = isinstance(node, (ast.List, ast.Set, ast.Dict, ast.Call))
            if _is_unhashable(value) or (value is MISSING and literal):
                parameter, argument = name, node
                break
    return UnhashableStatic(call, callee, options, parameter, argument, type_name, shown_value)


def _how_static(found: UnhashableStatic):
    """`` (static_argnums=(1,))`` or `` (static_argnames=("n",))``: how the parameter was made static."""
    parameter, options = found.parameter, found.options
    if options is None or parameter is None:
        return ""
    sig = rewrites.signature_of(found.callee)
    index = list(sig.parameters).index(parameter) if sig and parameter in sig.parameters else None
    return say(
        " ({})",
        code(f"static_argnums=({index},)")
        if index in options.static_argnums
        else code(f'static_argnames=("{parameter}",)'),
    )


def _hashable_fix(case, frame, found: UnhashableStatic):
    """The call with the argument written in a hashable form (a tuple, a frozen dict), and its note;
    where the call is not known as written, the way to fix it, in words."""
    argument = found.argument
    mapping = _frozen_mapping(case, frame, argument) if argument is not None else None
    replacement = mapping[1] if mapping else _hashable_form(case, frame, argument) if argument is not None else None
    parsed = case.parsed(frame)
    statement = case.statement(frame)
    if replacement is not None and parsed is not None and statement is not None:
        fix = rewrites.with_edits(
            parsed.lines, statement.lineno, statement.end_lineno, [rewrites.Edit(Span.of(argument), replacement)]
        )
        if mapping:
            note = say(
                "Pass a frozen dict: {} is hashable (while its values are), and reads like the dict to code that "
                "indexes it by key.",
                code(replacement),
            )
            return mapping[0] + fix, note
        return fix, say(
            "Pass a tuple: {} is hashable, and reads the same to code that indexes or iterates it.", code(replacement)
        )
    if found.type_name == "dict":
        return "", say("Pass a hashable mapping instead of a dict, such as Flax's {}.", code("flax.core.FrozenDict"))
    example = _tuple_text(found.shown_value) if found.shown_value else None
    return "", say(
        "Pass a tuple{} (hashable) instead of a {}.",
        say(" such as {}", code(example)) if example else "",
        found.type_name,
    )


@describes("unhashable-static")
def describe_unhashable_static(case, found: UnhashableStatic) -> Diagnosis:
    """The argument written as a tuple, in words and as the user's call changed."""
    frame = case.innermost
    fname = donations.callee_name(found.call, found.callee)
    where = case.where(frame)
    parameter, argument = found.parameter, found.argument
    what = code(parameter) if parameter else "A static argument"
    written = say(" ({})", code(case.text(frame, argument))) if argument is not None else ""
    how = _how_static(found)
    explanation = say(
        "{} is a static argument of {}{}: JAX compiles one version per static value and finds it again by the "
        "value's hash, so a static value must be hashable. Here it got a {}{}{}, which is not ({}).",
        what,
        code(fname),
        how,
        found.type_name,
        written,
        f" holding {found.shown_value}" if found.shown_value and argument is None else "",
        place(where),
    )
    fix, note = _hashable_fix(case, frame, found)
    alternatives = (
        (
            say(
                "If {} is data (numbers to compute with), not a setting, do not make it static: pass it as an ordinary "
                "argument, traced like the others.",
                what if parameter else "it",
            ),
            "",
        ),
    )
    return case.diagnosis(
        "unhashable-static",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        alternatives=alternatives,
        where=where,
        variable=parameter,
        function=fname,
    )


def _tuple_text(shown: str) -> str | None:
    """``[2 2]`` or ``[2, 2]`` (how JAX shows the value) -> ``(2, 2)``."""
    numbers = re.findall(r"-?\d+(?:\.\d+)?", shown)
    if not numbers or len(numbers) > 8 or not shown.strip().startswith("["):
        return None
    return "(" + ", ".join(numbers) + ("," if len(numbers) == 1 else "") + ")"


# ------------------------------------------------------------------------------------------------
# donated-buffer


@dataclass(frozen=True)
class DonatedRead:
    """What ``donated_buffer`` found: the name read after its array was deleted, and the donating
    call ``(source, call, callee, parameter)`` where it was found in the user's code."""

    variable: str
    donation: tuple | None


@pitfall(
    "donated-buffer",
    "An array used after it was donated",
    "error",
    order=20,
    messages=("Array has been deleted", "has been deleted or donated"),
)
def donated_buffer(case) -> DonatedRead | None:
    """``donated-buffer``: an array read after it was donated to a jitted function.

    >>> import jax, jax.numpy as jnp
    >>> from jaxmagic.doctor.case import Case
    >>> step = jax.jit(lambda p: p * 2, donate_argnums=0)
    >>> p = jnp.ones(2)
    >>> try:
    ...     q = step(p)
    ...     r = p + 1
    ... except RuntimeError as exc:
    ...     case = Case(exc, None, lambda filename: None)
    >>> found = describe_donated_buffer(case, donated_buffer(case))
    >>> found.variable, found.fix.splitlines()[0]
    ('p', "p = step(p)  # the result takes the donated `p`'s place")
    """
    if not case.says("donated-buffer"):
        return None
    frame = case.innermost
    if frame is None:
        return None
    statement = case.statement(frame)
    node = case.expression(frame)
    names = clues.names_in(node) if node is not None else []
    if statement is not None:
        names += [n for n in clues.names_in(statement) if n not in names]
    deleted = [n for n in names if donations.has_deleted(frame.lookup(n))]
    if not deleted:
        return None
    return DonatedRead(deleted[0], donations.find_donation(case, frame, deleted[0]))


@describes("donated-buffer")
def describe_donated_buffer(case, found: DonatedRead) -> Diagnosis:
    """The name rebound to the donating call's result (or a copy donated), in words and as code."""
    frame = case.innermost
    variable, donation = found.variable, found.donation
    where = case.where(frame)
    jn = rewrites.jax_names(frame.frame.f_globals)
    copy = (
        f"{variable}.copy()"
        if isinstance(frame.lookup(variable), jax.Array)
        else f"{jn.jax}.tree_util.tree_map(lambda a: a.copy(), {variable})"
    )
    if donation is None:
        explanation = say(
            "{} was donated to a jitted function: JAX reused its memory for that function's "
            "result and deleted the array, so {} cannot be read any more ({}).",
            code(variable),
            code(variable),
            place(where),
        )
        fix = ""  # the donating call was not found in your code: the fix in words
        note = say(
            "Where you call the function that donates {}, rebind {} to what it returns: the name then "
            "always holds a live array.",
            code(variable),
            code(variable),
        )
        return case.diagnosis(
            "donated-buffer",
            explanation=explanation,
            fix=fix,
            fix_note=note,
            where=where,
            variable=variable,
            function=None,
        )
    parsed, call, callee, parameter = donation
    fname = donations.callee_name(call, callee)
    donated_at = sources.source_line(parsed.file, call.lineno, "", case.cell_namer)
    explanation = say(
        "{} was donated to {} (its parameter {} is donated: {}) at {}: JAX reused the array's memory for {}'s result and "
        "deleted it. Reading {} afterwards ({}) finds nothing there.",
        code(variable),
        code(fname),
        code(parameter),
        code(donations.donation_option(callee)),
        place(donated_at),
        code(fname),
        code(variable),
        place(where),
    )
    donating = clues.statement_at(parsed.tree, call.lineno)
    edits, note = [], ""
    if isinstance(donating, ast.Assign) and len(donating.targets) == 1:
        target = donating.targets[0]
        if isinstance(target, ast.Name) and target.id != variable:
            edits.append(
                rewrites.Edit(Span.of(target), variable, comment=f"the result takes the donated `{variable}`'s place")
            )
        elif isinstance(target, ast.Tuple):
            for element in target.elts:
                if isinstance(element, ast.Name) and variable in element.id and element.id != variable:
                    edits.append(
                        rewrites.Edit(
                            Span.of(element), variable, comment=f"the result takes the donated `{variable}`'s place"
                        )
                    )
                    break
    elif isinstance(donating, ast.Expr) and donating.value is call:
        edits.append(rewrites.Edit(Span(call.lineno, call.lineno, call.col_offset, call.col_offset), f"{variable} = "))
    if edits and donating is not None:
        fix = rewrites.with_edits(parsed.lines, donating.lineno, donating.end_lineno, edits)
        note = say(
            "Rebind {} to the result where you donate it: the name then always holds a live array.", code(variable)
        )
    else:
        fix = clues.source_of(parsed, donating) if donating is not None else ast.unparse(call)
        fix += f"\n# from here on, use the value this call returned instead of `{variable}`"
        note = say("Use what {} returned from then on, not {}.", code(fname), code(variable))
    keep = (
        rewrites.with_edits(
            parsed.lines,
            donating.lineno,
            donating.end_lineno,
            [rewrites.Edit(Span.of(_argument_node(call, callee, parameter)), copy)],
        )
        if donating is not None and _argument_node(call, callee, parameter) is not None
        else ""
    )
    alternatives = []
    if keep:
        alternatives.append(
            (say("If you still need the old {}, donate a copy (it costs one copy per call):", code(variable)), keep)
        )
    alternatives.append(
        (
            say(
                "Or stop donating: remove {} from the jit of {}.", code(donations.donation_option(callee)), code(fname)
            ),
            "",
        )
    )
    return case.diagnosis(
        "donated-buffer",
        explanation=explanation,
        fix=fix,
        fix_note=note,
        alternatives=tuple(alternatives),
        where=where,
        variable=variable,
        function=fname,
    )


def _argument_node(call: ast.Call, callee: Any, parameter: str) -> ast.expr | None:
    return rewrites.call_parameters(call, callee).get(parameter)
