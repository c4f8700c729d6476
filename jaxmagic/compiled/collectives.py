"""The communication in an optimized program: every collective XLA runs, as facts per source line.

XLA's SPMD partitioner turns a sharded program into one program per device, and inserts the
communication it needs: all-reduces, all-gathers, reduce-scatters, all-to-alls and
collective-permutes. This module reads them from the optimized HLO text
(``jax.stages.Compiled.as_text()``): each one's kind, the user's source line behind it (through
``hlo_sources``), the devices it groups (mapped back to the axes of the ``jax.sharding.Mesh`` in
use), how the value lies on the devices before and after it, and the bytes it moves per device.

Bytes per device follow the usual bandwidth-optimal (ring) formulas, from the size ``R`` of the
instruction's result on one device and the group size ``n``: all-gather ``R·(n−1)/n`` (the parts
it lacks), reduce-scatter ``R·(n−1)`` (its operand, ``n·R``, less its own share), all-reduce
``2·R·(n−1)/n`` (a reduce-scatter then an all-gather), all-to-all ``R·(n−1)/n`` (all but its own
block), collective-permute ``R`` (the whole value goes to one other device).

A program on one device has none:

>>> import jax, jax.numpy as jnp
>>> find_collectives(jax.jit(lambda x: x * 2).trace(jnp.ones(4)).lower().compile().as_text())
[]
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from jaxmagic.compiled.collective_causes import EquationContext
from jaxmagic.compiled.hlo_sources import _opcode, instruction_lines, parse, result_shape
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, pick_user_frame, source_line

# The kinds, in the order a reader meets them: XLA's communication ops (an asynchronous ``-start``
# half counts as the op, its ``-done`` half not at all; ``collective_kind``).
KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
)
# How each kind's bytes per device are counted from its result on one device (R) and group size (n).
FORMULAS = {
    "all-reduce": "2·R·(n−1)/n",
    "all-gather": "R·(n−1)/n",
    "reduce-scatter": "R·(n−1)",
    "all-to-all": "R·(n−1)/n",
    "ragged-all-to-all": "R·(n−1)/n",
    "collective-permute": "R",
    "collective-broadcast": "R",
}
# JAX primitives that ask for communication themselves (inside shard_map / pmap).
REQUESTED = frozenset(
    {
        "psum",
        "psum_invariant",
        "psum2",
        "pmax",
        "pmin",
        "pmean",
        "all_gather",
        "all_gather_invariant",
        "ppermute",
        "pshuffle",
        "all_to_all",
        "ragged_all_to_all",
        "reduce_scatter",
        "psum_scatter",
        "pbroadcast",
    }
)
# JAX's own names for primitives the user calls by another name.
_AS_WRITTEN = {
    "psum_invariant": "psum",
    "psum2": "psum",
    "reduce_scatter": "psum_scatter",
    "all_gather_invariant": "all_gather",
}
# Primitives that sum (or otherwise reduce) over a dimension: split over devices, each holds a partial result.
REDUCING = frozenset(
    {"dot_general", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "conv_general_dilated", "argmax", "argmin"}
)
DTYPE_BYTES = {
    "pred": 1,
    "s8": 1,
    "u8": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
}


def collective_kind(opcode: str) -> str | None:
    """The collective an HLO opcode is, if any: ``all-gather-start`` -> ``all-gather``.

    >>> collective_kind("all-reduce-start"), collective_kind("all-reduce-done"), collective_kind("add")
    ('all-reduce', None, None)
    """
    if opcode.endswith("-done"):
        return None
    base = opcode.removesuffix("-start")
    return base if base in KINDS else None


_ARRAY_TYPE = re.compile(r"\b([a-z]\w*)\[([\d,]*)\]")
_DIMENSIONS = re.compile(r"\bdimensions=\{([\d,]*)\}")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_EXPLICIT_GROUPS = re.compile(r"replica_groups=\{((?:\{[\d,]*\},?)*)\}")
_IOTA_GROUPS = re.compile(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH_GROUPS = re.compile(
    r"replica_groups=mesh\[([^\]]*)\](?:, device_ids=\(\[([\d,]+)\](?:T\(([\d,]+)\))?\))? \{([^}]*)\}"
)
_PAIRS = re.compile(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")
_BODY = re.compile(r"\bbody=%?([\w.\-]+)")


@dataclass(frozen=True)
class Placement:
    """How a value lies on the devices on one side of a collective, as far as the collective
    itself says: ``state`` is ``split`` (``dimension`` split over ``axes``), ``whole`` (the same
    full value on every device of ``axes``), ``replicated`` (whole on every device, as a sharding
    asked for says: ``P()``), ``partial`` (each device of ``axes`` holds a partial
    result, to be combined), ``blocks`` (split into blocks, one per device of ``axes``) or
    ``moved`` (sent on to another device along ``axes``).

    >>> Placement("split", 0, ("data",))
    Placement(state='split', dimension=0, axes=('data',), also=())
    """

    state: str
    dimension: int | None
    axes: tuple[str, ...]
    also: tuple[tuple[int, tuple[str, ...]], ...] = ()  # more dimensions split: (dimension, axes)


def placement_of(entries: tuple | None, axes: tuple[str, ...]) -> Placement | None:
    """How a value with a sharding's spec ``entries`` (``collective_causes.spec_entries``) lies on
    the devices: split on its first split dimension (and ``also`` on the others), or ``whole`` on
    every device of ``axes`` (the collective's); ``None`` for no spec.

    >>> placement_of((("x",), None), ("x",)), placement_of((), ("x",)).state
    (Placement(state='split', dimension=0, axes=('x',), also=()), 'replicated')
    """
    if entries is None:
        return None
    split = [(dimension, entry) for dimension, entry in enumerate(entries) if entry]
    if not split:
        return Placement("replicated", None, axes)
    (dimension, first), rest = split[0], split[1:]
    return Placement("split", dimension, tuple(first), tuple((d, tuple(e)) for d, e in rest))


@dataclass(frozen=True)
class Collective:
    """One collective of the optimized program.

    ``kind`` (one of ``KINDS``), ``instruction`` (its HLO name), ``line`` (the user's
    ``SourceLine`` behind it; ``None`` where XLA kept no source), ``primitive`` (the JAX primitive
    XLA partitioned when it inserted it: ``dot_general``; or the ``jax.lax`` function that asked
    for it, ``psum``),
    ``bytes`` (moved per device each time it runs, by ``formula``), ``group_size`` (devices per
    group), ``axes`` (the mesh axes it runs over; empty where no mesh is known), ``groups`` (the
    device groups: positions in the program's device assignment), ``result`` (its result type on
    one device, ``f32[16,16]``), ``before`` / ``after`` (``Placement``), ``in_loop`` (it sits in a
    loop body: it runs every step), ``requested`` (the program asks for it: ``psum``,
    ``all_gather`` in ``shard_map``), ``operands`` ((name, sharding) of the inputs of the
    equation it was inserted for, where known), ``wanted`` ((``constraint``, sharding,
    where) or (``output``, sharding, output's name): the sharding asked for by a
    ``with_sharding_constraint`` on that equation's result, or by ``jax.jit(out_shardings=...)``
    for the output it is),
    ``mismatch`` (``partial`` when it sums the partial results of a reduction, such as a
    ``dot_general``, over a dimension split across devices; ``operands`` when those inputs, of one
    shape, are sharded differently, ``constraint`` / ``output`` when
    the sharding asked for differs from theirs, ``""`` otherwise), ``asked_at`` (the line of the
    user's code that asked for the sharding it makes: the ``jax.jit(..., out_shardings=...)``, the
    ``with_sharding_constraint``, the ``jax.lax`` call; ``None`` where none did).
    """

    kind: str
    instruction: str
    line: SourceLine | None
    primitive: str
    bytes: int
    group_size: int
    axes: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]
    result: str
    before: Placement
    after: Placement
    in_loop: bool = False
    requested: bool = False
    operands: tuple[tuple[str, str], ...] = ()
    wanted: tuple[str, str, str] | None = None
    mismatch: str = ""
    asked_at: SourceLine | None = None

    @property
    def formula(self) -> str:
        """How ``bytes`` is counted: ``R·(n−1)/n`` for an all-gather (R: its result on one device)."""
        return FORMULAS[self.kind]


@dataclass(frozen=True)
class MeshAxes:
    """The mesh a program runs on: ``names`` and ``shape`` of its axes, in order (device
    positions in the program's device assignment are the mesh's devices in row-major order).

    >>> MeshAxes(("data", "model"), (4, 2)).axes_of([(0, 1), (2, 3), (4, 5), (6, 7)])
    ('model',)
    """

    names: tuple[str, ...]
    shape: tuple[int, ...]

    def coordinates(self, position: int) -> tuple[int, ...]:
        coords, rest = [], position
        for size in reversed(self.shape):
            coords.append(rest % size)
            rest //= size
        return tuple(reversed(coords))

    def axes_of(self, groups: Sequence[Sequence[int]]) -> tuple[str, ...]:
        """The mesh axes whose devices ``groups`` gathers: exactly, where one set of axes makes
        those groups; else every axis along which some group's devices differ."""
        wanted = {frozenset(g) for g in groups}
        total = 1
        for size in self.shape:
            total *= size
        if not wanted or any(p >= total for g in wanted for p in g):
            return ()
        for count in range(1, len(self.names) + 1):
            for chosen in itertools.combinations(range(len(self.names)), count):
                if self._groups(chosen, total) == wanted:
                    return tuple(self.names[i] for i in chosen)
        return self.axes_between([p for g in groups for p in g])

    def axes_between(self, positions: Iterable[int]) -> tuple[str, ...]:
        """The axes along which the devices at ``positions`` differ."""
        coords = [self.coordinates(p) for p in positions]
        return tuple(name for i, name in enumerate(self.names) if len({c[i] for c in coords}) > 1)

    def _groups(self, chosen: tuple[int, ...], total: int) -> set[frozenset[int]]:
        by_rest: dict[tuple, set[int]] = {}
        for position in range(total):
            coords = self.coordinates(position)
            rest = tuple(c for i, c in enumerate(coords) if i not in chosen)
            by_rest.setdefault(rest, set()).add(position)
        return {frozenset(g) for g in by_rest.values()}


def find_collectives(
    hlo_text: str,
    *,
    mesh: MeshAxes | None = None,
    cell_namer: CellNamer = no_cells,
    equations: EquationContext | None = None,
) -> list[Collective]:
    """Every collective of the optimized module ``hlo_text``, in the order XLA prints them.

    ``mesh`` names the axes of the device groups; ``equations`` (from ``equation_context``) links
    each collective to the jaxpr equation it was inserted for, to name the values whose
    shardings it reconciles, and keeps each collective's line to a line of this call (``parse``).
    """
    instructions = parse(hlo_text, equations.jaxpr if equations is not None else None)
    partitions = _PARTITIONS.search(hlo_text)
    devices = int(partitions.group(1)) if partitions else 1
    loop_computations = _loop_computations(hlo_text, instructions)
    outputs = output_feeds(hlo_text)
    found = []
    for computation, text, matched in instruction_lines(hlo_text.splitlines()):
        name = matched.group(1)
        rest = text[matched.end() :]
        opcode = _opcode(rest)
        kind = collective_kind(opcode)
        if kind is None:
            continue
        found.append(
            _collective(
                kind,
                opcode,
                name,
                rest,
                instructions.get(name),
                devices,
                mesh,
                cell_namer,
                computation in loop_computations,
                equations,
                outputs.get(name),
            )
        )
    return found


def _collective(
    kind, opcode, name, rest, instruction, devices, mesh, cell_namer, in_loop, equations, output=None
) -> Collective:
    types = _result_types(rest)
    size, axes, groups = _extent(kind, rest, devices, mesh)
    frame = pick_user_frame(instruction.frames) if instruction is not None else None
    primitive = _primitive_in(rest)
    before, after = _placements(kind, _dimension(rest), axes)
    requested = primitive in REQUESTED
    link = None if requested else _link(equations, frame, primitive)
    if link is None and not requested and output is not None and equations is not None:
        link = equations.output_link(output)  # on the way to an output: its out_shardings asked for it
    mismatch = _mismatch(kind, primitive, requested, link)
    if link is not None and mismatch in ("output", "constraint"):  # the layouts asked for on either side
        before = placement_of(link.layouts[0], axes) or before
        after = placement_of(link.layouts[1], axes) or after
    line = source_line(frame[0], frame[1], frame[2], cell_namer=cell_namer) if frame else None
    return Collective(
        kind=kind,
        instruction=name,
        line=line,
        primitive=primitive,
        bytes=_moved(kind, _result_bytes(kind, opcode, types), size),
        group_size=size,
        axes=axes,
        groups=tuple(groups),
        result=_types_text(types, kind, opcode),
        before=before,
        after=after,
        in_loop=in_loop,
        requested=requested,
        operands=link.operands if link else (),
        wanted=link.wanted if link else None,
        mismatch=mismatch,
        asked_at=(link.asked_at if link is not None and link.asked_at is not None else line)
        if link or requested
        else line,
    )


_PLUMBING = frozenset(
    {"copy", "bitcast", "reshape", "transpose", "tuple", "get-tuple-element", "copy-start", "copy-done"}
)


def output_feeds(hlo_text: str) -> dict[str, int]:
    r"""The instructions of the entry computation whose result becomes one of the program's outputs
    unchanged but for where it lies (through copies, reshapes, tuples, an async op's ``-done``,
    other collectives), by output index.

    >>> hlo = "ENTRY %main (p: f32[2]) -> f32[8] {\n  %p = f32[2] parameter(0)\n  ROOT %ag = f32[8] all-gather(%p)\n}"
    >>> output_feeds(hlo)
    {'ag': 0, 'p': 0}
    >>> output_feeds("ENTRY %main (p: f32[2]) -> (s32[], f32[2]) {\n  %c = s32[] constant(0)\n"
    ...              "  ROOT %t = (s32[], f32[2]) tuple(%c, %p)\n}")
    {'c': 0, 'p': 1}
    """
    entry = _entry_name(hlo_text)
    block = {
        found.group(1): (text, found)
        for computation, text, found in instruction_lines(hlo_text.splitlines())
        if computation == entry
    }
    root = next((name for name, (text, _) in block.items() if text.lstrip().startswith("ROOT")), None)
    if root is None:
        return {}
    text, found = block[root]
    starts = list(enumerate(_operands(text, found))) if _opcode(text[found.end() :]) == "tuple" else [(0, root)]
    feeds: dict[str, int] = {}
    for index, name in starts:
        for _ in range(32):  # back through what only moves the value
            feeds[name] = index
            if name not in block:
                break
            text, found = block[name]
            opcode = _opcode(text[found.end() :])
            operands = _operands(text, found)
            xlas_own = opcode == "fusion" and "op_name=" not in text  # a layout copy XLA added, no equation's
            moves = opcode in _PLUMBING or opcode.endswith("-done") or collective_kind(opcode) is not None or xlas_own
            if not moves or not operands:
                break
            name = operands[0]
    return feeds


_ENTRY = re.compile(r"^ENTRY %?([\w.\-]+)", re.M)


def _entry_name(hlo_text: str) -> str:
    found = _ENTRY.search(hlo_text)
    return found.group(1) if found else ""


def _operands(text: str, found: re.Match) -> list[str]:
    """The operands an instruction line names, in order (before its attributes), after its result
    shape (a tuple's parentheses are no operand list)."""
    _, rest = result_shape(text[found.end() :])
    inside = rest[rest.find("(") + 1 :] if "(" in rest else ""
    inside = inside.split("),", 1)[0].split(")", 1)[0]
    return re.findall(r"%([\w.\-]+)", inside)


def _extent(kind: str, rest: str, devices: int, mesh) -> tuple[int, tuple[str, ...], tuple]:
    """``(group size, mesh axes, groups)`` of a collective: its device groups, or for a
    ``collective-permute`` its source-target pairs (the devices they name, at least 2)."""
    if kind == "collective-permute":
        pairs = _pairs(rest)
        axes = {a for pair in pairs for a in mesh.axes_between(pair)} if mesh else ()
        return len({p for pair in pairs for p in pair}) or 2, _in_mesh_order(axes, mesh), pairs
    groups = _groups(rest, devices)
    size = len(groups[0]) if groups else devices
    return size, (mesh.axes_of(groups) if mesh and groups else ()), groups


def _in_mesh_order(axes, mesh) -> tuple[str, ...]:
    return tuple(sorted(axes, key=mesh.names.index)) if axes else ()


def _primitive_in(rest: str) -> str:
    """The JAX primitive named in an instruction's ``op_name``, as the user wrote it (``""``: none).

    >>> _primitive_in('x, metadata={op_name="jit(f)/shard_map/psum_invariant"}')
    'psum'
    """
    op_name = _OP_NAME.search(rest)
    primitive = _primitive(op_name.group(1)) if op_name else ""
    return _AS_WRITTEN.get(primitive, primitive)


def _dimension(rest: str) -> int | None:
    """The first of an instruction's ``dimensions`` (``None``: it names none)."""
    dimensions = _DIMENSIONS.search(rest)
    return int(dimensions.group(1).split(",")[0]) if dimensions and dimensions.group(1) else None


def _link(equations: EquationContext | None, frame, primitive: str):
    """The collective's link to the program's equations at the user's line (``None``: none)."""
    return equations.link(frame, primitive) if equations is not None and frame else None


def _mismatch(kind: str, primitive: str, requested: bool, link) -> str:
    """``partial`` for the sum XLA adds after a reduction over a split dimension; else the link's."""
    if not requested and kind in ("all-reduce", "reduce-scatter") and primitive in REDUCING:
        return "partial"
    return link.mismatch if link else ""


def _moved(kind: str, result_bytes: int, n: int) -> int:
    """Bytes one device sends (or receives) for one run, by ``FORMULAS``.

    >>> _moved("all-gather", 1024, 4), _moved("all-reduce", 1024, 4), _moved("reduce-scatter", 256, 4)
    (768, 1536, 768)
    """
    if n <= 1 and kind != "collective-permute":
        return 0
    if kind == "all-reduce":
        return 2 * result_bytes * (n - 1) // n
    if kind == "reduce-scatter":
        return result_bytes * (n - 1)
    if kind in ("collective-permute", "collective-broadcast"):
        return result_bytes
    return result_bytes * (n - 1) // n


def _placements(kind: str, dimension: int | None, axes: tuple[str, ...]) -> tuple[Placement, Placement]:
    if kind == "all-gather":
        return Placement("split", dimension, axes), Placement("whole", dimension, axes)
    if kind == "all-reduce":
        return Placement("partial", None, axes), Placement("whole", None, axes)
    if kind == "reduce-scatter":
        return Placement("partial", None, axes), Placement("split", dimension, axes)
    if kind in ("all-to-all", "ragged-all-to-all"):
        return Placement("blocks", None, axes), Placement("split", dimension, axes)
    return Placement("moved", None, axes), Placement("moved", None, axes)


def _primitive(op_name: str) -> str:
    """The JAX primitive at the end of XLA's ``op_name``: ``jit(f)/shard_map/psum`` -> ``psum``.

    >>> _primitive("jit(f)/jit(main)/transpose(jvp(dot_general))"), _primitive("jit(body)/shard_map/psum_invariant")
    ('dot_general', 'psum_invariant')
    """
    last = op_name.rsplit("/", 1)[-1]
    while "(" in last and last.endswith(")"):
        last = last[last.index("(") + 1 : -1]
    return last


def _result_types(rest: str) -> list[tuple[str, tuple[int, ...]]]:
    """The array types of an instruction's result (one, or each of a tuple)."""
    shape_text = result_shape(rest)[0]
    return [(dtype, tuple(int(d) for d in dims.split(",") if d)) for dtype, dims in _ARRAY_TYPE.findall(shape_text)]


def _nbytes(array_type: tuple[str, tuple[int, ...]]) -> int:
    dtype, dims = array_type
    count = 1
    for d in dims:
        count *= d
    if dtype in ("s4", "u4"):
        return (count + 1) // 2
    return count * DTYPE_BYTES.get(dtype, 4)


def _result_bytes(kind: str, opcode: str, types: list) -> int:
    """The bytes of the collective's result on one device; an async ``-start`` holds its operand
    and result together: the result is the largest for an all-gather, the first otherwise."""
    if not types:
        return 0
    if opcode.endswith("-start") and len(types) > 1:
        sizes = [_nbytes(t) for t in types]
        return max(sizes) if kind == "all-gather" else sizes[0]
    return sum(_nbytes(t) for t in types)


def _types_text(types: list, kind: str, opcode: str) -> str:
    if opcode.endswith("-start") and len(types) > 1:
        types = [max(types, key=_nbytes)] if kind == "all-gather" else types[:1]
    texts = [f"{dtype}[{','.join(map(str, dims))}]" for dtype, dims in types]
    return texts[0] if len(texts) == 1 else f"({', '.join(texts)})"


def _groups(rest: str, devices: int) -> tuple[tuple[int, ...], ...]:
    """The device groups of ``replica_groups`` in any of XLA's three spellings; every device
    in one group where it gives none.

    >>> _groups("x, replica_groups={{0,1},{2,3}}, y", 4)
    ((0, 1), (2, 3))
    >>> _groups("x, replica_groups=[2,4]<=[4,2]T(1,0), y", 8)
    ((0, 2, 4, 6), (1, 3, 5, 7))
    >>> _groups("x, replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_1'}, y", 8)
    ((0, 1), (2, 3), (4, 5), (6, 7))
    """
    for spelling, groups_of in _GROUP_SPELLINGS:
        found = spelling.search(rest)
        if found:
            return groups_of(found, devices)
    return (tuple(range(devices)),) if "replica_groups" not in rest or "replica_groups={}" in rest else ()


def _explicit_groups(found: re.Match, devices: int) -> tuple[tuple[int, ...], ...]:
    """``replica_groups={{0,1},{2,3}}``; every device in one group for ``{{}}``."""
    groups = tuple(_ints(g) for g in re.findall(r"\{([\d,]*)\}", found.group(1)))
    return tuple(tuple(g) for g in groups if g) or (tuple(range(devices)),)


def _iota_groups(found: re.Match, devices: int) -> tuple[tuple[int, ...], ...]:
    """``replica_groups=[2,4]<=[4,2]T(1,0)``: 2 groups of 4, in the order of an iota reshaped and transposed."""
    count, size = int(found.group(1)), int(found.group(2))
    order = _iota(_ints(found.group(3)), _ints(found.group(4)) if found.group(4) else None)
    return tuple(tuple(order[g * size : (g + 1) * size]) for g in range(count))


def _mesh_groups(found: re.Match, devices: int) -> tuple[tuple[int, ...], ...]:
    """``replica_groups=mesh['a'=4,'b'=2] {'b'}``: devices that differ only along the chosen axes
    form a group (``()`` when a chosen axis is not the mesh's)."""
    axes = re.findall(r"'([^']+)'=(\d+)", found.group(1))
    names, sizes = [a for a, _ in axes], [int(s) for _, s in axes]
    chosen = re.findall(r"'([^']+)'", found.group(4))
    if any(c not in names for c in chosen):
        return ()
    layout = MeshAxes(tuple(names), tuple(sizes))
    total = math.prod(sizes)
    order = _iota(_ints(found.group(2)), _ints(found.group(3)) if found.group(3) else None) if found.group(2) else None
    picked = tuple(names.index(c) for c in chosen)
    by_rest: dict[tuple, list[int]] = {}
    for position in range(total):
        coords = layout.coordinates(position)
        device = order[position] if order is not None else position
        by_rest.setdefault(tuple(c for i, c in enumerate(coords) if i not in picked), []).append(device)
    return tuple(tuple(g) for g in by_rest.values())


# XLA's three spellings of ``replica_groups``, in the order they are tried, and how each is read.
_GROUP_SPELLINGS = (
    (_EXPLICIT_GROUPS, _explicit_groups),
    (_IOTA_GROUPS, _iota_groups),
    (_MESH_GROUPS, _mesh_groups),
)


def _pairs(rest: str) -> tuple[tuple[int, int], ...]:
    found = _PAIRS.search(rest)
    if not found:
        return ()
    return tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", found.group(1)))


def _ints(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d]


def _iota(dims: list[int], permutation: list[int] | None) -> list[int]:
    """``iota(prod(dims)).reshape(dims).transpose(permutation).flatten()``, in plain Python.

    >>> _iota([2, 3], [1, 0])
    [0, 3, 1, 4, 2, 5]
    """
    total = 1
    for d in dims:
        total *= d
    if not permutation:
        return list(range(total))
    permuted_dims = [dims[p] for p in permutation]
    out = []
    for index in range(total):
        coords, rest = [], index
        for size in reversed(permuted_dims):
            coords.append(rest % size)
            rest //= size
        coords.reverse()
        source = [0] * len(dims)
        for k, p in enumerate(permutation):
            source[p] = coords[k]
        position = 0
        for c, size in zip(source, dims, strict=True):
            position = position * size + c
        out.append(position)
    return out


def _loop_computations(hlo_text: str, instructions: dict) -> set[str]:
    """The computations a while loop runs every step: its body and what the body calls."""
    by_computation: dict[str, list] = {}
    for instruction in instructions.values():
        by_computation.setdefault(instruction.computation, []).append(instruction)
    found, queue = set(), _BODY.findall(hlo_text)
    while queue:
        name = queue.pop()
        if name in found:
            continue
        found.add(name)
        for instruction in by_computation.get(name, ()):
            queue.extend(instruction.calls)
    return found


def mesh_of(*shardings: Any) -> MeshAxes | None:
    """The mesh of the first ``NamedSharding`` among ``shardings`` (nested in tuples, lists and
    dicts), as ``MeshAxes``; ``None`` where there is none."""
    stack = list(shardings)
    while stack:
        item = stack.pop(0)
        if isinstance(item, (tuple, list)):
            stack[:0] = list(item)
        elif isinstance(item, dict):
            stack[:0] = list(item.values())
        else:
            mesh = getattr(item, "mesh", None)
            names = getattr(mesh, "axis_names", None)
            devices = getattr(mesh, "devices", None)
            if names and devices is not None and hasattr(devices, "shape"):
                return MeshAxes(tuple(str(n) for n in names), tuple(devices.shape))
    return None


def flat_shardings(tree: Any) -> list[Any]:
    """The leaves of a pytree of shardings (``None`` kept), in order."""
    import jax

    return jax.tree_util.tree_leaves(tree, is_leaf=lambda x: x is None)


def compiled_collectives(
    compiled,
    hlo_text: str,
    jaxpr=None,
    *,
    input_names=(),
    output_names=(),
    asked_out_shardings=None,
    asked_at: SourceLine | None = None,
    cell_namer: CellNamer = no_cells,
) -> list[Collective]:
    """``find_collectives`` for a ``jax.stages.Compiled``: the mesh from its input and output
    shardings, the inputs' names from ``input_names`` (the jaxpr's inputs, in order); the
    outputs' from ``output_names``, with ``asked_out_shardings`` (the ``out_shardings`` the
    user's ``jax.jit`` asked for, or ``None``) and ``asked_at`` (the line that asked for them)."""
    try:
        ins = flat_shardings(compiled.input_shardings)
        outs = flat_shardings(compiled.output_shardings)
    except Exception:  # a backend without shardings
        ins, outs = [], []
    mesh = mesh_of(ins, outs)
    equations = None
    if jaxpr is not None:
        equations = EquationContext(
            jaxpr,
            input_names=input_names,
            input_shardings=ins,
            output_names=output_names,
            output_shardings=flat_shardings(asked_out_shardings) if asked_out_shardings is not None else (),
            cell_namer=cell_namer,
            asked_at=asked_at,
        )
    return find_collectives(hlo_text, mesh=mesh, cell_namer=cell_namer, equations=equations)


def counts(collectives: Iterable[Collective]) -> dict[str, int]:
    """Kind -> how many, in ``KINDS`` order.

    >>> counts([])
    {}
    """
    found: dict[str, int] = {}
    for c in collectives:
        found[c.kind] = found.get(c.kind, 0) + 1
    return {kind: found[kind] for kind in KINDS if kind in found}


def communication_seconds(collectives: Iterable[Collective], kernels: Iterable[Any]) -> float:
    """Device seconds per call spent in ``collectives``, from a profile's ``kernels`` (each with
    ``name``, the HLO instruction, and ``seconds``; an async collective's ``-done`` half counts).

    >>> from types import SimpleNamespace as K
    >>> communication_seconds([], [K(name="all-gather", seconds=1.0)])
    0
    """
    names = {c.instruction for c in collectives}
    names |= {name.replace("-start", "-done") for name in names}
    return sum(k.seconds for k in kernels if k.name in names)


def costliest(collectives: Sequence[Collective]) -> Collective | None:
    """The collective that moves the most bytes per device (the first of equals)."""
    return max(collectives, key=lambda c: c.bytes, default=None)
