"""Why a jitted function compiled: one ``Cause`` per difference, in plain words, with the fix.

A ``Cause`` names the user's parameter (``x``, ``n``, ``params['w']``), says what it was before and
what it is now, and carries one sentence of advice taken from the tutorial chapters: pad or
bucket shapes, fix the dtype, pass an array instead of a Python scalar, define the function once
outside the loop, hoist ``jax.jit`` out of the loop.

>>> cause = Cause("shape", argument="x", before="f32[3]", after="f32[4]")
>>> cause.message
'shape of `x` changed: f32[3] → f32[4]'
>>> cause.advice.startswith("Keep the shape of `x` fixed")
True
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxmagic.words import Words, code, say

CAUSE_KINDS = (
    "first_call",
    "shape",
    "dtype",
    "weak_type",
    "static_value",
    "pytree_structure",
    "sharding",
    "device",
    "config",
    "redefined_function",
    "jit_options",
    "unknown",
)

# The ``detail`` of a cause whose new value is an object alike to the old one, built again.
BUILT_AGAIN = "built again"

# What a reader sees before the details, one short label per kind.
KIND_LABELS = {
    "first_call": "first call",
    "shape": "shape",
    "dtype": "dtype",
    "weak_type": "weak type",
    "static_value": "static value",
    "pytree_structure": "pytree structure",
    "sharding": "sharding",
    "device": "device",
    "config": "config",
    "redefined_function": "re-defined function",
    "jit_options": "jit options",
    "unknown": "unknown",
}

_ADVICE = {
    "first_call": (
        "Expected: each new signature compiles once. Warm the function up with inputs of the real "
        "shapes and dtypes before timing or training."
    ),
    "shape": (
        "Keep the shape of {arg} fixed: pad it (jnp.pad) or bucket it to a few sizes and mask the "
        "padding, so only a few shapes ever compile."
    ),
    "dtype": "Fix the dtype of {arg} (e.g. {astype} before the call) so every call passes the same one.",
    "python_dtype": (
        "Pass {arg} as the same Python type every time (always 2.0, not sometimes 2), or as an array "
        "with a fixed dtype."
    ),
    "weak_type": (
        "Pass {arg} the same kind of value every time: always an array (e.g. {float32}), or "
        "a Python scalar marked static if it is a constant."
    ),
    "static_value": (
        "Every new value of static {arg} compiles anew: keep its values few, or pass it as an array "
        "(not static) if it only enters arithmetic."
    ),
    "pytree_structure": (
        "Keep the structure of {arg} the same on every call: the same keys, lengths and None entries."
    ),
    "passing_style": "Pass {arg} the same way on every call: always by position or always by keyword.",
    "static_attribute": (
        "{arg} is part of the program JAX compiled, not an input: each of its values compiles once. "
        "Expected when switched on purpose (train and eval mode make two); if it changes often, hold it "
        "as an array the computation reads instead."
    ),
    "attribute_added": (
        "Give the object all its attributes when it is built: an attribute added or removed later "
        "changes its structure, and JAX compiles again."
    ),
    "sharding": (
        "Give {arg} the same sharding on every call (jax.device_put it once), or fix it with "
        "jax.jit(..., in_shardings=...)."
    ),
    "device": (
        "Keep {arg} on one device: jax.device_put it once, where the computation runs, instead of "
        "moving it between calls."
    ),
    "config": "Set JAX options such as {arg} once at start-up, before the first call: each change compiles again.",
    "redefined_function": (
        "Define {arg} (and its jax.jit wrapper) once, outside the loop, so its compilation is reused."
    ),
    "redefined_elsewhere": (
        "Expected after defining {arg} again (e.g. re-running its cell); a problem only if it happens in a loop."
    ),
    "jit_options": (
        "Create the jitted function once, with fixed options, outside the loop: hoist jax.jit out of the loop."
    ),
    "unknown": "jaxmagic could not tell what changed; JAX's own explanation (if any) is kept in {raw}.",
    "key_kind": (
        "Pass {arg} as one kind of random key every time: typed keys ({key}) or raw uint32 keys ({prngkey}), "
        "not both ({key_data} and {wrap} convert between them)."
    ),
    "key_shape": (
        "Each number of keys in {arg} compiles once: split to the same number on every call, e.g. "
        "{split} with a fixed n."
    ),
}

# Code named inside the advice sentences, by slot.
_ADVICE_CODE = {
    "astype": code(".astype(jnp.float32)"),
    "float32": code("jnp.float32(v)"),
    "raw": code("raw"),
    "key": code("jax.random.key"),
    "prngkey": code("jax.random.PRNGKey"),
    "key_data": code("jax.random.key_data"),
    "wrap": code("jax.random.wrap_key_data"),
    "split": code("jax.random.split(key, n)"),
}

# Headline phrases: "`step` compiled 12 times: <what> — <fix>".
_REPEATED = {
    "shape": ("the shape of {arg} changes{where}", "pad to a few bucket sizes"),
    "dtype": ("the dtype of {arg} changes", "fix its dtype"),
    "weak_type": ("{arg} switches between a Python scalar and an array", "always pass an array"),
    "static_value": (
        "static argument {arg} takes a new value each time",
        "pass it as an array or keep its values few",
    ),
    "pytree_structure": ("the structure of {arg} changes", "keep its keys and lengths fixed"),
    "sharding": ("the sharding of {arg} changes", "place it once with jax.device_put"),
    "device": ("{arg} moves between devices", "keep it on one device"),
    "config": ("JAX option {arg} keeps changing", "set it once at start-up"),
    "redefined_function": ("{arg} is re-defined before each call", "define it once, outside the loop"),
    "jit_options": ("it is wrapped in a new jax.jit with different {arg} each time", "hoist jax.jit out of the loop"),
    "unknown": ("for a reason jaxmagic cannot tell", "see JAX's explanation in the log"),
    "first_call": ("each call is a first call", "reuse one jitted function"),
}


@dataclass(frozen=True)
class Cause:
    """One difference against the nearest earlier compilation of the same function.

    ``kind`` is one of ``CAUSE_KINDS``; ``argument`` names the parameter (``x``, ``params['w']``),
    the JAX option or the function concerned; ``before`` / ``after`` are short texts
    (``f32[3]`` / ``f32[4]``, ``2`` / ``3``); ``message`` says it in a sentence and ``advice`` says
    what to do. ``detail`` adds what a table has no room for (``axis 0: 3 → 4``); a shape cause
    also holds it as facts: ``axes`` (``((0, 3, 4),)``) or ``ranks`` (``(1, 2)``).

    >>> Cause("static_value", argument="n", before="2", after="3").message
    'static argument `n` changed: 2 → 3'
    """

    kind: str
    argument: str | None = None
    before: str | None = None
    after: str | None = None
    message: str = ""
    advice: str = ""
    detail: str | None = None
    axes: tuple = ()  # a shape cause's changed axes as facts: ((axis, before, after), ...)
    ranks: tuple | None = None  # a shape cause whose rank changed: (before, after)

    def __post_init__(self):
        if self.kind not in CAUSE_KINDS:
            raise ValueError(f"unknown cause kind {self.kind!r}; expected one of {', '.join(CAUSE_KINDS)}")
        if not self.message:
            object.__setattr__(self, "message", default_message(self))
        if not self.advice:
            object.__setattr__(self, "advice", advice_for(self.kind, self.argument))

    @property
    def label(self) -> str:
        """The kind as a reader says it: ``weak type``, ``re-defined function``."""
        return KIND_LABELS[self.kind]

    @property
    def key(self) -> tuple[str, str | None]:
        """What makes two causes "the same cause" for repeated compilations: kind and argument."""
        return self.kind, self.argument

    def __str__(self) -> str:
        return self.message


def advice_for(kind: str, argument: str | None = None, *, variant: str | None = None) -> Words:
    """The one-sentence fix for a cause kind (``variant`` picks a special case such as
    ``passing_style`` or ``redefined_elsewhere``).

    >>> advice_for("dtype", "x")
    'Fix the dtype of `x` (e.g. `.astype(jnp.float32)` before the call) so every call passes the same one.'
    """
    template = _ADVICE.get(variant or kind, _ADVICE["unknown"])
    return say(template, arg=code(argument) if argument else "it", **_ADVICE_CODE)


def default_message(cause: Cause) -> Words:
    """A sentence for a cause built from its kind, argument and before/after."""
    arg, before, after = code(cause.argument), cause.before, cause.after
    change = f": {before} → {after}" if before is not None and after is not None else ""
    if cause.kind == "first_call":
        return say("first compilation{}", f" for {after}" if after else "")
    if cause.kind in ("shape", "dtype", "sharding"):
        return say("{} of {} changed{}", cause.kind, arg, change)
    if cause.kind == "weak_type":
        return say("{} changed between a Python scalar and an array{}", arg, change)
    if cause.kind == "static_value":
        return say("static argument {} changed{}", arg, change)
    if cause.kind == "pytree_structure":
        return say("structure of {} changed{}", arg, change)
    if cause.kind == "device":
        return say("{} is on another device{}", arg, change)
    if cause.kind == "config":
        return say("JAX option {} changed{}", arg, change)
    if cause.kind == "redefined_function":
        return say("{} is a new function object, so JAX cannot reuse its earlier compilations", arg)
    if cause.kind == "jit_options":
        return say("re-wrapped in jax.jit with a different {}{}", arg, change)
    return say("compiled again for a reason jaxmagic could not tell")


def repeated_headline(function: str, count: int, cause: Cause, *, where: str = "") -> Words:
    """The warning shown on top when one function keeps compiling for the same cause.

    >>> repeated_headline("step", 12, Cause("shape", argument="batch", before="f32[8]", after="f32[9]"), where=" on axis 0")
    '`step` compiled 12 times: the shape of `batch` changes on axis 0 — pad to a few bucket sizes'
    >>> repeated_headline("step", 5, Cause("static_value", argument="tx", detail=BUILT_AGAIN))
    '`step` compiled 5 times: `tx` is a new object, built again before each call — build it once, outside the loop'
    """
    what, fix = _REPEATED[cause.kind]
    if cause.detail == BUILT_AGAIN:
        what, fix = "{arg} is a new object, built again before each call", "build it once, outside the loop"
    arg = function if cause.kind == "redefined_function" else (cause.argument or "it")
    return say("{} compiled {} times: {} — {}", code(function), count, say(what, arg=code(arg), where=where), fix)


def shape_change(old: tuple | list | None, new: tuple | list | None) -> tuple[tuple, tuple | None]:
    """``(axes, ranks)`` of a shape change: the changed axes as ``(axis, before, after)`` when the
    rank is the same, else the ranks ``(before, after)``.

    >>> shape_change((3, 2), (4, 2)), shape_change((3,), (3, 1))
    ((((0, 3, 4),), None), ((), (1, 2)))
    """
    if old is None or new is None:
        return (), None
    if len(old) != len(new):
        return (), (len(old), len(new))
    return tuple((i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b), None


def shape_change_text(axes: tuple, ranks: tuple | None) -> str | None:
    """``axis 0: 3 → 4`` or ``rank 1 → 2``: the words for ``shape_change``'s facts.

    >>> shape_change_text(((0, 3, 4), (2, 5, 6)), None), shape_change_text((), (1, 2))
    ('axis 0: 3 → 4, axis 2: 5 → 6', 'rank 1 → 2')
    """
    if ranks is not None:
        return f"rank {ranks[0]} → {ranks[1]}"
    return ", ".join(f"axis {i}: {a} → {b}" for i, a, b in axes) or None
