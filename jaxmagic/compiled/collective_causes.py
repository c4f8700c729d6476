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

from dataclasses import dataclass
from typing import Any, Sequence

from jaxmagic.tracing.sources import CellNamer, no_cells, source_line


@dataclass(frozen=True)
class Link:
    """What the jaxpr says about the equation a collective was inserted for (see ``Collective``)."""

    operands: tuple[tuple[str, str], ...]
    wanted: tuple[str, str, str] | None
    mismatch: str


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
    ):
        from jaxmagic._jax_private import equation_user_line

        self._line_of = equation_user_line
        self.jaxpr = jaxpr  # the traced program, which keeps the HLO's lines to this call
        inner = jaxpr.jaxpr
        self.equations = list(inner.eqns)
        self.cell_namer = cell_namer
        self.known: dict[Any, tuple[str, str]] = {}
        if len(input_names) == len(inner.invars) == len(input_shardings):
            for var, name, sharding in zip(inner.invars, input_names, input_shardings, strict=True):
                if sharding is not None:
                    self.known[var] = (name, sharding_text(sharding))
        self.outputs: dict[Any, tuple[str, str]] = {}  # output -> (name, sharding) the user asked for
        if len(output_shardings) == 1 and len(inner.outvars) > 1:
            output_shardings = list(output_shardings) * len(inner.outvars)  # one sharding for every output
        if len(output_names) == len(inner.outvars) == len(output_shardings):
            for var, name, sharding in zip(inner.outvars, output_names, output_shardings, strict=True):
                if sharding is not None and not _is_literal(var) and type(sharding).__name__ != "UnspecifiedValue":
                    self.outputs[var] = (name, sharding_text(sharding))
        self.constraints: dict[Any, tuple[str, str]] = {}  # value -> (where, sharding) of a constraint on it
        for eqn in self.equations:
            if eqn.primitive.name == "sharding_constraint" and "sharding" in eqn.params:
                where = self._where(eqn)
                spec = sharding_text(eqn.params["sharding"])
                self.constraints[eqn.invars[0]] = (where, spec)
                self.known.setdefault(eqn.outvars[0], (f"the value constrained at {where}", spec))

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
                where, spec = self._where(eqn), sharding_text(eqn.params.get("sharding"))
                source = self.known.get(eqn.invars[0])
                return Link((source,) if source else (), ("constraint", spec, where), "constraint")
            present = [v for v in eqn.invars if not _is_literal(v) and v in self.known]
            operands = tuple(self.known[v] for v in present)
            wanted = None
            for out in eqn.outvars:
                if out in self.constraints:
                    where, spec = self.constraints[out]
                    wanted = ("constraint", spec, where)
                elif out in self.outputs:
                    name, spec = self.outputs[out]
                    wanted = ("output", spec, name)
            specs = {spec for _, spec in operands}
            shapes = {getattr(v.aval, "shape", None) for v in present}
            if len(specs) > 1 and len(shapes) == 1:  # same shape, laid out differently
                mismatch = "operands"
            elif wanted is not None and specs and wanted[1] not in specs:
                mismatch = wanted[0]
            else:
                mismatch = ""
            return Link(operands, wanted, mismatch)
        return None


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
