"""Sentences about why a jitted function compiled: a cause's message and its one-sentence fix,
the label of its kind, and the headline of a function that keeps compiling for one cause.

The recompile watch records each ``Cause`` as facts (``kind``, ``argument``, ``before``, ``after``,
``reason``: which particular case of the kind it is, and ``facts``: the values that case names);
the sentences are written here, from those facts only.

>>> from jaxmagic.recompiles.causes import Cause
>>> str(message(Cause("shape", argument="x", before="f32[3]", after="f32[4]")))
'shape of `x` changed: f32[3] → f32[4]'
>>> str(advice(Cause("static_value", argument="n", before="2", after="3")))[:40]
'Every new value of static `n` compiles a'
"""

from __future__ import annotations

from typing import Any, Callable

from jaxmagic.words import Words, code, names, place, say
from jaxmagic.words.function_names import named
from jaxmagic.words.made_again import MADE_AGAIN_ADVICE, MADE_AGAIN_MESSAGES
from jaxmagic.words.units import times

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
    "caches_cleared": "caches cleared",
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
    "shapes": (
        "Keep the shapes of {arg} fixed: pad them (jnp.pad) or bucket them to a few sizes and mask the "
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
    "weak_within": (
        "{arg} holds weakly typed arrays on some calls and not on others (an optimizer's or solver's "
        "{init} often makes them weakly typed, and a jitted function returns them strongly typed): JAX "
        "compiles once for each. Make every array in it strongly typed, its dtype kept, before the first call: "
        "{strong}."
    ),
    "static_value": (
        "Every new value of static {arg} compiles anew: keep its values few, or pass it as an array "
        "(not static) if it only enters arithmetic."
    ),
    "pytree_structure": (
        "Keep the structure of {arg} the same on every call: the same keys, lengths and None entries."
    ),
    "passing_style": "Pass {arg} the same way on every call: always by position or always by keyword.",
    "attribute_changed": (
        "{arg} is part of the program JAX compiled, not an input: each of its values compiles once. "
        "Expected when switched on purpose (train and eval mode make two); if it changes often, hold it "
        "as an array the computation reads instead."
    ),
    "attribute_added": (
        "Give the object all its attributes when it is built: an attribute added or removed later "
        "changes its structure, and JAX compiles again."
    ),
    "attribute_built_again": (
        "Build {arg} once, outside the loop, and reuse it, rather than making a new one before each call."
    ),
    "equal_by_value": (
        "Give {cls} an {eq} and {hash} of its own, e.g. declare it {frozen}, so that an equal one compiles "
        "nothing new; or build {arg} once and reuse it."
    ),
    "built_again": (
        "Build {arg} once, outside the loop, and pass that same object on every call: each new one compiles again."
    ),
    "filter_static": (
        "Under eqx.filter_jit every value that is not an array is static, and each new value of {arg} "
        "compiles again: keep its values few, or pass it as an array ({asarray}) if it only enters arithmetic."
    ),
    "sharding": (
        "Give {arg} the same sharding on every call (jax.device_put it once), or fix it with "
        "jax.jit(..., in_shardings=...)."
    ),
    "committed_now": (
        "Give {arg} the same placement on every call: jax.device_put the arrays you start from too "
        "(or restore a checkpoint onto the sharding they had), so every call passes committed arrays."
    ),
    "device": (
        "Keep {arg} on one device: jax.device_put it once, where the computation runs, instead of "
        "moving it between calls."
    ),
    "config": "Set JAX options such as {arg} once at start-up, before the first call: each change compiles again.",
    "redefined_function": (
        "Define {arg} (and its jax.jit wrapper) once, outside the loop, so its compilation is reused."
    ),
    "defined_elsewhere": (
        "Expected after defining {arg} again (e.g. re-running its cell); a problem only if it happens in a loop."
    ),
    "wrapper_rebuilt": "Build {built} once, outside the loop, and call that.",
    "eager_body": (
        "Call {arg} from a function under jax.jit that takes what changes between calls as an argument "
        "(it compiles once); or define the body once, outside the loop, and pass what changes through the "
        "carry or the inputs."
    ),
    "partial_rebound": (
        "Make {bound} an argument of the jitted function instead of binding it with functools.partial: "
        "{fixed} compiles once for all of its values (mark it static only if it should compile per value)."
    ),
    "code_changed": ("Expected after defining {arg} again with other code (e.g. editing and re-running its cell)."),
    "jit_options": (
        "Create the jitted function once, with fixed options, outside the loop: hoist jax.jit out of the loop."
    ),
    "caches_cleared": (
        "Expected after jax.clear_caches(): every function compiles again on its next call; clear them only "
        "when memory needs it, not in a loop."
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
# Reasons that share another's fix.
_SAME_ADVICE = {
    "attribute_removed": "attribute_added",
    "uncommitted_now": "committed_now",
    "python_dtype_changed": "python_dtype",
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
    "asarray": code("jnp.asarray(...)"),
    "eq": code("__eq__"),
    "hash": code("__hash__"),
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
    "caches_cleared": ("jax.clear_caches() empties JAX's caches before each call", "clear them only when needed"),
    "unknown": ("for a reason jaxmagic cannot tell", "see JAX's explanation in the log"),
    "first_call": ("each call is a first call", "reuse one jitted function"),
}
_BUILT_AGAIN_REPEATED = ("{arg} is a new object, built again before each call", "build it once, outside the loop")
# A reason with a headline of its own, in place of its kind's.
_REPEATED_BY_REASON = {
    "built_again": _BUILT_AGAIN_REPEATED,
    "attribute_built_again": _BUILT_AGAIN_REPEATED,
    "eager_body": ("{arg} runs outside jax.jit with a new body each time", "jit the loop, or define the body once"),
}


def label(kind: str) -> str:
    """The kind as a reader says it.

    >>> label("weak_type"), label("redefined_function")
    ('weak type', 're-defined function')
    """
    return KIND_LABELS[kind]


def advice_for(kind: str, argument: str | None = None, *, variant: str | None = None, **facts: Any) -> Words:
    """The one-sentence fix for a cause kind (``variant``: a particular case such as
    ``passing_style`` or ``defined_elsewhere``, which has its own fix where it needs one).

    >>> str(advice_for("dtype", "x"))
    'Fix the dtype of `x` (e.g. `.astype(jnp.float32)` before the call) so every call passes the same one.'
    """
    variant = _SAME_ADVICE.get(variant, variant) if variant else None
    template = _ADVICE.get(variant) if variant else None
    template = template or _ADVICE.get(kind, _ADVICE["unknown"])
    return say(template, arg=named(argument) if argument else "it", **_ADVICE_CODE, **facts)


_SHARED = {"shape": "shapes", "weak_type": "weak_type", "python_dtype": "python_dtype"}  # kind -> fix for several


def plain_fix_kind(cause) -> str | None:
    """The kind of ``cause`` where it is told its kind's plain fix, one several arguments can share
    (pad a shape, pass one kind of value); else ``None``."""
    plain = (
        cause.kind in _SHARED and cause.argument and str(cause.advice) == str(advice_for(cause.kind, cause.argument))
    )
    return cause.kind if plain else None


def shared_advice(causes) -> dict[str, Words]:
    """One fix per kind for several arguments that changed at one compilation, where each alone
    would be told the same thing (kinds with fewer than two such arguments: none).

    >>> from jaxmagic.recompiles.causes import Cause
    >>> changed = [Cause("shape", argument=a, before="f32[3]", after="f32[2]") for a in ("sample", "state[0]")]
    >>> str(shared_advice(changed)["shape"])[:52]
    'Keep the shapes of `sample` and `state[0]` fixed: pa'
    """
    arguments: dict[str, list[str]] = {}
    for cause in causes:
        kind = plain_fix_kind(cause)
        if kind is not None and cause.argument not in arguments.setdefault(kind, []):
            arguments[kind].append(cause.argument)
    return {
        kind: say(_ADVICE[_SHARED[kind]], arg=names(named), **_ADVICE_CODE)
        for kind, named in arguments.items()
        if len(named) > 1
    }


def advice(cause) -> Words:
    """A cause's fix, from its kind, its reason and its argument.

    >>> from jaxmagic.recompiles.causes import Cause
    >>> str(advice(Cause("redefined_function", argument="kernel", reason="wrapper_rebuilt", facts=(("wrapper", "jax.vmap"),))))
    'Build `jax.jit(jax.vmap(kernel))` once, outside the loop, and call that.'
    """
    if cause.reason == "wrapper_rebuilt":
        return advice_for(cause.kind, cause.argument, variant=cause.reason, built=code(_rebuilt(cause)))
    if cause.reason in MADE_AGAIN_ADVICE:
        return MADE_AGAIN_ADVICE[cause.reason](cause, dict(cause.facts))
    if cause.reason == "attribute_built_again" and dict(cause.facts).get("by_identity"):
        kind = dict(cause.facts)["object"]
        return advice_for(
            cause.kind,
            cause.argument,
            variant="equal_by_value",
            cls=code(kind),
            frozen=code("@dataclasses.dataclass(frozen=True)"),
        )
    within = dict(cause.facts).get("within") if cause.reason == "weak_kind" else None
    if within:
        return advice_for(
            cause.kind,
            within,
            variant="weak_within",
            init=code("init"),
            strong=code(f"{within} = jax.tree.map(lambda x: jnp.asarray(x, x.dtype), {within})"),
        )
    if cause.reason == "partial_rebound":
        facts = dict(cause.facts)
        bound = facts["bound"]
        return advice_for(
            cause.kind,
            cause.argument,
            variant=cause.reason,
            bound=names(bound) if len(bound) <= 3 else say("what it binds"),
            fixed=code(f"jax.jit({facts['inner']})"),
        )
    return advice_for(cause.kind, cause.argument, variant=cause.reason)


def _rebuilt(cause) -> str:
    """The jitted wrapper a re-built one should be built as once: ``jax.jit(jax.vmap(f))``."""
    facts = dict(cause.facts)
    wrapper, name = facts["wrapper"], facts.get("inner", cause.argument)
    return f"jax.jit({wrapper}({name}))" if wrapper.startswith("jax.") else f"jax.jit({wrapper}({name}, ...))"


def message(cause) -> Words:
    """A cause in one sentence: its reason's own where it has one, else its kind's, and where it was
    compared with a compilation nobody watched, that too."""
    write = _MESSAGES.get(cause.reason) if cause.reason else None
    said = write(cause, dict(cause.facts)) if write is not None else default_message(cause)
    if cause.unwatched:
        said = said + say(", compared with a compilation made while nothing watched")
    return said


def default_message(cause) -> Words:
    """A sentence for a cause built from its kind, argument and before/after.

    >>> from jaxmagic.recompiles.causes import Cause
    >>> str(default_message(Cause("static_value", argument="n", before="2", after="3")))
    'static argument `n` changed: 2 → 3'
    """
    arg, before, after = code(cause.argument), cause.before, cause.after
    change = f": {before} → {after}" if before is not None and after is not None else ""
    kind = cause.kind
    if kind == "first_call":
        return say("first compilation{}", f" for {after}" if after else "")
    if kind in ("shape", "dtype", "sharding"):
        return say("{} of {} changed{}", kind, arg, change)
    template = _KIND_SENTENCES.get(kind, "compiled again for a reason jaxmagic could not tell")
    return say(template, arg, change)


_KIND_SENTENCES = {
    "weak_type": "{} changed between a Python scalar and an array{}",
    "static_value": "static argument {} changed{}",
    "pytree_structure": "structure of {} changed{}",
    "device": "{} is on another device{}",
    "config": "JAX option {} changed{}",
    "redefined_function": "{} is a new function object, so JAX cannot reuse its earlier compilations",
    "jit_options": "re-wrapped in jax.jit with a different {}{}",
    "caches_cleared": "compiled again: jax.clear_caches() emptied JAX's caches since its last compilation",
}


def _with_article(noun: str) -> str:
    """``a Python int``, ``an i32[] array``, ``an f32[3] array`` (as the word is said aloud).

    >>> _with_article("i32[] array"), _with_article("Python int"), _with_article("bf16[2] array")
    ('an i32[] array', 'a Python int', 'a bf16[2] array')
    """
    spoken_vowel = noun[:1].lower() in "aeiou" or (noun[:1] in "fFsS" and noun[1:2].isdigit())
    return f"{'an' if spoken_vowel else 'a'} {noun}"


def kind_of_value(leaf) -> str:
    """What kind of value a leaf (a ``LeafType``) was: ``a Python int (weak i32[])``, ``an f32[3] array``."""
    if leaf.weak and leaf.origin not in ("array", "numpy"):
        return _with_article(f"Python {leaf.origin} (weak {leaf.type_text})")
    if leaf.weak:
        return _with_article(f"weakly typed {leaf.type_text}")
    return _with_article(f"{leaf.type_text} array")


def _key_kind(typed: bool) -> str:
    return "typed key (jax.random.key)" if typed else "raw uint32 key (jax.random.PRNGKey)"


def _array_or_not(array: bool, text: str | None) -> str:
    return "an array" if array else f"{text}, not an array"


def _placement(committed: bool, device: str | None) -> str:
    return f"committed to {device}" if committed else "uncommitted"


_FILTER_STATIC = " (static under eqx.filter_jit: a non-array is part of the compiled code's key)"

# One sentence per reason: (cause, its facts as a dict) -> Words.
_MESSAGES: dict[str, Callable[[Any, dict], Words]] = {
    "passed_now": lambda c, f: say("{} is passed now and was not before", code(c.argument)),
    "not_passed_now": lambda c, f: say("{} was passed before and is not now", code(c.argument)),
    "wrapper_rebuilt": lambda c, f: say(
        "{} is the same function, but the {} wrapper around it was built anew, "
        "so jax.jit sees a new function object and compiles again",
        code(f.get("inner", c.argument)),
        f["wrapper"],
    ),
    "partial_rebound": lambda c, f: say(
        "the functools.partial around {} was built anew and binds other values: {} → {}; "
        "jax.jit sees a new function object and compiles again",
        code(f["inner"]),
        c.before,
        c.after,
    ),
    "redefined_function": lambda c, f: say(
        "{} is a new function object{}{}: JAX caches compilations per function object, so it compiles anew",
        code(c.argument),
        ", alike in its code and in every value it holds" if f.get("alike") else "",
        say(" (defined at {})", place(f["defined_at"])) if f.get("defined_at") is not None else "",
    ),
    "made_again_alike": lambda c, f: say(
        "{} returned a new {}, alike in its code and in every value it holds; JAX caches compilations "
        "per function object, so it compiles anew",
        code(f["factory"]),
        code(c.argument),
    ),
    "code_changed": lambda c, f: say(
        "{} was defined again with other code{}: a new program, compiled anew",
        code(c.argument),
        say(" ({})", place(f["defined_at"])) if f.get("defined_at") is not None else "",
    ),
    "redefined_repeatedly": lambda c, f: say(
        "{} is a new function object defined on the same line as an earlier one: "
        "it is being re-defined repeatedly, so JAX cannot reuse its compilations",
        code(c.argument),
    ),
    "x64_width": lambda c, f: say(
        "JAX option {} changed: {} → {} ({} is the same Python {}, now {} instead of {})",
        code("jax_enable_x64"),
        c.before,
        c.after,
        code(f["name"]),
        f["origin"],
        f["now"],
        f["was"],
    ),
    "passing_style": lambda c, f: say(
        "{} was passed {} this time and {} before; JAX keys its cache on how each argument is passed",
        code(c.argument),
        c.after,
        c.before,
    ),
    "left_at_default": lambda c, f: say(
        "{} was {} this time and {} before", code(c.argument), "left at its default", "passed explicitly"
    ),
    "passed_explicitly": lambda c, f: say(
        "{} was {} this time and {} before", code(c.argument), "passed explicitly", "left at its default"
    ),
    "attribute_added": lambda c, f: say("{} was {} ({})", code(c.argument), "added", c.after),
    "attribute_removed": lambda c, f: say("{} was {} ({})", code(c.argument), "removed", c.before),
    "attribute_built_again": lambda c, f: (
        say(
            "attribute {} is a new {} built again, alike in every visible part{}; it is static, and {} has no "
            "{} of its own, so a new one never equals the old: JAX compiles again",
            code(c.argument),
            code(f["object"]),
            say(" ({})", code(f["text"])) if f.get("text") and f["text"] != f["object"] else "",
            code(f["object"]),
            code("__eq__"),
        )
        if f.get("by_identity")
        else say(
            "attribute {} is a new {} built again, alike in every visible part; "
            "JAX compares static values with == (for most objects: are they the same object)",
            code(c.argument),
            f["object"],
        )
    ),
    "attribute_changed": lambda c, f: say("attribute {} changed: {} → {}", code(c.argument), c.before, c.after),
    "structure_detail": lambda c, f: say("structure of {} changed: {}", code(c.argument), c.detail),
    "now_before": lambda c, f: say("structure of {} changed: now {}, before {}", code(c.argument), c.after, c.before),
    "key_kind": lambda c, f: say(
        "{} is a {} now and was a {} before", code(c.argument), _key_kind(f["typed_now"]), _key_kind(not f["typed_now"])
    ),
    "key_shape": lambda c, f: say("number of keys in {} changed: {} → {}", code(c.argument), c.before, c.after),
    "filter_array": lambda c, f: say(
        "{} is {} now and was {} before; under eqx.filter_jit an array is traced and anything "
        "else is part of the compiled code's key",
        code(c.argument),
        _array_or_not(f["array_now"], c.after),
        _array_or_not(not f["array_now"], c.before),
    ),
    "axes_changed": lambda c, f: say(
        "shape of {} changed: {} → {}{}", code(c.argument), c.before, c.after, f" ({c.detail})" if c.detail else ""
    ),
    "dtype_changed": lambda c, f: say("dtype of {} changed: {} → {}", code(c.argument), f["was"], f["now"]),
    "python_dtype": lambda c, f: say(
        "{} is {} now and was {} before", code(c.argument), kind_of_value(f["now"]), kind_of_value(f["was"])
    ),
    "weak_kind": lambda c, f: say(
        "{} is {} now and was {} before; JAX compiles weakly typed "
        + ("and other arrays" if f["now"].origin == f["was"].origin == "array" else "Python scalars and arrays")
        + " separately",
        code(c.argument),
        kind_of_value(f["now"]),
        kind_of_value(f["was"]),
    ),
    "built_again": lambda c, f: say(
        "{} is a new {} built again for this call, alike in every visible part to the one before{}; "
        "JAX compares static values with == and hash, which for a {} means the very same object",
        code(c.argument),
        f["object"],
        _FILTER_STATIC if f.get("filtered") else "",
        f["object"],
    ),
    "unequal_alike": lambda c, f: say(
        "static argument {} is a new object that is not equal to the old one ({}); "
        "JAX compares static arguments with == and hash",
        code(c.argument),
        c.after,
    ),
    "filter_static": lambda c, f: say("{}: {} → {}{}", code(c.argument), c.before, c.after, _FILTER_STATIC),
    "committed_now": lambda c, f: say(
        "{} is {} now and was {} before: JAX compiles for a committed array's sharding",
        code(c.argument),
        _placement(True, c.after),
        _placement(False, None),
    ),
    "uncommitted_now": lambda c, f: say(
        "{} is {} now and was {} before: JAX compiles for a committed array's sharding",
        code(c.argument),
        _placement(False, None),
        _placement(True, c.before),
    ),
    "first_explained": lambda c, f: say("first compilation of {}", code(f["function"])),
    "first_seen": lambda c, f: say("first compilation of {} seen", code(f["function"])),
    "first_for": lambda c, f: say("first compilation of {} for {}", code(f["function"]), c.after),
    "context_changed": lambda c, f: say("a JAX setting or context manager (mesh, precision, x64...) changed"),
    "explained_by_jax": lambda c, f: say("JAX compiled again; its explanation is in {}", code("raw")),
    "type_changed": lambda c, f: say("the type of {} changed: {} → {}", code(c.argument), c.before, c.after),
    "arguments_unseen": lambda c, f: say(
        "{} compiled again; jaxmagic could not see this call's arguments "
        "(compiled ahead of time, or by a transformation other than jax.jit)",
        code(f["function"]),
    ),
    "same_arguments": lambda c, f: say(
        "{} compiled again with the same arguments, options and settings as "
        "before: JAX's in-memory caches no longer held it (jax.clear_caches(), an "
        "evicted entry, or a jitted function created again)",
        code(f["function"]),
    ),
    "compiled_unwatched": lambda c, f: say(
        "{} was compiled before while nothing watched, with another argument structure, static value or "
        "jit option; jaxmagic did not see that call, so it cannot say which ({} asks JAX)",
        code(f["function"]),
        code("--explain"),
    ),
}
_MESSAGES["eager_body"] = lambda c, f: say(
    "{} was given a new body: run outside jax.jit, JAX compiles {} again for every new function given to "
    "it, and a lambda or function defined in the loop is a new one each time",
    code(c.argument),
    code(c.argument),
)
_MESSAGES["caches_cleared"] = lambda c, f: say(
    "{} compiled again: jax.clear_caches() emptied JAX's caches since its last compilation", code(f["function"])
)
_MESSAGES.update(MADE_AGAIN_MESSAGES)
_MESSAGES["defined_elsewhere"] = _MESSAGES["redefined_function"]  # the same sentence, another fix
_MESSAGES["python_dtype_changed"] = _MESSAGES["dtype_changed"]
# The reasons a cause can give: each names a sentence above.
REASONS = tuple(_MESSAGES)


def repeated_headline(function: str, count: int, cause, *, where: str = "") -> Words:
    """The warning shown on top when one function keeps compiling for the same cause.

    >>> from jaxmagic.recompiles.causes import Cause
    >>> str(repeated_headline("step", 12, Cause("shape", argument="batch", before="f32[8]", after="f32[9]"), where=" on axis 0"))
    '`step` compiled 12 times: the shape of `batch` changes on axis 0 — pad to a few bucket sizes'
    >>> str(repeated_headline("step", 5, Cause("static_value", argument="tx", reason="built_again", facts=(("object", "function"),))))
    '`step` compiled 5 times: `tx` is a new object, built again before each call — build it once, outside the loop'
    """
    what, fix = _REPEATED_BY_REASON.get(cause.reason or "") or _REPEATED[cause.kind]
    arg = function if cause.kind == "redefined_function" else (cause.argument or "it")
    return say("{} compiled {} times: {} — {}", code(function), count, say(what, arg=code(arg), where=where), fix)


def budget_headline(function: str, count: int, limit: int) -> Words:
    """The first line of ``expect_compiles``'s failure.

    >>> str(budget_headline("scale", 2, 1))
    '`scale` compiled 2 times in the block; expected at most 1 time.'
    """
    return say("{} compiled {} in the block; expected at most {}.", code(function), times(count), times(limit))


def budget_scope(function: str, limit: int) -> Words:
    """What ``expect_compiles`` watches, as a log's scope.

    >>> str(budget_scope("step", 1))
    'the block expecting `step` ≤ 1 time'
    """
    return say("the block expecting {} ≤ {}", code(function), times(limit))
