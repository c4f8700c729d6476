"""Which values a collective reconciles: the jaxpr equation XLA inserted it for, its inputs' shardings
and the sharding asked for downstream of it (a ``with_sharding_constraint``, a ``jax.jit``'s
``out_shardings``). ``jaxmagic.compiled.collectives`` links each collective it finds through here, by the
source line and primitive XLA kept on the instruction.

>>> import jax, jax.numpy as jnp
>>> def f(x, y):
...     return x + y
>>> context = EquationContext(jax.make_jaxpr(f)(jnp.ones(2), jnp.ones(2)), input_names=["x", "y"])
>>> [eqn.primitive.name for eqn in context.equations]
['add']
"""

from __future__ import annotations

import ast
import functools
import linecache
from dataclasses import dataclass
from typing import Any, Sequence

from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, source_line


@dataclass(frozen=True)
class Link:
    """What the jaxpr says about the equation a collective was inserted for (see ``Collective``):
    ``layouts`` the spec of the value before it and of the one asked for after it, each as its
    entries per dimension (``(('x',), None)``; ``None`` where not known); ``asked_at`` the line of
    the user's code that asked for that sharding."""

    operands: tuple[tuple[str, str], ...]
    wanted: tuple[str, str, str] | None
    mismatch: str
    layouts: tuple[tuple | None, tuple | None] = (None, None)
    asked_at: SourceLine | None = None


class EquationContext:
    """The top-level equations of a traced program with the shardings of its inputs and outputs,
    to link a collective (by source line and primitive) to the equation it was inserted for."""

    def __init__(
        self,
        jaxpr,
        *,
        input_names: Sequence[str] = (),
        input_shardings: Sequence[Any] = (),
        output_names: Sequence[str] = (),
        output_shardings: Sequence[Any] = (),
        cell_namer: CellNamer = no_cells,
        asked_at: SourceLine | None = None,
    ):
        from jaxmagic._jax_private import equation_user_line

        self._line_of = equation_user_line
        self.jaxpr = jaxpr  # the traced program, which keeps the HLO's lines to this call
        inner = jaxpr.jaxpr
        self.equations = list(inner.eqns)
        self.cell_namer = cell_namer
        self.asked_at = asked_at  # the jax.jit(..., out_shardings=...) line, where known
        self.known: dict[Any, tuple[str, str]] = {}
        self.specs: dict[Any, tuple] = {}  # value -> its sharding's spec entries, per dimension
        if len(input_names) == len(inner.invars) == len(input_shardings):
            for var, name, sharding in zip(inner.invars, input_names, input_shardings, strict=True):
                if sharding is not None:
                    self.known[var] = (name, sharding_text(sharding))
                    self._note_spec(var, sharding)
        self.output_specs: dict[Any, tuple] = {}  # output -> the spec entries asked for it
        self.outputs: dict[Any, tuple[str, str]] = {}  # output -> (name, sharding) the user asked for
        if len(output_shardings) == 1 and len(inner.outvars) > 1:
            output_shardings = list(output_shardings) * len(inner.outvars)  # one sharding for every output
        if len(output_names) == len(inner.outvars) == len(output_shardings):
            for var, name, sharding in zip(inner.outvars, output_names, output_shardings, strict=True):
                if sharding is not None and not _is_literal(var) and type(sharding).__name__ != "UnspecifiedValue":
                    self.outputs[var] = (name, sharding_text(sharding))
                    self._note_spec(var, sharding, output=True)
        self.constraints: dict[Any, tuple[str, str]] = {}  # value -> (where, sharding) of a constraint on it
        for eqn in self.equations:
            if eqn.primitive.name == "sharding_constraint" and "sharding" in eqn.params:
                where = self._where(eqn)
                spec = sharding_text(eqn.params["sharding"])
                self.constraints[eqn.invars[0]] = (where, spec)
                self.known.setdefault(eqn.outvars[0], (f"the value constrained at {where}", spec))
                self._note_spec(eqn.outvars[0], eqn.params["sharding"])

    def _note_spec(self, var, sharding, *, output: bool = False) -> None:
        entries = spec_entries(sharding)
        if entries is not None:
            (self.output_specs if output else self.specs)[var] = entries

    def _line(self, eqn) -> SourceLine | None:
        found = self._line_of(eqn)
        return source_line(found[0], found[1], "", cell_namer=self.cell_namer) if found else None

    def output_link(self, index: int) -> Link | None:
        """The ``Link`` for a collective XLA put on the way to the program's output ``index``, to
        give it the sharding the jit's ``out_shardings`` asked for (``None``: none asked)."""
        outvars = self.jaxpr.jaxpr.outvars
        if not 0 <= index < len(outvars) or outvars[index] not in self.outputs:
            return None
        out = outvars[index]
        name, spec = self.outputs[out]
        producer = next((eqn for eqn in self.equations if out in eqn.outvars), None)
        sources = [out] if producer is None else [v for v in producer.invars if not _is_literal(v)]
        present = [v for v in sources if v in self.known]
        before = next((self.specs[v] for v in present if v in self.specs), None)
        return Link(
            tuple(self.known[v] for v in present),
            ("output", spec, name),
            "output",
            (before, self.output_specs.get(out)),
            self.asked_at,
        )

    def _where(self, eqn) -> str:
        found = self._line_of(eqn)
        return source_line(found[0], found[1], "", cell_namer=self.cell_namer).label if found else "?"

    def link(self, frame: tuple, primitive: str) -> Link | None:
        """The ``Link`` for a collective made at ``frame`` (file, line, function) while
        partitioning ``primitive``; ``None`` where no top-level equation matches."""
        for eqn in self.equations:
            if eqn.primitive.name != primitive or self._line_of(eqn) != (frame[0], frame[1]):
                continue
            if primitive == "sharding_constraint":
                return self._constraint_link(eqn)
            return self._equation_link(eqn)
        return None

    def _constraint_link(self, eqn) -> Link:
        """A collective made by a ``with_sharding_constraint`` itself."""
        where, spec = self._where(eqn), sharding_text(eqn.params.get("sharding"))
        source = self.known.get(eqn.invars[0])
        layouts = (self.specs.get(eqn.invars[0]), spec_entries(eqn.params.get("sharding")))
        return Link((source,) if source else (), ("constraint", spec, where), "constraint", layouts, self._line(eqn))

    def _wanted(self, eqn) -> tuple[tuple[str, str, str] | None, tuple | None, SourceLine | None]:
        """``(wanted, its spec entries, the line that asked)`` for an equation's result: a
        constraint downstream of it, or the jit's ``out_shardings`` where it is an output."""
        for out in eqn.outvars:
            if out in self.constraints:
                where, spec = self.constraints[out]
                return ("constraint", spec, where), self.specs.get(self._constrained(out)), self._constraint_line(out)
            if out in self.outputs:
                name, spec = self.outputs[out]
                return ("output", spec, name), self.output_specs.get(out), self.asked_at
        return None, None, None

    def _equation_link(self, eqn) -> Link:
        """A collective XLA made while partitioning an equation: for its inputs' shardings, or for
        the sharding asked for its result."""
        present = [v for v in eqn.invars if not _is_literal(v) and v in self.known]
        operands = tuple(self.known[v] for v in present)
        wanted, after, asked_at = self._wanted(eqn)
        specs = {spec for _, spec in operands}
        shapes = {getattr(v.aval, "shape", None) for v in present}
        if len(specs) > 1 and len(shapes) == 1:  # same shape, laid out differently
            mismatch = "operands"
        elif wanted is not None and specs and wanted[1] not in specs:
            mismatch = wanted[0]
        else:
            mismatch = ""
        if mismatch not in ("constraint", "output"):
            return Link(operands, wanted, mismatch, (None, None), asked_at)
        before = next((self.specs[v] for v in present if v in self.specs), None)
        return Link(operands, wanted, mismatch, (before, after), asked_at)

    def _constrained(self, var):
        """The value a ``with_sharding_constraint`` on ``var`` makes (whose spec is the one asked)."""
        return next(
            (
                eqn.outvars[0]
                for eqn in self.equations
                if eqn.primitive.name == "sharding_constraint" and eqn.invars[0] is var
            ),
            None,
        )

    def _constraint_line(self, var) -> SourceLine | None:
        eqn = next(
            (e for e in self.equations if e.primitive.name == "sharding_constraint" and e.invars[0] is var), None
        )
        return self._line(eqn) if eqn is not None else None


def _is_literal(var) -> bool:
    return not hasattr(var, "count") and hasattr(var, "val")


def sharding_text(sharding) -> str:
    """A sharding as the user writes its spec: ``P('data', None)``; other shardings as JAX prints them.

    >>> from jax.sharding import PartitionSpec as P
    >>> sharding_text(P("data", None)), sharding_text(P(("data", "model"),))
    ("P('data', None)", "P(('data', 'model'),)")
    """
    from jax.sharding import PartitionSpec

    spec = getattr(sharding, "spec", sharding)
    if not isinstance(spec, PartitionSpec):
        return str(sharding)
    entries = tuple(spec)
    inside = ", ".join(repr(e) for e in entries)
    return f"P({inside},)" if len(entries) == 1 and isinstance(entries[0], tuple) else f"P({inside})"


def spec_entries(sharding) -> tuple | None:
    """A sharding's spec, one entry per dimension: the mesh axes that dimension is split over (a
    tuple of names), or ``None`` for a whole dimension; ``()`` for a value whole on every device.

    >>> from jax.sharding import PartitionSpec as P
    >>> spec_entries(P("x", None)), spec_entries(P(None, ("x", "y"))), spec_entries(P())
    ((('x',),), (None, ('x', 'y')), ())
    """
    from jax.sharding import PartitionSpec

    spec = getattr(sharding, "spec", sharding)
    if not isinstance(spec, PartitionSpec):
        return None
    entries = []
    for entry in spec:
        if entry is None:
            entries.append(None)
        else:
            entries.append(tuple(str(a) for a in entry) if isinstance(entry, (tuple, list)) else (str(entry),))
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


_SHARDING_WORDS = ("out_shardings", "in_shardings")


@dataclass(frozen=True)
class ShardingRequest:
    """What a ``jax.jit`` being compiled was asked for: its ``out_shardings`` (a pytree of
    shardings, or ``None``), and where the user's code asked (``at``: ``(file, line)``)."""

    out_shardings: Any = None
    at: tuple[str, int] | None = None

    def line(self, cell_namer: CellNamer = no_cells) -> SourceLine | None:
        return source_line(self.at[0], self.at[1], "", cell_namer=cell_namer) if self.at else None


def jax_leaves(tree) -> list:
    import jax

    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)


def sharding_request(fun, out_shardings, *, files: Sequence[str] = ()) -> ShardingRequest | None:
    """The ``ShardingRequest`` of a jitted ``fun`` given ``out_shardings`` (``None``: none given)."""
    if out_shardings is None:
        return None
    texts = [sharding_text(s) for s in jax_leaves(out_shardings)]
    found = sharding_request_line(fun, files=files, spec=texts[0] if len(set(texts)) == 1 else "")
    return ShardingRequest(out_shardings, (found.file, found.line) if found is not None else None)


def sharding_request_line(
    fun, *, files: Sequence[str] = (), spec: str = "", cell_namer: CellNamer = no_cells
) -> SourceLine | None:
    """The line of the user's code that gave ``fun``'s ``jax.jit`` its ``out_shardings`` /
    ``in_shardings``: a decorator of ``fun`` (``@functools.partial(jax.jit, out_shardings=...)``)
    or a call ``jax.jit(fun, out_shardings=...)`` in the file that defines ``fun`` or in ``files``
    (the notebook cells, the file that called it), the one whose keywords hold ``spec`` (the
    asked sharding as ``sharding_text`` writes it) where several jit the same function; ``None``
    where none is found. Read from the source, never run.

    >>> sharding_request_line(len) is None
    True
    """
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    for number in range(code.co_firstlineno, code.co_firstlineno + 32):
        text = linecache.getline(code.co_filename, number)
        if not text.lstrip().startswith("@"):
            break
        if any(word in text for word in _SHARDING_WORDS):
            return source_line(code.co_filename, number, "", cell_namer=cell_namer)
    wanted = _plain(spec) if spec else ""
    found = None
    for filename in dict.fromkeys((code.co_filename, *files)):
        for number, asked in _jit_call_lines(filename, "".join(linecache.getlines(filename)), fun.__name__):
            if found is None or (wanted and wanted in asked):  # the one asking for this very spec
                found = source_line(filename, number, "", cell_namer=cell_namer)
                if wanted and wanted in asked:
                    return found
    return found


def _plain(text: str) -> str:
    """Code compared as text: no spaces, one kind of quote."""
    return "".join(text.split()).replace('"', "'")


@functools.lru_cache(maxsize=256)
def _jit_call_lines(filename: str, text: str, name: str) -> tuple[tuple[int, str], ...]:
    """Each line of ``text`` calling a ``jit`` on ``name`` with a sharding keyword, with the text
    of what it asks (its sharding keywords, compared without spaces and with one kind of quote)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args or not any(k.arg in _SHARDING_WORDS for k in node.keywords):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = node.args[0]
        target = first.attr if isinstance(first, ast.Attribute) else first.id if isinstance(first, ast.Name) else ""
        if called.endswith("jit") and target == name:
            asked = [ast.unparse(k.value) for k in node.keywords if k.arg in _SHARDING_WORDS]
            found.append((node.lineno, _plain(" ".join(asked))))
    return tuple(sorted(found))
