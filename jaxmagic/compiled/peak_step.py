"""The step of XLA's schedule where a compiled program's memory peaks, and what is in use there,
counted as XLA's own peak counts it.

What is held for the whole call (the arguments, the outputs, the constants) counts in full at
every step. The temporaries count from their first step to their last (``BufferDump.ranges``):

- each block of bytes once: two values at the same bytes of one allocation while both are live
  are one buffer (a value written in place over its input, a loop's carried value and the
  loop's parameter that holds it);
- on a TPU, XLA simulates each memory space's temporaries as a heap of its own (``S(0)``,
  ``S(1)``, the scalars' ``S(6)``; ``TEMPORARY_SPACES``) and its peak counts one of them, the one
  whose own peak is the largest: the temporaries of that space at its busiest step, no other
  space's added. Read from 92 programs recorded on a v5e, whose peaks this gives to the byte;
- on a TPU, a value a loop's body writes into the bytes of the loop's carried value (a scan's
  ``dynamic-update-slice`` of the stack it builds) counts as bytes of its own while the carried
  value it replaces is live: at the step of that write XLA's peak counts both;
- on a TPU, likewise a value a kernel writes into the bytes of an argument's copy that XLA
  prefetched into ``S(1)`` (an asynchronous copy's ``copy-start{0}``), at the step that reads the
  copy for the last time (a training step's update of a parameter): XLA's peak
  counts the copy and the result both there, though they share their bytes.

A loop whose body writes a new stack over the one it carries, on a TPU: the carried stack and
its update are both in use at the step of the write, 4 KiB each, beside the 512-byte argument.
The scalars in the main memory are a heap of their own, smaller, so XLA's peak leaves them out.

>>> from jaxmagic.compiled.buffer_dump import read_dump
>>> dump = read_dump('''allocation 0: size 512, parameter 0, shape |f32[4]| at ShapeIndex {}:
...  value: <0 x.1 @0> (size=512,offset=0): f32[4]{0}
... allocation 1: size 4096, color 1, preallocated-temp:
...  value: <1 stack @1> (size=4096,offset=0): f32[1024]{0:S(1)}
...  value: <2 carried{1} (phi) @1> (size=4096,offset=0): f32[1024]{0:S(1)}
...  value: <3 update @1> (size=4096,offset=0): f32[1024]{0:S(1)}
... allocation 2: size 1024, preallocated-temp:
...  value: <4 i.1 @0> (size=512,offset=0): s32[]{}
...  value: <5 i.2 @0> (size=512,offset=512): s32[]{}
... HloLiveRange (max 5):
...   InstructionSequence:
...     0:x.1
...     1:stack
...     2:carried
...     3:update
...     4:i.1
...     5:i.2
...   BufferLiveRange:
...     x.1{}:0-6
...     stack{}:1-2
...     carried{1}:2-3
...     update{}:3-4
...     i.1{}:4-5
...     i.2{}:4-5
... ''')
>>> step, live = peak_step(dump, "tpu")
>>> step, [(value.key, size) for value, size in live]
(3, [('x.1{}', 512), ('update{}', 4096), ('carried{1}', 4096)])

Elsewhere the temporaries of the main memory and ``S(1)`` add up at one step, each block once:

>>> step, live = peak_step(dump)
>>> step, sum(size for _, size in live)
(4, 5632)

A parameter's update written over its prefetched copy in ``S(1)``, where that copy is read for
the last time: the copy and the update, 4 KiB each, are both in use at that step.

>>> dump = read_dump('''allocation 0: size 4096, parameter 0, shape |f32[1024]| at ShapeIndex {}:
...  value: <0 w.1 @0> (size=4096,offset=0): f32[1024]{0}
... allocation 1: size 4, color 2, preallocated-temp:
...  value: <1 copy-start{2} @2> (size=4,offset=0): u32[]{:S(2)}
... allocation 2: size 4096, color 1, preallocated-temp:
...  value: <2 copy-start{0} @1> (size=4096,offset=0): f32[1024]{0:S(1)}
...  value: <3 update @1> (size=4096,offset=0): f32[1024]{0:S(1)}
... HloLiveRange (max 3):
...   InstructionSequence:
...     0:w.1
...     1:copy-start
...     2:copy-done
...     3:update
...   BufferLiveRange:
...     w.1{}:0-3
...     copy-start{0}:1-3
...     copy-start{2}:1-2
...     update{}:3-3
... ''')
>>> step, live = peak_step(dump, "tpu")
>>> step, [(value.key, size) for value, size in live]
(3, [('w.1{}', 4096), ('update{}', 4096), ('copy-start{0}', 4096)])
"""

from __future__ import annotations

from jaxmagic.compiled.buffer_dump import BufferDump, Value

__all__ = ["peak_step", "counted", "once", "TEMPORARY_SPACES"]

# The memory spaces whose temporaries XLA's own peak counts, by platform. On a TPU each is a heap of
# its own and the peak is the largest of them (``SEPARATE_HEAPS``); the sync flags of ``S(2)`` are
# in none. Elsewhere: the main memory and S(1), added up. What is held for the whole call counts on
# every platform.
TEMPORARY_SPACES = {"tpu": (0, 1, 6)}
OTHER_TEMPORARY_SPACES = (0, 1)
SEPARATE_HEAPS = frozenset({"tpu"})


def counted(value: Value, platform: str = "") -> bool:
    """Whether a temporary value is in memory as XLA's peak counts it: in a space it counts on
    ``platform``, and not the index table of a tuple the program makes for itself (an
    asynchronous copy's, a fusion's with several outputs), which XLA keeps out of its peak.

    >>> from jaxmagic.compiled.buffer_dump import read_dump
    >>> text = '''allocation 0: size 512, preallocated-temp:
    ...  value: <1 copy-start @0> (size=512,offset=0): (f32[8]{0}, f32[8]{0:S(1)}, u32[]{:S(2)})
    ...  value: <2 copy-start{1} @0> (size=32,offset=0): f32[8]{0:S(1)}
    ...  value: <3 copy-start{2} @0> (size=4,offset=0): u32[]{:S(2)}
    ... '''
    >>> dump = read_dump(text)
    >>> [counted(value, "tpu") for value in dump.values.values()]
    [False, True, False]
    """
    if value.space not in TEMPORARY_SPACES.get(platform, OTHER_TEMPORARY_SPACES):
        return False
    return not value.shape.startswith("(")


def peak_step(dump: BufferDump, platform: str = "") -> tuple[int | None, list[tuple[Value, int]]]:
    """The step of the schedule where the most bytes are in use as XLA's peak on ``platform``
    counts them, and what is in use there: one ``(value, bytes)`` per buffer, what is held for the
    whole call first. ``None`` for the step of an older dump without live ranges, whose list of
    values at XLA's peak is read instead."""
    held = [a for a in dump.allocations.values() if a.held]
    if not dump.ranges:  # an older dump: only the list XLA printed at its peak
        held_values = [_held_value(dump, a.index) for a in held]
        listed = [dump.values[key] for key in dump.peak_listed if key in dump.values]
        listed = [v for v in listed if not dump.allocations[v.allocation].held and counted(v, platform)]
        return None, [(v, a.size) for v, a in zip(held_values, held, strict=True) if v] + once(listed)
    timelines = [_Timeline(dump, values, platform in SEPARATE_HEAPS) for values in _heaps(dump, platform)]
    (step, _), timeline = max(((t.busiest(), t) for t in timelines), key=lambda found: found[0][1])
    held_live = [_held_value(dump, a.index, step) for a in held]
    return step, [(v, a.size) for v, a in zip(held_live, held, strict=True) if v] + timeline.live_at(step)


def _heaps(dump: BufferDump, platform: str) -> list[list[Value]]:
    """The temporaries XLA's peak counts, by the heap each is simulated in: on a TPU one heap per
    memory space, elsewhere one for all."""
    values = [
        v
        for v in dump.values.values()
        if v.key in dump.ranges and dump.allocations[v.allocation].kind == "temporary" and counted(v, platform)
    ]
    if platform not in SEPARATE_HEAPS:
        return [values]
    spaces = sorted({v.space for v in values})
    return [[v for v in values if v.space == space] for space in spaces] or [[]]


class _Timeline:
    """The bytes in use at each step by the temporaries of one heap; ``rewrites``: a loop body's write
    over the loop's carried value, a kernel's over a prefetched copy, counts as bytes of its own
    (``_rewritten``)."""

    def __init__(self, dump: BufferDump, temporaries: list[Value], rewrites: bool = False):
        self.ranges = dump.ranges
        self.temporaries = temporaries
        self.starts: dict[int, list[Value]] = {}
        self.ends: dict[int, list[Value]] = {}
        for value in temporaries:
            first, last = dump.ranges[value.key]
            self.starts.setdefault(first, []).append(value)
            self.ends.setdefault(last + 1, []).append(value)
        self.steps = max([last + 1 for _, last in dump.ranges.values()] + [len(dump.sequence), 1])
        self.rewritten = _rewritten(dump, temporaries) if rewrites else {}

    def busiest(self) -> tuple[int, int]:
        """The first step where the heap's bytes, each block once, are the most, and those bytes."""
        active: dict[int, dict[tuple[int, int], int]] = {}
        covered: dict[int, int] = {}
        total, best, best_step = 0, -1, 0
        for step in range(self.steps):
            changed = set()
            for value, delta in [(v, -1) for v in self.ends.get(step, ())] + [
                (v, 1) for v in self.starts.get(step, ())
            ]:
                slices = active.setdefault(value.allocation, {})
                slices[(value.offset, value.size)] = slices.get((value.offset, value.size), 0) + delta
                changed.add(value.allocation)
            for allocation in changed:
                now = _covered(k for k, n in active[allocation].items() if n > 0)
                total += now - covered.get(allocation, 0)
                covered[allocation] = now
            at = total + sum(v.size for v in self.rewritten.get(step, ()))
            if at > best:
                best, best_step = at, step
        return best_step, max(best, 0)

    def live_at(self, step: int) -> list[tuple[Value, int]]:
        """What the heap has in use at ``step``: each block once, then each carried value or
        prefetched copy written over there."""
        replaced = self.rewritten.get(step, [])
        live = [v for v in self.temporaries if self.ranges[v.key][0] <= step <= self.ranges[v.key][1]]
        return once([v for v in live if v not in replaced]) + [(v, v.size) for v in replaced]


def _rewritten(dump: BufferDump, temporaries: list[Value]) -> dict[int, list[Value]]:
    """Step -> the values that a value written at that step into the same bytes replaces while
    they are still live: a loop's carried value (``phi``) its body updates, a prefetched copy
    (``_prefetched``) a kernel writes its result over."""
    by_slice: dict[tuple[int, int, int], list[Value]] = {}
    for value in temporaries:
        by_slice.setdefault(value.slice, []).append(value)
    found: dict[int, list[Value]] = {}
    for group in by_slice.values():
        kept = [v for v in group if v.phi or _prefetched(dump, v)]
        for step in sorted({dump.ranges[v.key][0] for v in group if not v.phi} if kept else ()):
            replaced = [p for p in kept if dump.ranges[p.key][0] < step <= dump.ranges[p.key][1]]
            if replaced:
                found.setdefault(step, []).append(max(replaced, key=lambda p: (dump.ranges[p.key][0], p.key)))
    return found


def _prefetched(dump: BufferDump, value: Value) -> bool:
    """Whether a value is a copy XLA prefetched into ``S(1)``: what an asynchronous copy makes
    (``copy-start{0}``, its ``copy-start{2}`` the copy's sync flag in ``S(2)``) in that space. A
    copy it evicts to the main memory, whose bytes another copy takes at its last step, counts once."""
    flag = dump.values.get(value.name + "{2}")
    copied = value.key == value.name + "{0}" and flag is not None and flag.space == 2 and flag.shape == "u32[]"
    return copied and value.space == 1


def _covered(slices) -> int:
    """The bytes covered by ``(offset, size)`` blocks of one allocation, overlaps once."""
    total, end = 0, -1
    for offset, size in sorted(slices):
        start = max(offset, end)
        if offset + size > start:
            total += offset + size - start
            end = offset + size
    return total


def once(values: list[Value]) -> list[tuple[Value, int]]:
    """One ``(value, bytes)`` per block of memory: values at the same bytes of one allocation are
    one buffer, named by the value written last that is not a loop's parameter; a block that
    overlaps another counts only the bytes no earlier block covers."""
    chosen: dict[tuple[int, int, int], Value] = {}
    for value in values:
        kept = chosen.get(value.slice)
        if kept is None or _preferred(value) > _preferred(kept):
            chosen[value.slice] = value
    found, ends = [], {}
    for (allocation, offset, size), value in sorted(
        chosen.items(), key=lambda item: (item[0][0], item[0][1], -item[0][2])
    ):
        end = ends.get(allocation, -1)
        start = max(offset, end)
        fresh = max(0, offset + size - start)
        ends[allocation] = max(end, offset + size)
        if fresh:
            found.append((value, fresh))
    return found


def _preferred(value: Value) -> tuple:
    return (not value.phi, value.key)


def _held_value(dump: BufferDump, allocation: int, step: int | None = None) -> Value | None:
    """The value that names an allocation held for the whole call: an argument by its parameter;
    otherwise the value in it at ``step``, or the one written last (an output's final value)."""
    values = dump.values_in(allocation)
    if not values:
        return None
    ranges = dump.ranges
    if dump.allocations[allocation].kind == "argument":  # its parameter, scheduled before what updates it
        return min(values, key=lambda v: (ranges.get(v.key, (0, 0))[0], v.phi, v.key))
    live = [v for v in values if step is not None and v.key in ranges and ranges[v.key][0] <= step <= ranges[v.key][1]]
    candidates = [v for v in (live or values) if not v.phi] or live or values
    return max(candidates, key=lambda v: (ranges.get(v.key, (-1, -1))[0], v.key))
