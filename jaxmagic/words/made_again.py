"""Sentences about a function compiled again because it is a new object, in the user's terms:
what differs (a closure's captured values and defaults, the values the user's line that built it
read: ``make_step`` returned a new closure over ``lr``: 0.1 → 0.01), and the way out each
library documents (Optax's ``inject_hyperparams``, BlackJAX's ``build_kernel``, NumPyro's own
loops); a compilation a library made inside the user's call said of that call.

>>> from jaxmagic.recompiles.causes import Cause
>>> cause = Cause("redefined_function", argument="step", reason="captured_changed",
...               facts=(("factory", "make_step"), ("returned", True), ("changes", (("lr", "lr", "captured", "0.1", "0.01"),))))
>>> str(MADE_AGAIN_MESSAGES["captured_changed"](cause, dict(cause.facts))).split(";")[0]
'`make_step` returned a new closure over `lr`: 0.1 → 0.01'
"""

from __future__ import annotations

from typing import Any, Callable

from jaxmagic.words import Words, code, names, place, say
from jaxmagic.words.function_names import named

_ADVICE = {
    "captured_changed": (
        "Define {fn} once, outside the loop, with {names} as {arguments} rather than built into it: "
        "it then compiles once for all of {their} values (mark one static only if each value should compile anew)."
    ),
    "made_again_alike": "Call {factory} once, outside the loop, and reuse the function it returns.",
    "inject_hyperparams": (
        "For a learning-rate sweep, build the optimizer once, outside the loop, as {code}, and set the rate "
        "in its state before each run ({state}): one compilation then serves every rate."
    ),
    "build_kernel": (
        "Build the sampler once and jit its step once; to vary {names}, jit its kernel once, "
        "{code}, and pass {them} on each call (its arguments: {parameters})."
    ),
    "more_samples": (
        "Expected: every call of {arg} compiles {library}'s sampling loop once, whether or not {root} is built "
        "again; draw more samples in one call ({num_samples}) rather than calling it in a loop."
    ),
    "jit_update": (
        "Every call of {arg} compiles its loop once: to train in a loop of your own, jit the update once, "
        "{code}, and call it with the state {init} returns."
    ),
    "library_call": (
        "Expected: {arg} builds what it compiles anew on every call; call it less often, or keep what it builds."
    ),
    "build_once": (
        "Build {root} once, outside the loop, and reuse it: each one built anew holds new functions, "
        "which JAX compiles anew."
    ),
    "sweep": (
        "Expected while {names} change{s}: {root} built with each new value holds new functions, which JAX "
        "compiles once per value (a sweep compiles once per setting); a problem only where {root} is built "
        "again for a value it had."
    ),
}


def advise(variant: str, cause, **facts: Any) -> Words:
    """The fix ``variant`` for ``cause``, its argument as ``{arg}``."""
    return say(_ADVICE[variant], arg=named(cause.argument) if cause.argument else "it", **facts)


def label(kind: str) -> str:
    """A cause's kind in words: ``static value``.

    >>> label("static_value")
    'static value'
    """
    return kind.replace("_", " ")


def library_advice(cause, facts: dict) -> Words:
    """The fix a library documents for a function it built, built again (``library_fixes``)."""
    fix = facts.get("fix")
    root = facts.get("root") or (cause.argument or "it").split(".", 1)[0]
    read = [name for name, _, _ in facts.get("reads", ())]
    way = fix.way if fix is not None else "build_once"
    if way == "build_kernel" and fix is not None:
        return advise(
            way,
            cause,
            names=names(read) if read else say("its parameters"),
            them="it" if len(read) == 1 else "them",
            code=code(fix.code),
            parameters=names(fix.parameters),
        )
    if way == "inject_hyperparams" and fix is not None:
        state = code("opt_state.hyperparams['learning_rate'] = jnp.asarray(lr)")
        return advise(way, cause, code=code(fix.code), state=state)
    if read:  # the line read other values: a new object per setting is what the user asked for
        return advise("sweep", cause, names=names(read), s="" if len(read) > 1 else "s", root=code(root))
    return advise("build_once", cause, root=code(root))


def inside_library_advice(cause, facts: dict) -> Words:
    """The fix for a compilation a library made inside the user's call of it (``mcmc.run``)."""
    fix, root = facts.get("fix"), facts.get("root") or "it"
    way = fix.way if fix is not None else "library_call"
    if way == "jit_update":
        return advise(way, cause, code=code(f"jax.jit({root}.update)"), init=code(f"{root}.init"))
    if way == "more_samples":
        return advise(
            way,
            cause,
            library=facts.get("library") or "the library",
            root=code(root),
            num_samples=code("num_samples"),
        )
    return advise("library_call", cause)


def _inside_library(cause, facts: dict) -> Words:
    library = facts.get("library") or "a library"
    if facts.get("built_again"):
        return say(
            "{} compiled one of {}'s functions again: {} builds it anew on every call, and JAX compiles "
            "each new function",
            code(cause.argument),
            library,
            code(cause.argument),
        )
    change = f": {cause.before} → {cause.after}" if cause.before is not None and cause.after is not None else ""
    if cause.kind == "redefined_function":  # what the call runs inside was built again (an SVI, its optimizer)
        return say("{} compiled again what it runs inside, built anew{}", code(cause.argument), change)
    return say(
        "{} compiled one of {}'s functions again, for another {}{}",
        code(cause.argument),
        library,
        label(cause.kind),
        change,
    )


def _changes(changes) -> Words:
    """``over `lr`: 0.1 → 0.01 and with default `n`: 1 → 2``: what a function made again holds now
    (``over `optimizer`, which holds `step_size`: …`` where the value is inside what it captures)."""
    said = Words()
    for i, (name, inner, role, before, after) in enumerate(changes):
        if i:
            said = said + (" and " if i == len(changes) - 1 else ", ")
        if inner != name:
            said = said + say(
                "{} {}, which holds {}: {} → {}", _ROLES.get(role, "holding"), code(name), code(inner), before, after
            )
        else:
            said = said + say("{} {}: {} → {}", _ROLES.get(role, "holding"), code(name), before, after)
    return said


_ROLES = {
    "captured": "over",
    "default": "with default",
    "bound": "binding",
    "self": "bound to",
    "global": "reading the global",
}


def _captured_changed(cause, facts: dict) -> Words:
    factory = facts.get("factory")
    changes = _changes(facts["changes"])
    if factory and facts.get("returned"):
        head = say("{} returned a new closure {}", code(factory), changes)
    elif factory:
        head = say("{} defined {} anew, {}", code(factory), code(cause.argument), changes)
    else:
        defined = say(" (defined at {})", place(facts["defined_at"])) if facts.get("defined_at") is not None else ""
        head = say("{} was made again{} {}", code(cause.argument), defined, changes)
    return head + say("; JAX caches compilations per function object, so it compiles anew")


def _built_again_by_library(cause, facts: dict) -> Words:
    """``nuts.step`` built again by the user's line, with what that line read (or what the
    function holds) now."""
    return say(
        "{} is a new function: {}; JAX caches compilations per function object", code(cause.argument), _built_by(facts)
    )


def _captured_built_again(cause, facts: dict) -> Words:
    """A closure over an object its maker built again, said by the line that built it."""
    factory = facts.get("factory")
    if factory and facts.get("returned"):
        maker = say("{} returned a new closure", code(factory))
    elif factory:
        maker = say("{} defined {} anew", code(factory), code(cause.argument))
    else:
        maker = say("{} is a new closure", code(cause.argument))
    return say(
        "{} over {}: {}; JAX caches compilations per function object", maker, code(facts["captured"]), _built_by(facts)
    )


def _built_by(facts: dict) -> Words:
    """``nuts = blackjax.nuts(...)`` (line 7) built it again, with `step_size`: 0.1 → 0.2``."""
    read, held = facts.get("reads", ()), facts.get("held", ())
    if read:
        now = say(", with {}", _pairs(read))
    elif held:
        now = say(", holding other values: {}", _pairs(held))
    else:
        now = say(", alike in every value it holds")
    built, built_at = facts.get("built"), facts.get("built_at")
    if built:
        by = say("{} ({}) built it again", code(built), place(built_at))
    else:
        by = say("{} built it again", facts.get("library") or "your code")
    return by + now


def _pairs(pairs) -> Words:
    said = Words()
    for i, (name, before, after) in enumerate(pairs):
        if i:
            said = said + (" and " if i == len(pairs) - 1 else ", ")
        said = said + (say("{}: {} → {}", code(name), before, after) if name else say("{} → {}", before, after))
    return said


def captured_advice(cause, facts: dict) -> Words:
    changed = list(dict.fromkeys(name for name, *_ in facts["changes"]))
    several = len(changed) > 1
    return advise(
        "captured_changed",
        cause,
        names=names(changed),
        fn=named(cause.argument),
        arguments="arguments" if several else "an argument",
        their="their" if several else "its",
    )


MADE_AGAIN_ADVICE: dict[str, Callable[[Any, dict], Words]] = {
    "captured_changed": captured_advice,
    "made_again_alike": lambda c, f: advise("made_again_alike", c, factory=code(f["factory"])),
    "built_again_by_library": library_advice,
    "captured_built_again": library_advice,
    "inside_library_call": inside_library_advice,
}
MADE_AGAIN_MESSAGES: dict[str, Callable[[Any, dict], Words]] = {
    "captured_changed": _captured_changed,
    "built_again_by_library": _built_again_by_library,
    "captured_built_again": _captured_built_again,
    "inside_library_call": _inside_library,
}
