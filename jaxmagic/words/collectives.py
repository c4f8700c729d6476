"""Sentences about communication: the collectives of a program, each with its line, bytes, axes
and cause, and the answer line that names the costliest. Facts come from ``jaxmagic.compiled.collectives``.

>>> from jaxmagic.compiled.collectives import Collective, Placement
>>> gather = Collective("all-gather", "ag", None, "dot_general", 768, 4, ("data",), (), "f32[16,16]",
...                     Placement("split", 0, ("data",)), Placement("whole", 0, ("data",)))
>>> str(answer([gather]))
'1 collective moves 768 B per device; the largest, an all-gather of 768 B, comes from your code'
>>> str(placement_text(gather.before)), str(placement_text(gather.after))
('dim 0 split over `data`', 'dim 0 whole on every device of `data`')
"""

from __future__ import annotations

from typing import Sequence

from jaxmagic.compiled.collectives import Collective, Placement, costliest
from jaxmagic.words import Words, code, names, place, say
from jaxmagic.words.units import format_bytes, format_seconds


def article(kind: str) -> str:
    """``an all-gather``, ``a reduce-scatter``.

    >>> article("all-reduce"), article("collective-permute")
    ('an all-reduce', 'a collective-permute')
    """
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def plural(kind: str, count: int) -> str:
    """``1 all-gather``, ``2 all-gathers``.

    >>> plural("all-to-all", 2)
    '2 all-to-alls'
    """
    return f"{count} {kind}{'s' * (count != 1)}"


def axes_words(collective: Collective) -> Words:
    """The mesh axes a collective runs over, or its device groups where no mesh is known.

    >>> from jaxmagic.compiled.collectives import Collective, Placement
    >>> p = Placement("whole", None, ())
    >>> str(axes_words(Collective("all-reduce", "r", None, "", 8, 2, (), ((0, 1), (2, 3)), "f32[2]", p, p)))
    'devices {0,1} {2,3}'
    """
    if collective.axes:
        return names(collective.axes)
    shown = " ".join("{" + ",".join(map(str, g)) + "}" for g in collective.groups[:4])
    more = f" … ({len(collective.groups)} groups)" if len(collective.groups) > 4 else ""
    return say("devices {}{}", shown, more) if shown else say("all devices")


def placement_text(placement: Placement) -> Words:
    """How a value lies on the devices, in words (see ``collectives.Placement``).

    >>> from jaxmagic.compiled.collectives import Placement
    >>> str(placement_text(Placement("partial", None, ("model",)))), str(placement_text(Placement("whole", None, ("model",))))
    ('partial results over `model`', 'combined on every device of `model`')
    """
    axes = names(placement.axes) if placement.axes else "the group"
    dim = f"dim {placement.dimension}" if placement.dimension is not None else "one dimension"
    if placement.state == "split":
        said = say("{} split over {}", dim, axes)
        for dimension, more in placement.also:
            said = said + say(", dim {} over {}", dimension, names(more))
        return said
    if placement.state == "whole":
        if placement.dimension is None:
            return say("combined on every device of {}", axes)
        return say("{} whole on every device of {}", dim, axes)
    if placement.state == "replicated":
        return say("whole on every device of {}", axes)
    if placement.state == "partial":
        return say("partial results over {}", axes)
    if placement.state == "blocks":
        return say("one block per device of {}", axes)
    return say("sent on along {}", axes)


def where_words(collective: Collective) -> Words:
    """``In [3] line 2: `y = x @ w```: the line XLA kept for it, else the line that asked for the
    sharding it makes (a ``jax.jit(..., out_shardings=...)``); ``your code`` where neither is known."""
    line = collective.line or collective.asked_at
    if line is None:
        return say("your code")
    return say("{}: {}", place(line), code(line.text)) if line.text else say("{}", place(line))


def bytes_words(collective: Collective) -> Words:
    """``768 B per device (R·(n−1)/n, R = f32[16,16] on one device, n = 4)``, ``per loop step`` inside a loop."""
    step = " per loop step" if collective.in_loop else ""
    return say(
        "{} per device{} ({}, R = {} on one device, n = {})",
        format_bytes(collective.bytes),
        step,
        collective.formula,
        code(collective.result),
        collective.group_size,
    )


def _inputs(collective: Collective) -> Words:
    """`` (inputs: `x` `P('data', None)`, `w` `P(None)`)``, or nothing where none is known."""
    if not collective.operands:
        return Words()
    pieces = [say("{} {}", code(name), code(spec)) for name, spec in collective.operands]
    joined = pieces[0]
    for piece in pieces[1:]:
        joined = joined + ", " + piece
    return say(" (inputs: {})", joined)


def cause_words(collective: Collective) -> Words | None:
    """Why the collective is there: asked for (``psum``), or inserted by XLA and for which values."""
    if collective.requested:
        return say("asked for: {}", code(f"jax.lax.{collective.primitive}"))
    if collective.mismatch == "partial":
        return say(
            "inserted by XLA to combine the partial results of {}: the dimension it reduces is split over {}{}",
            code(collective.primitive),
            axes_words(collective),
            _inputs(collective),
        )
    if collective.mismatch == "operands":
        values = names([name for name, _ in collective.operands])
        return say(
            "inserted by XLA: {} disagree in sharding for {}{}", values, code(collective.primitive), _inputs(collective)
        )
    if collective.mismatch == "constraint" and collective.wanted is not None:
        _, spec, where = collective.wanted
        return say(
            "inserted by XLA to meet the sharding {} asked for at {}{}; {} → {}",
            code(spec),
            where,
            _inputs(collective),
            placement_text(collective.before),
            placement_text(collective.after),
        )
    if collective.mismatch == "output" and collective.wanted is not None:
        _, spec, name = collective.wanted
        asked = collective.asked_at
        by = (
            say(" at {}", place(asked))
            if asked is not None and collective.line is not None and asked != collective.line
            else ""
        )
        return say(
            "inserted by XLA to give the output {} the sharding {} its out_shardings ask for{}{}; {} → {}",
            code(name),
            code(spec),
            by,
            _inputs(collective),
            placement_text(collective.before),
            placement_text(collective.after),
        )
    if collective.primitive:
        return say("inserted by XLA to partition {}{}", code(collective.primitive), _inputs(collective))
    return None


def answer(collectives: Sequence[Collective]) -> Words:
    """The answer line: how many collectives, the bytes they move per device, and the costliest."""
    if not collectives:
        return say("No communication: the optimized program has no collective (all-reduce, all-gather, …)")
    total = sum(c.bytes for c in collectives)
    top = costliest(collectives)
    assert top is not None  # there is at least one collective
    n = len(collectives)
    verb = "moves" if n == 1 else "move"
    return say(
        "{} collective{} {} {} per device; the largest, {} of {}, comes from {}",
        n,
        "s" * (n != 1),
        verb,
        format_bytes(total),
        article(top.kind),
        format_bytes(top.bytes),
        where_words(top),
    )


def time_words(seconds: float, device_seconds: float) -> Words:
    """How much of the profiled device time went to communication.

    >>> str(time_words(0.012, 0.02))
    'communication took 12 ms of 20 ms device time per call (60%), by the profiler'
    """
    share = seconds / device_seconds if device_seconds else 0.0
    return say(
        "communication took {} of {} device time per call ({}), by the profiler",
        format_seconds(seconds),
        format_seconds(device_seconds),
        f"{share:.0%}",
    )


def item(collective: Collective) -> Words:
    """One collective on one line, as a budget's failure lists it."""
    cause = cause_words(collective)
    return say(
        "{} of {} over {}, from {}{}",
        article(collective.kind),
        bytes_words(collective),
        axes_words(collective),
        where_words(collective),
        say(" — {}", cause) if cause is not None else "",
    )


def budget_item(number: int, collective: Collective, function: str, call_site) -> Words:
    """One numbered line of a budget's failure: the collective, the function whose program holds
    it, and where that function was compiled (``call_site``, a ``SourceLine`` or ``None``)."""
    site = call_site.label if call_site is not None else "your code"
    return say("  {}. {} (in {}, compiled at {})", number, item(collective), code(function), site)


def budget_headline(
    functions: Sequence[str], counted: dict[str, int], total: int, over: Sequence[str], limits
) -> Words:
    """What a budget found against what it allows.

    >>> from jaxmagic.recompiles.collective_budget import CollectiveLimits
    >>> limits = CollectiveLimits.of(max={"all-gather": 1})
    >>> str(budget_headline(["step"], {"all-gather": 2}, 2, ["all-gather"], limits))
    '`step` compiled 2 all-gathers (2 in all) in the block; expected at most 1 all-gather.'
    """
    who = names(functions) if functions else say("the code in the block")
    expected = []
    for kind in over:
        if kind == "total":
            expected.append(f"at most {limits.total} collective{'s' * (limits.total != 1)} in all")
        elif kind in limits.forbid:
            expected.append(f"no {kind}")
        else:
            expected.append(f"at most {plural(kind, limits.maxima[kind])}")
    found = ", ".join(plural(kind, count) for kind, count in counted.items()) or "no collective"
    return say(
        "{} compiled {} ({} in all) in the block; expected {}.", who, found, total, "; ".join(expected) or "none"
    )
