"""A jaxpr as a listing: one record per printed line, nested jaxprs as blocks, each equation with
the user's source line. Renderers turn the records into HTML or text; nothing here formats markup.

The listing is produced lazily and stops at ``limit`` equations, so showing the top of a
30,000-equation jaxpr costs what showing 300 equations costs.

>>> import jax, jax.numpy as jnp
>>> closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
>>> [r.text for r in listing(closed, with_source=False) if r.kind == "eqn"]
['b:f32[3] = sin a', 'c:f32[3] = mul b 2.0:f32[]']
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from jax.extend import core as jcore

from jaxmagic import _jax_private
from jaxmagic.tracing.sources import (
    CellNamer,
    SourceLine,
    no_cells,
    reaches_outermost_frame,
    source_line,
    traced_user_frame,
    user_traceback,
)
from jaxmagic.words import units

PARAM_TEXT_LIMIT = 80
# Parameters that say nothing a reader needs when they hold their default value.
_QUIET_PARAMS = {
    "in_shardings",
    "out_shardings",
    "in_layouts",
    "out_layouts",
    "donated_invars",
    "keep_unused",
    "inline",
    "out_sharding",
    "symbolic_zeros",
    "num_consts",
}
# Equations whose inner jaxpr JAX's printer names after the outer variables (``jit``; ``pjit`` on
# older JAX).
_NAMED_LIKE_OUTER = {"jit", "pjit"}
# Parameters that hold Python callables or machinery, never worth a reader's attention.
_HIDDEN_PARAMS = {
    "jvp_jaxpr_fun",
    "jvp_jaxpr_thunk",
    "jvp",
    "fwd_jaxpr_thunk",
    "bwd",
    "out_trees",
    "ctx_mesh",
    "compiler_options_kvs",
}


@dataclass(frozen=True, slots=True)
class Landmark:
    """What a nested jaxpr is to the equation holding it, as facts a renderer words.

    ``kind``: ``branch`` (a ``cond``: ``index`` 0 runs when the predicate is false, 1 when true,
    ``cases`` branches in all), ``loop_body`` (``scan`` or ``while``: ``carried`` values go from
    one step to the next, ``per_step`` inputs are slices of the scanned arrays), ``loop_condition``
    (a ``while``'s test), ``call`` (an inner ``jit``; ``name`` is its function). A branch's ``name``
    is the function it was traced from, where JAX recorded it.

    >>> import jax, jax.numpy as jnp
    >>> closed = jax.make_jaxpr(lambda x: jax.lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0)
    >>> [r.landmark.index for r in listing(closed) if r.kind == "open" and r.landmark]
    [0, 1]
    """

    kind: str
    index: int = 0
    cases: int = 0
    carried: int = 0
    per_step: int = 0
    name: str = ""


def landmark(primitive: str, params: dict, param_name: str) -> Landmark | None:
    """The ``Landmark`` of the nested jaxpr ``param_name`` (``branches[1]``, ``jaxpr``) of an equation."""
    if primitive == "cond" and param_name.startswith("branches["):
        index = int(param_name[len("branches[") : -1])
        name = _jax_private.jaxpr_function_name(params["branches"][index])
        return Landmark("branch", index=index, cases=len(params["branches"]), name=name)
    if primitive == "scan" and param_name == "jaxpr":
        body = getattr(params["jaxpr"], "jaxpr", params["jaxpr"])
        carried = params.get("num_carry", 0)
        return Landmark("loop_body", carried=carried, per_step=len(body.invars) - params.get("num_consts", 0) - carried)
    if primitive == "while":
        if param_name == "body_jaxpr":
            body = getattr(params["body_jaxpr"], "jaxpr", params["body_jaxpr"])
            return Landmark("loop_body", carried=len(body.outvars))
        if param_name == "cond_jaxpr":
            return Landmark("loop_condition")
    if primitive in _NAMED_LIKE_OUTER and param_name == "jaxpr":
        return Landmark("call", name=str(params.get("name", "")))
    return None


@dataclass(slots=True)
class Record:
    """One line of the listing.

    ``kind`` is ``open`` (a block starts: ``title`` and ``text`` hold its name and header),
    ``eqn`` (an equation), ``close`` (a block ends: ``text`` is its ``in (...) }`` line) or
    ``more`` (``hidden`` equations of this block are not shown). ``depth`` counts enclosing
    nested blocks (0: the top-level jaxpr). ``repeat`` and ``repeat_end`` enclose the copies of
    a run of equations that repeats the one just before it: see ``Repeat`` records below.
    """

    kind: str
    depth: int
    text: str = ""
    title: str = ""
    primitive: str = ""
    source: SourceLine | None = None
    n_eqns: int = 0  # for "open": equations in the block, nested ones included
    hidden: int = 0  # for "more"
    path: tuple = field(default=())  # index path of this equation, e.g. (3, "branches[1]", 0)
    landmark: Landmark | None = None  # for "open" of a nested block: what it is to its equation
    scope: str = ""  # for "eqn": the jax.named_scope names it was made under, "enc/dense"
    derivative: str = ""  # for "eqn" under jax.grad: "forward" (the jvp) or "backward" (its transpose)
    params: str = ""  # for "eqn": the ``[...]`` part of ``text`` (empty when it has none)
    opens_group: bool = False  # for "eqn": the first of a run made by one source line (or none), phase and scope
    group_eqns: int = 0  # for an "eqn" that opens a group: equations in the run, nested ones included
    times: int = 0  # for "repeat": copies of the block in all, the first (shown before it) included
    source_info: Any = field(default=None, repr=False)  # for "eqn": JAX's, read by ``traceback()``
    cell_namer: CellNamer | None = field(default=None, repr=False)

    def traceback(self) -> tuple[SourceLine, ...]:
        """For an equation: the ``SourceLine`` of each call that made it, outermost first (read
        when asked: only the notebook view shows it)."""
        if self.source_info is None:
            return ()
        return user_traceback(self.source_info, self.cell_namer or no_cells)

    def short_text(self, limit: int = 48) -> str:
        """``text`` with parameters longer than ``limit`` characters cut to ``[...…]``.

        >>> Record("eqn", 0, text="b:f32[3] = foo[k=1 long=xxxxxxxx] a", params="[k=1 long=xxxxxxxx]").short_text(10)
        'b:f32[3] = foo[k=1 lon…] a'
        """
        if len(self.params) <= limit:
            return self.text
        return self.text.replace(self.params, self.params[: limit - 2] + "…]", 1)


class Namer:
    """Names variables the way JAX prints them: a, b, ..., z, ba, bb, ...; one name per variable,
    and an inner ``jit``'s inputs and outputs named like the outer variables they stand for.

    >>> import jax, jax.numpy as jnp
    >>> inner = jax.jit(jnp.sin)
    >>> closed = jax.make_jaxpr(lambda x: inner(x) * 2)(jnp.ones(3))
    >>> [r.text for r in listing(closed, with_source=False) if r.kind == "eqn"]
    ['b:f32[3] = jit[name=sin] a', 'b:f32[3] = sin a', 'c:f32[3] = mul b 2.0:f32[]']
    """

    def __init__(self):
        self._names: dict[int, str] = {}
        self._fresh = 0

    def __call__(self, var) -> str:
        if isinstance(var, jcore.Literal):
            return f"{_literal_text(var.val)}:{_type_text(var.aval)}"
        if _jax_private.is_dropped_variable(var):
            return "_"
        key = id(var)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = _base26(self._fresh)
            self._fresh += 1
        return name

    def drop_unused(self, jaxpr) -> None:
        """Name ``_`` each output of ``jaxpr``'s own equations that nothing after it uses, as
        JAX's printer does for the jaxpr it prints (its nested jaxprs keep their names)."""
        used = {id(v) for v in jaxpr.outvars if not isinstance(v, jcore.Literal)}
        for eqn in reversed(jaxpr.eqns):
            for var in eqn.outvars:
                if id(var) not in used and id(var) not in self._names:
                    self._names[id(var)] = "_"
            used.update(id(v) for v in eqn.invars if not isinstance(v, jcore.Literal))

    def name_like(self, inner_vars, outer_vars) -> None:
        """Give each not-yet-named variable of ``inner_vars`` the name of the outer variable it
        stands for (literals and an outer variable already used once are skipped), as JAX's printer
        does for the jaxpr inside a ``jit`` equation."""
        if len(inner_vars) != len(outer_vars):
            return
        used: set[int] = set()
        for inner, outer in zip(inner_vars, outer_vars, strict=True):
            if isinstance(outer, jcore.Literal) or isinstance(inner, jcore.Literal):
                continue
            if id(outer) in used or id(inner) in self._names:
                continue
            used.add(id(outer))
            self._names[id(inner)] = self(outer)

    def binder(self, var) -> str:
        """``name:type`` as in a binding position."""
        if _jax_private.is_dropped_variable(var):
            return f"_:{_type_text(var.aval)}"
        return f"{self(var)}:{_type_text(var.aval)}"


def _base26(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = letters[n % 26]
    n //= 26
    while n:
        s = letters[n % 26] + s
        n //= 26
    return s


def _type_text(aval) -> str:
    return _by_identity(_aval_text, aval)  # a jaxpr's variables share a few aval objects


def _aval_text(aval) -> str:
    try:
        return aval.str_short(short_dtypes=True)
    except (AttributeError, TypeError):
        return str(aval)


def _literal_text(val) -> str:
    # JAX's typed scalars (``TypedInt(0, dtype=int32)``) and NumPy scalars print as plain numbers.
    if isinstance(val, bool):
        val = bool(val)
    elif isinstance(val, int):
        val = int(val)
    elif isinstance(val, float):
        val = float(val)
    elif isinstance(val, complex):
        val = complex(val)
    else:
        item = getattr(val, "item", None)
        if item is not None and getattr(val, "shape", None) == ():
            val = item()
    return units.shorten(val, PARAM_TEXT_LIMIT)


def sub_jaxprs(params: dict) -> list[tuple[str, jcore.ClosedJaxpr | jcore.Jaxpr]]:
    """``(name, jaxpr)`` for each jaxpr among an equation's parameters (``branches[1]``, ``jaxpr``),
    in the order JAX prints parameters (by name: a ``while``'s ``body_jaxpr`` before its ``cond_jaxpr``)."""
    found = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, (jcore.Jaxpr, jcore.ClosedJaxpr)):
            found.append((key, value))
        elif (
            isinstance(value, (tuple, list))
            and value
            and all(isinstance(v, (jcore.Jaxpr, jcore.ClosedJaxpr)) for v in value)
        ):
            found.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
    return found


def _is_quiet(key: str, value) -> bool:
    if value is None or key in _HIDDEN_PARAMS:
        return True
    if key not in _QUIET_PARAMS:
        return False
    if value is None or value is False or (isinstance(value, tuple) and not value) or callable(value):
        return True
    return bool(
        isinstance(value, tuple)
        and all(v is None or v is False or type(v).__name__ == "UnspecifiedValue" for v in value)
    )


def params_text(params: dict) -> str:
    """``[axes=(0,) name=f]``: the equation's parameters, jaxprs and defaults left out."""
    parts = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, (jcore.Jaxpr, jcore.ClosedJaxpr)):
            continue
        if (
            isinstance(value, (tuple, list))
            and value
            and all(isinstance(v, (jcore.Jaxpr, jcore.ClosedJaxpr)) for v in value)
        ):
            continue
        if _is_quiet(key, value):
            continue
        parts.append(f"{key}={units.shorten(value, PARAM_TEXT_LIMIT)}")
    return f"[{' '.join(parts)}]" if parts else ""


def all_equations(jaxpr, *, into: Callable[[jcore.JaxprEqn], bool] | None = None) -> Iterator[jcore.JaxprEqn]:
    """Every equation of a jaxpr in the order JAX prints them, each followed by those of the jaxprs
    nested in it (a ``cond``'s branches, a ``scan``'s body, an inner ``jit``): the one walk over
    nested jaxprs. ``into(eqn)`` says whether to go into an equation's nested jaxprs (default: all).

    >>> import jax, jax.numpy as jnp
    >>> inner = jax.jit(jnp.sin)
    >>> closed = jax.make_jaxpr(lambda x: inner(x) * 2)(jnp.ones(3))
    >>> [e.primitive.name for e in all_equations(closed)]
    ['jit', 'sin', 'mul']
    >>> [e.primitive.name for e in all_equations(closed, into=lambda e: False)]
    ['jit', 'mul']
    """
    pending = [iter(getattr(jaxpr, "jaxpr", jaxpr).eqns)]
    while pending:
        eqn = next(pending[-1], None)
        if eqn is None:
            pending.pop()
            continue
        yield eqn
        if into is None or into(eqn):
            # nested jaxprs are walked before the next equation, last pushed first
            pending.extend(iter(getattr(j, "jaxpr", j).eqns) for _, j in reversed(sub_jaxprs(eqn.params)))


def count_eqns(jaxpr) -> int:
    """Equations in a jaxpr, those of nested jaxprs included."""
    return sum(1 for _ in all_equations(jaxpr))


def primitive_counts(jaxpr) -> collections.Counter:
    """Primitive name -> number of equations using it, nested jaxprs included."""
    return collections.Counter(eqn.primitive.name for eqn in all_equations(jaxpr))


def traced_for_another_caller(frames: Sequence[tuple[str, int, str]], enclosing: tuple[str, int] | None) -> bool:
    """Whether a nested equation was traced for another caller, not by the code of the equation
    it is nested in, ``enclosing`` (file, line). JAX keeps the program of a library's jitted
    function (an optimizer's update, ``jnp`` helpers) from its first trace, with the frames of
    whoever called it first — another cell, another test — or none of the user's; such an
    equation was made, here, by the line that called the library.

    Where the frames (innermost first) are complete (``reaches_outermost_frame``), that is when
    none of them is the enclosing line. Where JAX stopped recording at the traced function (JAX
    0.10), the enclosing line is never among them: then it is when no frame is the user's own
    (a scan's body, a checkpointed or custom-derivative function keep their own lines).

    >>> from jaxmagic.tracing.sources import outermost_frame
    >>> root = outermost_frame()
    >>> traced_for_another_caller([("lib.py", 9, "norm"), ("cell.py", 4, "first"), (root[0], 1, root[1])], ("cell.py", 7))
    True
    >>> traced_for_another_caller([("lib.py", 9, "norm"), ("cell.py", 7, "second"), (root[0], 1, root[1])], ("cell.py", 7))
    False
    >>> traced_for_another_caller([("/home/me/model.py", 5, "body")], ("/home/me/model.py", 9))
    False
    >>> import jax
    >>> traced_for_another_caller([(jax.__file__, 9, "norm")], ("/home/me/model.py", 9))
    True
    """
    if enclosing is None or any(f[:2] == enclosing for f in frames):
        return False
    return reaches_outermost_frame(frames) or traced_user_frame(frames) is None


def line_made_here(source_info, enclosing: SourceLine | None, cell_namer: CellNamer = no_cells) -> SourceLine | None:
    """The user's line that made an equation in this call: its own (``user_source_line``), or,
    where it was traced for another caller, ``enclosing``, the line of the equation it is nested in."""
    frames = _jax_private.traceback_frames(source_info)
    if enclosing is not None and traced_for_another_caller(frames, (enclosing.file, enclosing.line)):
        return enclosing
    frame = traced_user_frame(frames)
    return source_line(*frame, cell_namer=cell_namer) if frame is not None else None


def equations_by_line(jaxpr, cell_namer: CellNamer = no_cells) -> dict[str, int]:
    """Source line label -> equations it made, nested jaxprs included, the most first; equations
    with no known line are under ``(no source line)``.

    An equation inside a nested jaxpr counts for its own line unless it was traced for another
    caller (``traced_for_another_caller``): then it counts for the line that called it here."""
    counts: collections.Counter = collections.Counter()
    # (equations, the line of the equation they are nested in)
    pending: list[tuple[Any, SourceLine | None]] = [(getattr(jaxpr, "jaxpr", jaxpr).eqns, None)]
    while pending:
        eqns, enclosing = pending.pop()
        for eqn in eqns:
            source = line_made_here(eqn.source_info, enclosing, cell_namer)
            counts[source.label if source is not None else NO_SOURCE_LINE] += 1
            pending.extend((getattr(sub, "jaxpr", sub).eqns, source) for _, sub in sub_jaxprs(eqn.params))
    return dict(counts.most_common())


NO_SOURCE_LINE = "(no source line)"


def listing(
    closed_jaxpr,
    *,
    limit: int | None = None,
    with_source: bool = True,
    cell_namer: CellNamer = no_cells,
    title: str = "jaxpr",
    namer: Namer | None = None,
) -> Iterator[Record]:
    """The records of a jaxpr's listing, at most ``limit`` equations (nested ones included).
    ``namer`` names the variables (pass one to ask it afterwards what a variable was called)."""
    namer = namer if namer is not None else Namer()
    budget = [limit if limit is not None else float("inf")]
    yield from _block(closed_jaxpr, title, 0, namer, budget, with_source, cell_namer, ())


def name_stack_facts(name_stack) -> tuple[str, str]:
    """``(scope, derivative)`` from an equation's name stack as JAX writes it: ``transpose(jvp(enc))``
    is ``("enc", "backward")``, ``jvp()`` is ``("", "forward")``, ``enc/dense`` is ``("enc/dense", "")``.

    >>> name_stack_facts("transpose(jvp(enc))"), name_stack_facts("jvp()"), name_stack_facts("enc/dense")
    (('enc', 'backward'), ('', 'forward'), ('enc/dense', ''))
    """
    text = str(name_stack)
    derivative = "backward" if text.startswith("transpose(") else "forward" if text.startswith("jvp(") else ""
    scopes = []
    for part in text.split("/"):
        while "(" in part and part.endswith(")"):  # a transform's wrapper: jvp(...), transpose(...)
            part = part[part.index("(") + 1 : -1]
        part = part.rstrip(")").split("(")[-1]
        if part:
            scopes.append(part)
    return "/".join(scopes), derivative


# (function, id of its argument) -> (argument, answer), for small arguments only (frames, name
# stacks, avals): a listing's parameters, which may hold jaxprs and their constants, are kept per listing
_ANSWERS: dict[tuple[Callable, int], tuple[Any, Any]] = {}
_ANSWERS_KEPT = 4096


def _by_identity(function: Callable[[Any], Any], argument: Any, kept: dict | None = None) -> Any:
    """``function(argument)``, worked out once per argument object (in ``kept``, else in a small
    table of the module's): the equations one line makes in a loop share their frames
    (``traceback_frames`` reads equal tracebacks once), their name stack, their avals and often
    their parameters, so a listing of 1,000 asks about a handful. The argument is kept with the
    answer, so its id is never another object's while the answer is kept.

    >>> _by_identity(len, "abc"), _by_identity(len, "abc")
    (3, 3)
    """
    kept = _ANSWERS if kept is None else kept
    key = (function, id(argument))
    found = kept.get(key)
    if found is not None and found[0] is argument:
        return found[1]
    if len(kept) >= _ANSWERS_KEPT:
        kept.clear()
    answer = function(argument)
    kept[key] = (argument, answer)
    return answer


class _Origins:
    """Where each equation of one block comes from — ``(source, scope, derivative)`` — worked out
    once per equation, whoever asks first (the listing, or the count of a run ahead of it)."""

    def __init__(
        self, eqns, with_source: bool, cell_namer: CellNamer, enclosing: tuple | None = None, params_seen=None
    ):
        self.eqns, self.with_source, self.cell_namer = eqns, with_source, cell_namer
        self.params_seen = {} if params_seen is None else params_seen  # one listing's, by identity
        self.enclosing = enclosing  # the group of the equation these are nested in, if any
        self._groups: dict[int, tuple | None] = {}
        self.repeat_keys: dict[int, tuple] = {}  # read by ``find_repeat``

    def params_text(self, eqn) -> str:
        """``params_text`` of an equation, made once per parameter dict of the listing (a repeat's
        key reads it too)."""
        return _by_identity(params_text, eqn.params, self.params_seen)

    def __getitem__(self, index: int) -> tuple:
        """``(source, scope, derivative)`` of a shown equation (its ``SourceLine`` with the text)."""
        group = self.group(index)
        if group is None:
            return None, *name_stack_facts(getattr(self.eqns[index].source_info, "name_stack", ""))
        file, line, function, scope, derivative = group
        return source_line(file, line, function, self.cell_namer), scope, derivative

    def group(self, index: int):
        """The run an equation belongs to: its source file, line and function, scope and phase
        (``None``: no line of the user's) — without reading the line's text."""
        if index not in self._groups:
            info = self.eqns[index].source_info
            frames = _jax_private.traceback_frames(info) if self.with_source else ()
            frame = _by_identity(traced_user_frame, frames)
            enclosing = self.enclosing
            if enclosing is not None and traced_for_another_caller(frames, enclosing[:2]):
                frame = enclosing[:3]  # this call's line made it
            self._groups[index] = (
                (*frame, *_by_identity(name_stack_facts, getattr(info, "name_stack", "")))
                if frame is not None
                else None
            )
        return self._groups[index]

    def run_length(self, start: int) -> int:
        """Equations (nested ones included) in the run from ``start`` that one source line made in
        one phase and scope."""
        group, total = self.group(start), 0
        for index in range(start, len(self.eqns)):
            if self.group(index) != group:
                break
            total += 1 + sum(count_eqns(j) for _, j in sub_jaxprs(self.eqns[index].params))
        return total


MAX_NAMES_LISTED = 64  # variables written out on one line of the listing; the rest are counted


def folded(items: list[str], separator: str, limit: int = MAX_NAMES_LISTED) -> str:
    """``items`` joined, the ones past ``limit`` folded into a count (a call with 10,000 inputs
    stays one readable line).

    >>> folded(["a", "b", "c"], ", "), folded(list("abcdef"), " ", limit=2)
    ('a, b, c', 'a b … 4 more')
    """
    if len(items) <= limit:
        return separator.join(items)
    return separator.join(items[:limit]) + f"{separator}… {len(items) - limit} more"


def _block(
    jaxpr, title, depth, namer, budget, with_source, cell_namer, path, mark=None, enclosing=None, seen=None
) -> Iterator[Record]:
    seen = {} if seen is None else seen  # the listing's parameters read once per dict (``_by_identity``)
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    if depth == 0:
        namer.drop_unused(inner)
    consts = folded([namer.binder(v) for v in inner.constvars], " ")
    invars = folded([namer.binder(v) for v in inner.invars], " ")
    header = f"{{ lambda {consts}; {invars}. let" if consts else f"{{ lambda ; {invars}. let"
    yield Record("open", depth, text=header, title=title, n_eqns=count_eqns(inner), path=path, landmark=mark)
    origins = _Origins(inner.eqns, with_source, cell_namer, enclosing, seen)
    walk = _Walk(inner.eqns, depth, namer, budget, origins, path)
    for index, eqn in enumerate(inner.eqns):
        yield from walk.repeats(index)
        if budget[0] <= 0:
            yield from walk.the_rest_hidden(index)
            break
        budget[0] -= 1
        yield walk.equation(index, eqn, with_source, cell_namer)
        for name, sub in sub_jaxprs(eqn.params):
            mark = landmark(eqn.primitive.name, eqn.params, name)
            yield from _block(
                sub, name, depth + 1, namer, budget, with_source, cell_namer, path + (index, name), mark,
                origins.group(index), seen,
            )  # fmt: skip
    yield from walk.end_repeat()
    outs = folded([namer(v) for v in inner.outvars], ", ")
    yield Record("close", depth, text=f"in ({outs},) }}" if len(inner.outvars) == 1 else f"in ({outs}) }}", path=path)


class _Walk:
    """Where the listing of one jaxpr's equations stands: the repeat being folded (``folding``, its
    record; ``repeat_ends``, the index past its last copy; ``inside``, shown and not yet closed),
    and the run of equations of one source line the last equation belonged to."""

    def __init__(self, eqns, depth: int, namer, budget: list[int], origins: _Origins, path: tuple):
        self.eqns, self.depth, self.namer, self.budget = eqns, depth, namer, budget
        self.origins, self.path = origins, path
        self.repeat_ends, self.folding, self.inside = -1, None, False
        self.previous_group = None

    def repeats(self, index: int) -> Iterator[Record]:
        """The records of repeats at ``index``: the end of the one folding, the start of the next."""
        if index == self.repeat_ends:
            yield from self.end_repeat()
        if self.budget[0] <= 0:
            return
        if index > self.repeat_ends and self.origins.group(index) is not None:
            self._look_for_repeat(index)
        if self.folding is not None and self.folding.path[-1] == index:
            self.inside = True
            yield self.folding

    def _look_for_repeat(self, index: int) -> None:
        found = find_repeat(self.eqns, index, self.origins)
        if found is not None:
            period, times = found
            self.repeat_ends = index + period * times
            self.folding = _repeat_record(self.eqns, index, period, times, self.depth, self.origins, self.path)

    def end_repeat(self) -> Iterator[Record]:
        """Closes the repeat shown, if one is open."""
        if self.inside:
            self.inside = False
            yield Record("repeat_end", self.depth, path=self.path)

    def the_rest_hidden(self, index: int) -> Iterator[Record]:
        """Past the budget: how many equations (nested ones included) from ``index`` are not shown."""
        yield from self.end_repeat()
        hidden = sum(1 + sum(count_eqns(j) for _, j in sub_jaxprs(e.params)) for e in self.eqns[index:])
        text = f"… {hidden} more equation{'s' * (hidden != 1)}"
        yield Record("more", self.depth, text=text, hidden=hidden, path=self.path)

    def equation(self, index: int, eqn, with_source: bool, cell_namer) -> Record:
        """The record of one equation, as JAX prints it, with the user's line that made it."""
        namer = self.namer
        if eqn.primitive.name in _NAMED_LIKE_OUTER:
            body = getattr(eqn.params["jaxpr"], "jaxpr", eqn.params["jaxpr"])
            namer.name_like(body.invars, eqn.invars)
            namer.name_like(body.outvars, eqn.outvars)
        outs = folded([namer.binder(v) for v in eqn.outvars], " ")
        ins = folded([namer(v) for v in eqn.invars], " ")
        params = self.origins.params_text(eqn)
        # An equation with no outputs (``debug_print``, ``debug_callback``) has no ``=``, as JAX prints it.
        text = f"{outs + ' = ' if outs else ''}{eqn.primitive.name}{params} {ins}".rstrip()
        source, scope, derivative = self.origins[index]
        group = self.origins.group(index)
        # A run no line of the user's made opens too, after one that a line did: never shown under it
        opens = group != self.previous_group
        self.previous_group = group
        return Record(
            "eqn",
            self.depth,
            text=text,
            primitive=eqn.primitive.name,
            source=source,
            path=self.path + (index,),
            scope=scope,
            derivative=derivative,
            params=params,
            source_info=eqn.source_info if with_source else None,
            cell_namer=cell_namer,
            opens_group=opens,
            group_eqns=self.origins.run_length(index) if opens else 0,
        )


MIN_REPEATS = 3  # copies of a block from which the listing folds all but the first
MAX_REPEAT_PERIOD = 200  # equations of the longest block looked for


def _repeat_key(eqn, origins: _Origins, index: int) -> tuple:
    """What two equations share when they are copies of one another: the source line, scope and
    phase that made them, the primitive, its parameters, its constants and the result types."""
    return (
        origins.group(index),
        eqn.primitive.name,
        origins.params_text(eqn),
        tuple(_literal_text(v.val) if isinstance(v, jcore.Literal) else "" for v in eqn.invars),
        tuple(_type_text(v.aval) for v in eqn.outvars),
    )


def find_repeat(eqns, start: int, origins: _Origins) -> tuple[int, int] | None:
    """``(period, times)`` when the equations from ``start`` are ``times`` (at least ``MIN_REPEATS``)
    identical copies of a block of ``period`` equations — the same primitives with the same
    parameters, made by the same source lines, as a Python loop over layers makes them; else ``None``.

    >>> import jax, jax.numpy as jnp
    >>> def deep(x):
    ...     for _ in range(4):
    ...         x = jnp.tanh(x * 2.0)
    ...     return x
    >>> closed = jax.make_jaxpr(deep)(jnp.ones(3))
    >>> find_repeat(closed.jaxpr.eqns, 0, _Origins(closed.jaxpr.eqns, True, no_cells))
    (2, 4)
    """
    keys = origins.repeat_keys

    def key(i: int) -> tuple:
        if i not in keys:
            keys[i] = _repeat_key(eqns[i], origins, i)
        return keys[i]

    best = None
    end = min(len(eqns), start + MAX_REPEAT_PERIOD + 1)
    candidates = [j for j in range(start + 1, end) if key(j) == key(start)][:3]
    for period in (j - start for j in candidates):
        times = 1
        while start + (times + 1) * period <= len(eqns) and all(
            key(start + times * period + k) == key(start + k) for k in range(period)
        ):
            times += 1
        if times >= MIN_REPEATS and (best is None or times * period > best[0] * best[1]):
            best = (period, times)
    return best


def _repeat_record(eqns, start: int, period: int, times: int, depth: int, origins: _Origins, path: tuple) -> Record:
    """The first copy's equations are listed as usual; this ``repeat`` record stands before the
    second: the block's size, its copies, and its first source line (``title``: the function it
    ran in, when the block spans several lines)."""
    block = eqns[start : start + period]
    each = sum(1 + sum(count_eqns(j) for _, j in sub_jaxprs(e.params)) for e in block)
    spans = len({origins.group(i) for i in range(start, start + period)}) > 1
    source = origins[start][0]
    title = source.function if spans and source is not None else ""
    record = Record("repeat", depth, n_eqns=each, hidden=each * (times - 1), times=times, source=source)
    record.title, record.path = title, path + (start + period,)
    return record
