"""Which of the user's source lines each instruction of XLA's optimized HLO came from.

XLA keeps JAX's stack frames on every instruction: as a stack-frame table referenced by
``stack_frame_id`` (JAX 0.9 and later), or as ``source_file`` / ``source_line`` on the instruction
(before). A fusion is one kernel; its lines are those of every instruction inside it.

Every reader takes an instruction's line from ``parse``, which, given the traced jaxpr, keeps it to a
line of this call (``CallSites``): JAX keeps a library's jitted program from its first trace, and
XLA's metadata with it, so a nested call's instructions may carry the line of whoever called the
library first.

>>> import jax, jax.numpy as jnp
>>> def f(x):
...     y = jnp.sin(x)
...     return jnp.cos(y) * 2
>>> hlo = jax.jit(f).trace(jnp.ones(8)).lower().compile().as_text()
>>> sources = kernel_lines(hlo)
>>> sorted({line.line for lines in sources.values() for line in lines}) == [2, 3]
True
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from jaxmagic import _jax_private
from jaxmagic.tracing.sources import CellNamer, SourceLine, no_cells, source_line, traced_user_frame

FramePicker = Callable[[Iterable[tuple[str, int, str]]], "tuple[str, int, str] | None"]

STACK_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_NUMBERED_STRING = re.compile(r'^(\d+) "(.*)"$')
_FILE_LOCATION = re.compile(r"^(\d+) \{file_name_id=(\d+) function_name_id=(\d+) line=(\d+)")
_STACK_FRAME = re.compile(r"^(\d+) \{file_location_id=(\d+) parent_frame_id=(\d+)")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = ")
_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition)=%?([\w.\-]+)|\bbranch_computations=\{([^}]*)\}")
_STACK_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_OPERAND = re.compile(r"%([\w.\-]+)")
_SOURCE = re.compile(r'source_file="((?:[^"\\]|\\.)*)" source_line=(\d+)')
_OP_NAME = re.compile(r'\bop_name="((?:[^"\\]|\\.)*)"')
_MODULE_NAME = re.compile(r"^HloModule ([\w.\-]+)")
_JIT_SCOPE = re.compile(r"(?<![\w])p?jit\(([^()/]+)\)")


@dataclass(frozen=True)
class HloInstruction:
    """One instruction of the optimized module: its computation, and the computations it calls."""

    name: str
    computation: str
    calls: tuple[str, ...]
    frames: tuple[tuple[str, int, str], ...]  # JAX's stack for it, innermost first
    opcode: str = ""
    op_name: str = ""  # its name-stack path: ``jit(f)/jit(norm)/mul``
    shape: str = ""  # its result's shape: ``f32[600,600]{1,0}``, ``(f32[], s32[4])``
    operands: tuple[str, ...] = ()  # the instructions whose results it reads, in order
    attributes: str = ""  # what follows its operands: ``lhs_contracting_dims={1}, metadata={...}``
    fused: tuple[str, ...] = ()  # a fusion timed as its own instruction (no source inside): what it calls


@dataclass
class _NestedCall:
    """One call equation of the traced jaxpr that the HLO names by a ``jit(name)`` scope: the line
    of this call that made it, whether the program it calls was traced for another caller, and
    the lines its equations were placed on here."""

    line: tuple[str, int, str] | None
    stale: bool = False
    lines: set[tuple[str, int]] = field(default_factory=set)


def _scope_name(name: str) -> str:
    """A call's own name, without the transforms that wrapped it: ``transpose(jvp(norm))`` -> ``norm``."""
    return str(name).split("(")[-1].rstrip(")")


def _has_path(op_name: str) -> bool:
    """Whether an op name carries its name-stack path (``jit(f)/mul``), not only a bare name."""
    return "/" in op_name or op_name.startswith(("jit(", "pjit("))


class CallSites:
    """The lines of THIS call that made each nested call of a traced program, for the HLO's
    instructions: ``line_of(op_name, frames)`` is an instruction's frames kept to this call.

    An instruction nested in a call (its ``op_name`` names the scope, ``jit(second)/jit(norm)/mul``)
    whose program was traced for another caller (``traced_for_another_caller``) keeps its own line
    only where the call's equations are placed on it here; otherwise it takes the line that made the
    call here — or none, where the same scope was called from several lines.

    >>> import jax, jax.numpy as jnp
    >>> norm = jax.jit(lambda v: jnp.sqrt(v @ v))
    >>> sites = CallSites(jax.make_jaxpr(lambda x: norm(x) * 2)(jnp.ones(3)))
    >>> sorted(sites.calls)
    [('<lambda>',)]
    >>> sites.line_of("jit(f)/mul", (("here.py", 9, "f"),))  # in no nested call: its own line
    (('here.py', 9, 'f'),)
    """

    def __init__(self, jaxpr: Any):
        from jaxmagic.tracing.listing import sub_jaxprs, traced_for_another_caller  # JAX's: not for a trace read alone

        self.jaxpr = jaxpr
        self._behind_recorded: dict[tuple, set[tuple[str, int, str]]] | None = None
        self.calls: dict[tuple[str, ...], list[_NestedCall]] = {}
        self.lines: set[tuple[str, int]] = set()  # every line of this call that made an equation
        # (equations, the enclosing equation's frame, the scope path, the calls they are inside)
        pending: list[tuple[Any, Any, tuple[str, ...], tuple[_NestedCall, ...]]] = [
            (getattr(jaxpr, "jaxpr", jaxpr).eqns, None, (), ())
        ]
        while pending:
            eqns, enclosing, path, inside = pending.pop()
            for eqn in eqns:
                frames = _jax_private.traceback_frames(eqn.source_info)
                frame = traced_user_frame(frames)
                if enclosing is not None and traced_for_another_caller(frames, enclosing[:2]):
                    frame = enclosing  # this call's line made it
                    for call in inside[-1:]:
                        call.stale = True
                if frame is not None:
                    self.lines.add(frame[:2])
                for call in inside:
                    if frame is not None:
                        call.lines.add(frame[:2])
                inner_path, inner_inside = path, inside
                if eqn.primitive.name in ("pjit", "jit") and "name" in eqn.params:
                    inner_path = path + (_scope_name(eqn.params["name"]),)
                    call = _NestedCall(frame)
                    if frame is not None:
                        call.lines.add(frame[:2])
                    self.calls.setdefault(inner_path, []).append(call)
                    inner_inside = inside + (call,)
                for _, sub in sub_jaxprs(eqn.params):
                    pending.append((getattr(sub, "jaxpr", sub).eqns, frame, inner_path, inner_inside))

    def user_line_behind(self, recorded: tuple[str, int, str], shape: str = "") -> tuple[str, int, str] | None:
        """The user's line behind the one frame XLA kept for an instruction (JAX before 0.9 keeps
        only the innermost frame that is not JAX's own: a library's line, where the user called the
        library): the user's line of the equations JAX placed on that frame, told apart by the
        instruction's result ``shape`` (``f32[4,8]``) where several lines reached it; ``None`` where
        they cannot be told apart, or none did."""
        if self._behind_recorded is None:
            self._behind_recorded = _user_lines_by_recorded_frame(self.jaxpr)
        for key in ((*recorded[:2], shape.split("{")[0]), recorded[:2]):
            found = self._behind_recorded.get(key, set())
            if len(found) == 1:
                return next(iter(found))
        return None

    def _scope(self, op_name: str) -> list[_NestedCall]:
        """The calls an op name's scope may be: the deepest of its ``jit(name)`` scopes found."""
        names = [_scope_name(n) for n in _JIT_SCOPE.findall(op_name)]
        if op_name.startswith(("jit(", "pjit(")):
            names = names[1:]  # the traced function itself
        for depth in range(len(names), 0, -1):
            if tuple(names[:depth]) in self.calls:
                return self.calls[tuple(names[:depth])]
        return []

    def _lowered_here(self, frames: tuple, whole_stack: bool) -> tuple:
        """The frames of a call JAX made while lowering (a scan's slicing, ``jit(dynamic_index_in_dim)``),
        traced first for another caller, whose innermost frames are that caller's: from the first
        line of this call on the stack, which made it here; none where the stack is not whole."""
        here = next((i for i, f in enumerate(frames) if f[:2] in self.lines), None) if whole_stack else None
        return frames[here:] if here is not None else ()

    def line_of(self, op_name: str, frames: tuple, whole_stack: bool = True) -> tuple:
        """An instruction's frames, kept to this call: its own; the line that made its call here;
        or none (``()``) where that call cannot be told apart from another of the same scope.
        ``whole_stack``: ``frames`` are the instruction's whole stack (JAX 0.9 and later), not only
        its innermost frame, so a stack through a line that made the call here was made for it."""
        calls = self._scope(op_name)
        own = traced_user_frame(frames)
        if not calls and len(_JIT_SCOPE.findall(op_name)) > 1 and own is not None and own[:2] not in self.lines:
            return self._lowered_here(frames, whole_stack)
        if not any(call.stale for call in calls):
            return frames
        if whole_stack and any(call.line is not None and f[:2] == call.line[:2] for call in calls for f in frames):
            return frames  # traced for the call here
        lines = {call.line for call in calls}
        line = lines.pop() if len(lines) == 1 else None
        if line is None:
            return ()  # the same library function called from several lines: no line, not a wrong one
        if own is not None and any(own[:2] in call.lines for call in calls):
            return frames  # a line the call's equations are on here
        return (line,)


def _user_lines_by_recorded_frame(jaxpr: Any) -> dict[tuple, set[tuple[str, int, str]]]:
    """For each frame JAX records as an equation's location (``equation_user_line``), the lines of
    the user's code that made equations placed there, by ``(file, line)`` and by ``(file, line,
    result shape)``; an equation of a nested call with no line of its own takes the line that made
    the call."""
    from jaxmagic.tracing.listing import sub_jaxprs

    found: dict[tuple, set[tuple[str, int, str]]] = {}
    pending: list[tuple[Any, Any]] = [(getattr(jaxpr, "jaxpr", jaxpr).eqns, None)]
    while pending:
        eqns, enclosing = pending.pop()
        for eqn in eqns:
            frame = traced_user_frame(_jax_private.traceback_frames(eqn.source_info)) or enclosing
            recorded = _jax_private.equation_user_line(eqn)
            if recorded is not None and frame is not None:
                found.setdefault(recorded, set()).add(frame)
                for shape in {_short_type(v.aval) for v in eqn.outvars}:
                    found.setdefault((*recorded, shape), set()).add(frame)
            pending.extend((getattr(sub, "jaxpr", sub).eqns, frame) for _, sub in sub_jaxprs(eqn.params))
    return found


def _short_type(aval: Any) -> str:
    """An abstract value as XLA writes a result's type, without its layout: ``f32[4,8]``."""
    return aval.str_short(short_dtypes=True) if hasattr(aval, "str_short") else ""


def _through_libraries(instructions: dict[str, HloInstruction], sites: CallSites) -> None:
    """Give an instruction whose one recorded frame is a library's the user's line behind it
    (``CallSites.user_line_behind``), as the outer frame JAX 0.9 and later record themselves."""
    for name, instruction in list(instructions.items()):
        if len(instruction.frames) != 1 or traced_user_frame(instruction.frames) is not None:
            continue
        user = sites.user_line_behind(instruction.frames[0], instruction.shape)
        if user is not None:
            instructions[name] = dataclasses.replace(instruction, frames=(*instruction.frames, user))


def _call_sites(jaxpr: Any) -> CallSites | None:
    if jaxpr is None or isinstance(jaxpr, CallSites):
        return jaxpr
    return CallSites(jaxpr)


# Instructions that apply a small computation of the user's (an adder, a comparator) to their
# operands: one XLA made without a source (a pass it split off a reduction) takes that computation's.
_APPLIES = frozenset({"reduce", "reduce-window", "scatter", "select-and-scatter", "sort", "map"})


def parse(hlo_text: str, jaxpr: Any = None, before: str = "") -> dict[str, HloInstruction]:
    """Every instruction of ``hlo_text`` by name. An instruction XLA left without a source (a dot
    it rewrote, a layout copy) takes the frames of the instruction that uses its result.

    ``jaxpr``, the traced program the module was compiled from (or its ``CallSites``), keeps each
    instruction's frames to a line of this call (``CallSites.line_of``). ``before``, the module's
    text before XLA's optimizations (``Lowered.as_text(dialect="hlo", debug_info=True)``), places
    the instructions of a lowering JAX named without its path (``lowering_frames``)."""
    instructions, users, whole_stacks = _parse(hlo_text)
    sites = _call_sites(jaxpr)
    if sites is not None and not whole_stacks:
        _through_libraries(instructions, sites)
    withheld = _keep_to_this_call(instructions, sites, whole_stacks)
    if before:
        _placed_by_lowering(instructions, lowering_frames(before), sites, whole_stacks, withheld)
    framed_computations = computation_frames(instructions)
    for name, instruction in list(instructions.items()):
        if name in withheld or instruction.frames:
            continue
        called = [framed_computations[c] for c in instruction.calls if c in framed_computations]
        if called and instruction.opcode in _APPLIES:  # a pass XLA split off a reduction: its adder's line
            instructions[name] = dataclasses.replace(instruction, frames=called[0])
            continue
        if called:
            continue
        inherited, seen, queue = (), {name}, list(users.get(name, ()))
        while queue and not inherited:
            user = queue.pop(0)
            if user in seen or user not in instructions:
                continue
            seen.add(user)
            inherited = instructions[user].frames
            queue.extend(users.get(user, ()))
        if inherited:  # a fusion with no source inside is timed as its own instruction
            instructions[name] = dataclasses.replace(instruction, calls=(), frames=inherited, fused=instruction.calls)
    return instructions


def lowering_frames(before: str) -> dict[str, tuple[str, tuple]]:
    """For each op name JAX gave without its path (``reduce_window_sum``, an operation of a lowering
    JAX caches and so leaves without a source), the op name and frames of the call that made it, in
    the module before XLA's optimizations (``before``): the nearest instruction above it, through
    the calls to its computation, that JAX named with its path (``jit(f)/jit(cumsum)``). XLA inlines
    that call and keeps nothing of it. An op name made under calls of several lines is left out.

    >>> before = "\\n".join([
    ...     "%cumsum_0 (a: f32[8]) -> f32[8] {",
    ...     '  ROOT %r = f32[8] reduce-window(%a, %z), to_apply=%add, metadata={op_name="reduce_window_sum"}',
    ...     "}",
    ...     "ENTRY %main (x: f32[8]) -> f32[8] {",
    ...     '  ROOT %c = f32[8] call(%x), to_apply=%cumsum_0, metadata={op_name="jit(f)/jit(cumsum)" '
    ...     'source_file="f.py" source_line=3}',
    ...     "}",
    ... ])
    >>> lowering_frames(before)
    {'reduce_window_sum': ('jit(f)/jit(cumsum)', (('f.py', 3, ''),))}
    """
    instructions, _, _ = _parse(before)
    callers: dict[str, list[HloInstruction]] = {}
    for instruction in instructions.values():
        for called in instruction.calls:
            callers.setdefault(called, []).append(instruction)

    def placed(computation: str, seen: set[str]) -> set:
        found = set()
        for caller in callers.get(computation, ()):
            if _has_path(caller.op_name) and caller.frames:
                found.add((caller.op_name, caller.frames))
            elif caller.computation not in seen:
                found |= placed(caller.computation, seen | {caller.computation}) or {None}
        return found

    by_name: dict[str, set] = {}
    for instruction in instructions.values():
        if instruction.op_name and not _has_path(instruction.op_name):
            by_name.setdefault(instruction.op_name, set()).update(placed(instruction.computation, set()) or {None})
    return {name: next(iter(found)) for name, found in by_name.items() if len(found) == 1 and None not in found}


def _placed_by_lowering(
    instructions: dict[str, HloInstruction],
    lowered: dict[str, tuple[str, tuple]],
    sites: CallSites | None,
    whole_stacks: bool,
    withheld: set[str],
) -> None:
    """Give each instruction whose op name is one of a lowering's (``lowering_frames``) the frames
    of the call that made it, kept to this call (not one whose frames were withheld as those of no
    line of this call). Where JAX kept frames on them (before 0.9) they are those of the lowering's
    first caller, which may be another function's line."""
    for name, instruction in list(instructions.items()):
        if name in withheld or instruction.op_name not in lowered:
            continue
        op_name, frames = lowered[instruction.op_name]
        if sites is not None:
            frames = sites.line_of(op_name, frames, whole_stacks)
        if frames:
            instructions[name] = dataclasses.replace(instruction, frames=frames)


def computation_frames(instructions: dict[str, HloInstruction]) -> dict[str, tuple]:
    """The frames of each computation that has some: those of its last instruction that has
    some; for one whose instructions have none, those of a computation they call (a
    reduce-window's adder, inside the fusion XLA wrapped it in).

    >>> add = HloInstruction("a", "adder", (), (("f.py", 3, "f"),))
    >>> window = HloInstruction("w", "wrapped", ("adder",), ())
    >>> computation_frames({"a": add, "w": window})
    {'adder': (('f.py', 3, 'f'),), 'wrapped': (('f.py', 3, 'f'),)}
    """
    found = {i.computation: i.frames for i in instructions.values() if i.frames}
    changed = True
    while changed:
        changed = False
        for instruction in instructions.values():
            if instruction.computation in found:
                continue
            inner = next((found[c] for c in instruction.calls if c in found), None)
            if inner is not None:
                found[instruction.computation] = inner
                changed = True
    return found


def _keep_to_this_call(
    instructions: dict[str, HloInstruction], sites: CallSites | None, whole_stacks: bool
) -> set[str]:
    """Rewrite each instruction's frames to a line of this call (``CallSites.line_of``); the names
    of those left with none. An instruction with a bare op name (a reduction's adder) is in the
    scope of the instruction that calls its computation."""
    if sites is None:
        return set()
    caller_op_names = {
        called: instruction.op_name
        for instruction in instructions.values()
        if _has_path(instruction.op_name)
        for called in instruction.calls
    }
    withheld = set()
    for name, instruction in list(instructions.items()):
        op_name = instruction.op_name
        if not _has_path(op_name):
            op_name = caller_op_names.get(instruction.computation, "")
        frames = sites.line_of(op_name, instruction.frames, whole_stacks)
        if frames != instruction.frames:
            instructions[name] = dataclasses.replace(instruction, frames=frames)
            if not frames:
                withheld.add(name)
    return withheld


def _parse(hlo_text: str) -> tuple[dict[str, HloInstruction], dict[str, list[str]], bool]:
    """The instructions, the users of each, and whether the frames are whole stacks (a stack-frame
    table) rather than each instruction's innermost frame."""
    lines = hlo_text.splitlines()
    stacks = _stack_table(lines)
    instructions: dict[str, HloInstruction] = {}
    users: dict[str, list[str]] = {}
    for computation, line, found in instruction_lines(lines):
        calls = tuple(
            name.strip().lstrip("%")
            for single, several in _CALLS.findall(line)
            for name in (single or several).split(",")
            if name.strip()
        )
        frames: tuple = ()
        frame_id = _STACK_FRAME_ID.search(line)
        if frame_id:
            frames = stacks.get(int(frame_id.group(1)), ())
        else:
            source = _SOURCE.search(line)
            if source:
                frames = ((source.group(1).encode().decode("unicode_escape"), int(source.group(2)), ""),)
        op_name = _OP_NAME.search(line)
        shape, after = result_shape(line[found.end() :])
        operand_text, attributes = _operand_list(after)
        operands = tuple(_OPERAND.findall(operand_text))
        instructions[found.group(1)] = HloInstruction(
            found.group(1),
            computation,
            calls,
            frames,
            _opcode(line[found.end() :]),
            _unescape(op_name.group(1)) if op_name else "",
            shape,
            operands,
            attributes,
        )
        for operand in operands:
            users.setdefault(operand, []).append(found.group(1))
    return instructions, users, bool(stacks)


def instruction_lines(lines: list[str]):
    """``(computation, line, match)`` for each instruction line of a module's lines, where
    ``match`` is ``_INSTRUCTION``'s (``group(1)`` the name, ``end()`` where its result shape starts)."""
    computation = ""
    for line in lines:
        header = _COMPUTATION.match(line)
        if header and " = " not in line.split("{")[0]:
            computation = header.group(1)
            continue
        found = _INSTRUCTION.match(line)
        if found:
            yield computation, line, found


def kernel_lines(
    hlo_text: str, cell_namer: CellNamer = no_cells, jaxpr: Any = None, pick: FramePicker = traced_user_frame
) -> dict[str, list[SourceLine]]:
    """For each instruction, the user's source lines behind it and behind everything it calls
    (a fusion's fused computation, a loop's body), the most frequent first; lines of this call
    where ``jaxpr`` is given (``parse``). ``pick`` chooses the user's frame from an instruction's
    frames (``recorded_user_frame`` for a program read from a trace made elsewhere)."""
    return lines_of_instructions(parse(hlo_text, jaxpr), cell_namer, pick)


def lines_of_instructions(
    instructions: dict[str, HloInstruction], cell_namer: CellNamer = no_cells, pick: FramePicker = traced_user_frame
) -> dict[str, list[SourceLine]]:
    """``kernel_lines`` of instructions already parsed."""
    by_computation = by_computation_of(instructions)

    def frames_inside(instruction: HloInstruction, seen: set) -> Counter:
        counted = Counter()
        frame = pick(instruction.frames) if not instruction.calls else None  # a fusion: its insides
        if frame is not None:
            counted[frame[:2]] += 1
        for name in instruction.calls:
            if name in seen:
                continue
            seen.add(name)
            for inner in by_computation.get(name, ()):
                counted.update(frames_inside(inner, seen))
        return counted

    named: dict[tuple[str, int], SourceLine] = {}
    result = {}
    for name, instruction in instructions.items():
        counted = frames_inside(instruction, set())
        lines = []
        for (file, line), _ in counted.most_common():
            if (file, line) not in named:
                named[file, line] = source_line(file, line, "", cell_namer=cell_namer)
            lines.append(named[file, line])
        result[name] = lines
    return result


def module_name(hlo_text: str) -> str:
    """The module's name: ``HloModule jit_f, entry_computation_layout=...`` -> ``jit_f``.

    >>> module_name("HloModule jit_f, is_scheduled=true")
    'jit_f'
    """
    found = _MODULE_NAME.match(hlo_text)
    return found.group(1) if found else ""


def by_computation_of(instructions: dict[str, HloInstruction]) -> dict[str, list[HloInstruction]]:
    """The instructions of each computation, in the module's order."""
    grouped: dict[str, list[HloInstruction]] = {}
    for instruction in instructions.values():
        grouped.setdefault(instruction.computation, []).append(instruction)
    return grouped


def _stack_table(lines: list[str]) -> dict[int, tuple[tuple[str, int, str], ...]]:
    """The stack-frame table at the top of the module: frame id -> frames, innermost first."""
    tables = _tables(lines)
    if "StackFrames" not in tables:
        return {}
    files = _numbered_strings(tables.get("FileNames", []))
    functions = _numbered_strings(tables.get("FunctionNames", []))
    locations = {}
    for m in filter(None, map(_FILE_LOCATION.match, tables.get("FileLocations", []))):
        locations[int(m.group(1))] = (
            files.get(int(m.group(2)), "?"),
            int(m.group(4)),
            functions.get(int(m.group(3)), ""),
        )
    parents = {}  # XLA prints the parent's id plus one: 1 is the first frame's parent, none
    for m in filter(None, map(_STACK_FRAME.match, tables["StackFrames"])):
        parents[int(m.group(1))] = (int(m.group(2)), int(m.group(3)) - 1)
    stacks = {}
    for frame_id in parents:
        chain, current_id, seen = [], frame_id, set()
        while current_id in parents and current_id not in seen:
            seen.add(current_id)
            location, parent = parents[current_id]
            if location in locations:
                chain.append(locations[location])
            current_id = parent
        stacks[frame_id] = tuple(chain)
    return stacks


def _tables(lines: list[str]) -> dict[str, list[str]]:
    """The rows of each of XLA's debug tables (``FileNames``, ..., ``StackFrames``), by table."""
    tables: dict[str, list[str]] = {}
    current = None
    for line in lines:
        stripped = line.strip()
        if stripped in STACK_TABLES:
            current = tables.setdefault(stripped, [])
        elif not stripped or stripped.startswith(("%", "ENTRY", "HloModule")):
            current = None
        elif current is not None:
            current.append(stripped)
    return tables


def _numbered_strings(rows: list[str]) -> dict[int, str]:
    return {int(m.group(1)): _unescape(m.group(2)) for m in filter(None, map(_NUMBERED_STRING.match, rows))}


def result_shape(rest: str) -> tuple[str, str]:
    """An instruction's result shape and what follows it: ``f32[4]{0} sine(%p)`` ->
    ``("f32[4]{0}", " sine(%p)")``; the shape may be a tuple ``(f32[], s32[4])``.

    >>> result_shape("(f32[], s32[4]{0}) tuple(%a, %b)")
    ('(f32[], s32[4]{0})', ' tuple(%a, %b)')
    """
    if rest.startswith("("):
        depth = 0
        for index, char in enumerate(rest):
            depth += char == "("
            depth -= char == ")"
            if depth == 0:
                return rest[: index + 1], rest[index + 1 :]
        return rest, ""
    shape, _, after = rest.partition(" ")
    return shape, " " + after if after else ""


def _operand_list(after: str) -> tuple[str, str]:
    """What follows an instruction's shape, split at the end of its operand list: ``" add(%a, %b),
    metadata={...}"`` -> ``("%a, %b", "metadata={...}")``.

    >>> _operand_list(" dot(%a, %b), lhs_contracting_dims={1}")
    ('%a, %b', 'lhs_contracting_dims={1}')
    """
    start = after.find("(")
    if start < 0:
        return "", ""
    depth = 0
    for index in range(start, len(after)):
        depth += after[index] == "("
        depth -= after[index] == ")"
        if depth == 0:
            return after[start + 1 : index], after[index + 1 :].lstrip(", ")
    return after[start + 1 :], ""


def _opcode(rest: str) -> str:
    """The opcode after an instruction's result shape: ``f32[4]{0} sine(%p)`` -> ``sine``."""
    return result_shape(rest)[1].strip().split("(", 1)[0].strip()


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")
