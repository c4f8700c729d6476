"""``unhashable-static``: a list, dict or array passed where ``jax.jit`` (found from the call at the
user's line) expects a static value, which must be hashable. The fix writes it in a hashable form.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.doctor.case import Case
>>> tile = jax.jit(lambda x, reps: jnp.tile(x, reps), static_argnums=1)
>>> try:
...     tile(jnp.ones(2), [2])
... except ValueError as exc:
...     found = UNHASHABLE_STATIC.diagnose(Case(exc, None, lambda filename: None))
>>> found.pitfall, found.variable, found.fix
('unhashable-static', 'reps', 'tile(jnp.ones(2), (2,))')
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

import jaxmagic.doctor.donations as donations
import jaxmagic.doctor.rewrites as rewrites
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.declared import Declared, InsertBefore, Line, Replace

_ARRAYS = ("array", "asarray")
_FORMS = ((set, "frozenset({})"), (dict, "tuple({}.items())"), (list, "tuple({})"))  # a value held by a name
_UNHASHABLE_RE = re.compile(r"object of type <class '(?P<type>[\w.]+)'>, (?P<value>.*?)\. The error was", re.S)


def _jitted_callee(line: Line) -> tuple[ast.Call | None, Any]:
    """The call at the user's line and the ``jax.jit`` object it calls (or the case's function)."""
    call, frame, fn = line.expression(ast.Call), line.frame, line.case.fn
    callee = frame.resolve(call.func) if isinstance(call, ast.Call) else MISSING
    if isinstance(call, ast.Call) and callee is MISSING and isinstance(call.func, ast.Attribute):
        # model.step(...): looked up statically, so that a property of the user's object does not run here
        owner = frame.lookup(call.func.value.id) if isinstance(call.func.value, ast.Name) else MISSING
        callee = inspect.getattr_static(owner, call.func.attr, MISSING) if owner is not MISSING else MISSING
    if not _jax_private.is_jitted(callee) and fn is not None and _jax_private.is_jitted(fn):
        callee = fn
    return (call if isinstance(call, ast.Call) else None), callee


def _static_argument(line: Line, call: ast.Call | None, callee: Any) -> tuple[str | None, ast.expr | None, str | None]:
    """The static parameter given an unhashable value, the argument written for it, and how the
    user made it static (``static_argnums=(1,)``): where the call and the jit are known."""
    options = _jax_private.jit_options(callee) if _jax_private.is_jitted(callee) else None
    if call is None or options is None:
        return None, None, None
    sig = rewrites.signature_of(callee)
    names = list(sig.parameters) if sig else []
    static = set(options.static_argnames) | {names[i] for i in options.static_argnums if i < len(names)}
    for name, node in rewrites.call_parameters(call, callee).items():
        value = line.frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
        literal = isinstance(node, (ast.List, ast.Set, ast.Dict, ast.Call))
        unhashable = isinstance(value, (list, dict, set, bytearray)) or getattr(type(value), "__hash__", 1) is None
        if name in static and ((value is not MISSING and unhashable) or (value is MISSING and literal)):
            index = names.index(name) if name in names else None
            how = f"static_argnums=({index},)" if index in options.static_argnums else f'static_argnames=("{name}",)'
            return name, node, how
    return None, None, None


def _hashable_form(line: Line, node: ast.expr) -> dict:
    """The same value written in a hashable form: ``[1, 2]`` -> ``(1, 2)``, ``jnp.array([1, 2])`` ->
    ``(1, 2)``, a dict -> Flax's ``FrozenDict`` (where Flax is installed); none where not known."""
    value = line.frame.lookup(node.id) if isinstance(node, ast.Name) else MISSING
    frozen = _frozen(line, node, value)
    if frozen is not None:
        return frozen
    arrayed = isinstance(node, ast.Call) and getattr(line.frame.resolve(node.func), "__name__", "") in _ARRAYS
    elements = node.args[0] if isinstance(node, ast.Call) and arrayed and node.args else node
    if isinstance(elements, ast.List) or (arrayed and isinstance(elements, ast.Tuple)):
        return {"hashable": _tuple([line.text(e) for e in elements.elts])}
    if isinstance(node, ast.Set):
        return {"hashable": "frozenset({" + ", ".join(line.text(e) for e in node.elts) + "})"}
    form = next((form for kind, form in _FORMS if isinstance(value, kind)), None)
    form = form or ("tuple({}.tolist())" if hasattr(value, "tolist") else None)
    return {"hashable": form.format(line.text(node))} if form else {}


def _frozen(line: Line, node: ast.expr, value: Any) -> dict | None:
    """A dict (written, or held by a name) as Flax's ``FrozenDict``, imported where the user has not;
    without Flax, none for a dict written (``None`` for a name: it may be written otherwise)."""
    try:
        from flax.core import FrozenDict
    except ImportError:
        return {} if isinstance(node, ast.Dict) else None
    if not (isinstance(node, ast.Dict) or isinstance(value, dict)):
        return None
    name = rewrites.alias(line.frame.frame.f_globals, FrozenDict, "FrozenDict")
    imports = line.statement() if line.frame.lookup(name) is not FrozenDict else None
    return {"kind": "frozen", "hashable": f"{name}({line.text(node)})", "imports": imports}


def _tuple(elements: list[str]) -> str:
    return "(" + ", ".join(elements) + ("," if len(elements) == 1 else "") + ")"


def unhashable_static(line: Line) -> dict | None:
    """The static parameter and the argument given for it, how JAX showed the value, and the
    argument in a hashable form (or the fix in words: ``kind`` ``dict`` or ``words``)."""
    detail = _UNHASHABLE_RE.search(line.message)
    type_name = detail.group("type").rsplit(".", 1)[-1].replace("ArrayImpl", "jax.Array") if detail else "value"
    shown = " ".join(detail.group("value").split()) if detail else ""
    call, callee = _jitted_callee(line)
    parameter, argument, how = _static_argument(line, call, callee)
    found = {"fname": donations.callee_name(call, callee), "parameter": parameter, "argument": argument,
             "type": type_name, "option": how, "holding": shown if argument is None else None}  # fmt: skip
    hashable = _hashable_form(line, argument) if argument is not None else {}
    if hashable and line.statement() is not None:
        return {**found, **hashable}
    numbers = re.findall(r"-?\d+(?:\.\d+)?", shown)
    example = _tuple(numbers) if numbers and len(numbers) <= 8 and shown.strip().startswith("[") else None
    return {**found, "kind": "dict" if type_name == "dict" else "words", "example": example}


_PIECES = {"what": ("{parameter}", "A static argument"), "how": " ({option})", "written": " ({argument})",
           "holding": " holding {holding!s}", "subject": ("{parameter}", "it"), "example": " such as `{example}`"}  # fmt: skip
_AS_DATA = ("If {subject} is data (numbers to compute with), not a setting, do not make it static: pass it as an "
            "ordinary argument, traced like the others.")  # fmt: skip
_FROZEN = ("Pass a frozen dict: `{hashable}` is hashable (while its values are), and reads like the dict to code that "
           "indexes it by key.")  # fmt: skip
_DICT = "Pass a hashable mapping instead of a dict, such as Flax's `flax.core.FrozenDict`."

UNHASHABLE_STATIC = Declared(
    "unhashable-static",
    "An unhashable value passed as a static argument",
    unhashable_static,
    raised=(ValueError, TypeError),
    messages=("Non-hashable static arguments are not supported",),
    order=10,
    explanation="{what} is a static argument of {fname}{how}: JAX compiles one version per static value and finds it "
    "again by the value's hash, so a static value must be hashable. Here it got a {type!s}{written}{holding}, which "
    "is not ({where}).",
    pieces=_PIECES,
    rewrite=(Replace("argument", "{hashable}"), InsertBefore("imports", "from flax.core import FrozenDict")),
    shown="statement",
    fix_note="Pass a tuple: `{hashable}` is hashable, and reads the same to code that indexes or iterates it.",
    alternatives=((_AS_DATA, ""),),
    kinds={
        "frozen": {"fix_note": _FROZEN},
        "dict": {"rewrite": (), "fix_note": _DICT},
        "words": {"rewrite": (), "fix_note": "Pass a tuple{example} (hashable) instead of a {type!s}."},
    },
    variable="parameter",
    function="fname",
)
