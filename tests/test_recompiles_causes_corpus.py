"""Every recompilation cause, over a corpus of code written the way JAX, Flax, Equinox, Optax,
Diffrax, Orbax, chex and jaxtyping users write it (``recompile_cases.py``), checked against JAX
itself:

(a) each cause names a path the user wrote: a variable of the user's program or a parameter of
    their function, followed by attributes and keys (``stepsize_controller.rtol``,
    ``params['w']``), and that path evaluates where it is a variable; no flattened index, no
    ``args[0]``, no memory address anywhere in what is said;
(b) each cause's kind is one that JAX's own explanation (``jax_explain_cache_misses``) gives for
    that compilation or, where JAX traced nothing new and so explains nothing, one that the
    argument mapping JAX logs (``jax_log_compiles``) shows changed;
(c) jaxmagic counts as many compilations of each function as JAX logs;
(d) each cause says what differs: a function compiled anew because it is a new object names the
    value that differs, old → new (a captured value, a default, what a partial binds, what the
    user's line that built it read), its code, or says that it is alike in all of them;
(e) nothing shown names a library's insides: no path into an installed package, no ``_src``
    folder, no file but the user's, no name of a library's that starts with an underscore, and a
    function a library built is named as the user's code names it.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import sys
import types
import warnings
from dataclasses import dataclass

import jax
import pytest
from recompile_cases import CASES, IMPORTS, PRELUDE, RecompileCase

from jaxmagic.recompiles import watch
from jaxmagic.recompiles.attribution import base_name
from jaxmagic.recompiles.explanations import explained_function, parse_explanation
from jaxmagic.recompiles.watch import watch_recompiles
from jaxmagic.render.theme import escape

_COMPILING = re.compile(r"^Compiling (?:jit\()?(?P<name>[^\s()]+)\)? with global shapes and types (?P<types>.*)$", re.S)
_MAPPING = re.compile(r"Argument mapping: (?P<mapping>.*?)\.?$", re.S)
_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.\w+|\[(?:'[^']*'|\"[^\"]*\"|\d+)\])*$")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_NEVER_IN_WORDS = ("<flat index", "args[", "kwargs[", "PjitFunction array", "dynamic_nodonate")
_PRIVATE_NAME = re.compile(r"(?<![\w])_[A-Za-z]\w*")
_FILE_LINE = re.compile(r"([\w.-]+\.py):\d+")
_USERS_FILES = {"user_program.py", "earlier.py"}


class JaxSays(logging.Handler):
    """What JAX logs: each compilation (``jax_log_compiles``) with its input types and argument
    mapping, and its explanation of each tracing-cache miss (``jax_explain_cache_misses``)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.compiled: dict[str, list[Compilation]] = {}
        self.explained: set[str] = set()  # functions JAX explains at all (its users' own files)
        self.pending: dict[str, str] = {}
        self.before: dict[str, int] = {}  # compilations made before anything watched

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("TRACING CACHE MISS"):
            name = explained_function(message) or ""
            self.explained.add(name)
            self.pending[name] = message
            return
        match = _COMPILING.match(message)
        if match:
            name = match["name"]
            mapping = _MAPPING.search(match["types"])
            types = match["types"][: mapping.start()] if mapping else match["types"]
            compilation = Compilation(self.pending.pop(name, None), types, mapping["mapping"] if mapping else "")
            self.compiled.setdefault(name, []).append(compilation)


@dataclass(frozen=True)
class Compilation:
    explanation: str | None  # JAX's explanation of the trace it compiles (None: no new trace, or none given)
    types: str
    mapping: str


def run_case(case: RecompileCase, directory) -> tuple[object, dict, JaxSays]:
    """Run one case under a watch with JAX's explanations on: ``(log, namespace, what JAX logged)``."""
    for module in case.needs:
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    path = directory / "user_program.py"
    path.write_text(case.source)
    module = types.ModuleType("user_program")
    module.__file__ = str(path)
    sys.modules["user_program"] = module  # dataclasses look their module up
    namespace = module.__dict__
    namespace["directory"] = str(directory)
    exec(PRELUDE + "\n".join(IMPORTS[m] for m in case.needs), namespace)
    jax.clear_caches()
    watch.forget()
    handler, logger = JaxSays(), logging.getLogger("jax")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case.before:  # on disk, as a notebook's earlier cell is in Python's linecache
                (directory / "earlier.py").write_text(case.before)
                exec(compile(case.before, str(directory / "earlier.py"), "exec"), namespace)
            handler.before = {name: len(found) for name, found in handler.compiled.items()}
            with watch_recompiles(explain=True) as log:
                exec(compile(case.source, str(path), "exec"), namespace)
    finally:
        jax.config.update("jax_explain_cache_misses", False)
        jax.config.update("jax_log_compiles", False)
        logger.setLevel(level)
        logger.removeHandler(handler)
    return log, namespace, handler


def parameter_names(namespace: dict) -> set[str]:
    """The parameters of every function of the user's program, and of what they call through a
    library (a Linen module's ``__call__`` behind ``model.apply``, Diffrax's ``diffeqsolve``)."""
    names = set()
    candidates = list(namespace.values())
    candidates += [type(v).__call__ for v in namespace.values() if hasattr(v, "init_with_output")]  # Linen
    if "diffrax" in namespace:
        candidates.append(namespace["diffrax"].diffeqsolve)
    for value in candidates:
        if not callable(value) or inspect.isclass(value) or inspect.ismodule(value):
            continue
        for function in (value, getattr(value, "__wrapped__", None), getattr(value, "fun", None)):
            try:
                names.update(inspect.signature(function).parameters)
            except (TypeError, ValueError):
                continue
    return names


def path_problems(cause, event, namespace: dict, parameters: set[str]) -> list[str]:
    """What is wrong with the way a cause names its argument (rule a)."""
    words = " ".join(str(part) for part in (cause.message, cause.advice, cause.before, cause.after, cause.argument))
    problems = [f"says {bad!r}" for bad in _NEVER_IN_WORDS if bad in words]
    if _ADDRESS.search(words):
        problems.append(f"shows a memory address: {words[:200]}")
    argument = cause.argument
    if argument is None or cause.kind in ("config", "jit_options", "first_call"):
        return problems
    if cause.kind == "redefined_function":
        return problems + ([] if argument in (event.function, base_name(event.jax_name)) else [f"names {argument}"])
    if not _PATH.match(argument):
        return problems + [f"`{argument}` is not a path the user can write"]
    root = re.match(r"\w+", argument).group(0)
    if root in namespace and not inspect.ismodule(namespace[root]):
        try:
            eval(argument, dict(namespace))
        except Exception as exc:
            if root not in parameters:
                problems.append(f"`{argument}` does not evaluate in the user's namespace: {exc!r}")
    elif root not in parameters:
        problems.append(f"`{root}` is neither a variable nor a parameter of the user's code")
    return problems


_TYPES = {"shape", "dtype", "weak_type"}
_PLACEMENT = {"sharding", "device"}
_PROGRAM = {"static_value", "pytree_structure", "redefined_function", "jit_options", "config"}


def kinds_explained(raw: str, types_changed: bool) -> set[str] | None:
    """The kinds JAX's explanation text allows (JAX 0.10's wording and 0.8's)."""
    if "never seen function" in raw:
        return {"first_call", "redefined_function"}
    if "Tracing context doesn't match" in raw or "different tracing context" in raw:  # JAX 0.10 / 0.8
        return {"config"} | (_TYPES if types_changed else set())
    if "different value of static" in raw:  # JAX 0.8: static args / kwargs
        return {"static_value"} | (_TYPES if types_changed else set())
    if "different static_argnums" in raw:
        return {"jit_options"}
    if "different number of args and kwargs" in raw:
        return {"pytree_structure"}
    if "different input pytree" in raw:
        lines = [line for line in raw.splitlines() if "* at input path" in line or "* at args" in line]
        kinds = {"static_value" if "Static(val=" in line else "pytree_structure" for line in lines}
        return (kinds or {"pytree_structure"}) | (_TYPES if types_changed else set())
    if "different input types" in raw:
        return {cause.kind for cause in parse_explanation(raw)}
    return None


def kinds_jax_gives(compilations: list[Compilation], index: int, explains_it: bool) -> set[str] | None:
    """The cause kinds JAX allows for the ``index``-th compilation of a function: from its
    explanation (which stops at the first kind of difference it finds: the program's structure
    before its types); where it gives none, from what it logged compiling: other input types,
    another argument mapping. ``None`` where JAX tells nothing at all."""
    now = compilations[index]
    earlier = compilations[:index]
    types_changed = bool(earlier) and all(c.types != now.types for c in earlier)
    mapping_changed = bool(earlier) and all((c.types, c.mapping) != (now.types, now.mapping) for c in earlier)
    if now.explanation is not None:
        return kinds_explained(now.explanation, types_changed)
    if index == 0:
        return {"first_call"}
    placement = _PLACEMENT
    if mapping_changed and any(
        c.mapping.count("UnspecifiedValue") != now.mapping.count("UnspecifiedValue") for c in earlier
    ):
        placement = {"sharding"}  # committed now and not before (or back): JAX's in_shardings changed
    if explains_it:  # JAX explains this function's traces: no explanation, no new trace
        return placement if mapping_changed else None
    # A library's function, which JAX does not explain: what its compilation log shows.
    if types_changed and any(c.types.count("Array(") != now.types.count("Array(") for c in earlier):
        return _PROGRAM | _TYPES  # another number of inputs: the arguments' structure changed
    if types_changed:
        return _TYPES
    return placement if mapping_changed else _PROGRAM


def verdict(case: RecompileCase, directory) -> tuple[list[str], object, dict]:
    """Every way jaxmagic's account of a case disagrees with JAX's or names what the user did
    not write (empty when it is right), the log, and the namespace the case ran in."""
    log, namespace, jax_says = run_case(case, directory)
    problems = []
    parameters = parameter_names(namespace)
    seen: dict[str, int] = {}
    for event in log.events:
        name = base_name(event.jax_name)
        watched = seen[name] = seen.get(name, -1) + 1
        index = jax_says.before.get(name, 0) + watched
        compilations = jax_says.compiled.get(name, [])
        if index >= len(compilations):
            continue  # counted below
        allowed = kinds_jax_gives(compilations, index, name in jax_says.explained)
        kinds = event.kinds
        if allowed is None:
            problems.append(f"{event.function} #{index}: JAX tells nothing, jaxmagic says {kinds}")
        elif kinds[0] not in allowed or not set(kinds) <= allowed | _TYPES | _PLACEMENT:
            problems.append(f"{event.function} #{index}: kinds {kinds}, JAX says {sorted(allowed)}")
        for cause in event.causes:
            problems.extend(
                f"{event.function} #{index}: {p}" for p in path_problems(cause, event, namespace, parameters)
            )
    for name, count in seen.items():
        logged = len(jax_says.compiled.get(name, [])) - jax_says.before.get(name, 0)
        if count + 1 != logged:
            problems.append(f"{name}: jaxmagic counts {count + 1}, JAX compiled {logged}")
    expected = {name for name in jax_says.compiled if name in parameters or name in namespace or name == "diffeqsolve"}
    missed = {name for name in expected - set(seen) if len(jax_says.compiled[name]) > jax_says.before.get(name, 0)}
    problems.extend(f"{name}: JAX compiled it, jaxmagic saw nothing" for name in missed)
    return problems, log, namespace


def what_differs_problems(event) -> list[str]:
    """Rule (d): a function compiled anew as a new object says what differs between the two."""
    problems = []
    for cause in event.causes:
        if cause.kind == "unknown":
            problems.append(f"says it cannot tell: {cause.message}")
        if cause.kind != "redefined_function":
            continue
        told = cause.before is not None and cause.after is not None and cause.before != cause.after
        if not told and "alike" not in str(cause.message) and cause.reason != "wrapper_rebuilt":
            problems.append(f"a new function object, with no word on what differs: {cause.message}")
    return problems


def internals_problems(log, namespace: dict) -> list[str]:
    """Rule (e): what a reader sees (the log's text and HTML, every cause and its advice, every
    program difference) names nothing inside a library."""
    shown = [log.to_text(), log.to_html()]
    for raw in {event.raw for event in log.events if event.raw}:  # JAX's own explanation, quoted as such
        shown = [text.replace(escape("JAX: " + raw), "").replace(escape(raw), "") for text in shown]
    for event in log.events:
        shown += [event.function, event.program_diff or "", str(event.defined_at or "")]
        shown += [str(c.message) for c in event.causes] + [str(c.advice) for c in event.causes]
    text = "\n".join(shown)
    problems = [f"shows {bad!r}" for bad in ("/_src/", "site-packages", "dist-packages") if bad in text]
    problems += [f"names a library's file {f!r}" for f in set(_FILE_LINE.findall(text)) - _USERS_FILES]
    problems += [f"names a library's private {n!r}" for n in set(_PRIVATE_NAME.findall(text)) - set(namespace)]
    return problems


@pytest.mark.parametrize("case", CASES, ids=[f"{c.library}: {c.name}" for c in CASES])
def test_each_cause_says_what_differs_in_the_users_terms(case, tmp_path):
    log, namespace, _ = run_case(case, tmp_path)
    problems = [f"{e.function}: {p}" for e in log.events for p in what_differs_problems(e)]
    problems += internals_problems(log, namespace)
    assert not problems, "\n".join(problems) + "\n\n" + log.to_text()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.library}: {c.name}" for c in CASES])
def test_each_cause_names_the_users_path_with_a_kind_jax_agrees_with(case, tmp_path):
    problems, log, _ = verdict(case, tmp_path)
    assert not problems, "\n".join(problems) + "\n\n" + log.to_text()


def test_the_corpus_covers_every_library():
    libraries = {case.library for case in CASES}
    assert libraries >= {
        "jax",
        "nnx",
        "equinox",
        "linen",
        "optax",
        "diffrax",
        "orbax",
        "chex",
        "jaxtyping",
        "numpyro",
        "blackjax",
    }
    assert len(CASES) >= 25
