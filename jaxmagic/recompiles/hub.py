"""The one set of JAX listeners shared by every watching ``RecompileLog``: each compilation becomes a ``RecompileEvent``.

While at least one log watches, jaxmagic listens to ``jax.monitoring``'s trace, lower and
backend-compile duration events (and the persistent cache's hit and miss events). They fire only
when something compiles, so a call that hits JAX's caches runs no jaxmagic code at all. At each
compilation it reads the jitted call from the stack, describes its abstract signature, compares
it with the nearest earlier compilation of the same function, and hands the event to every
watching log. When the last log stops watching, every listener, filter and setting is restored.

>>> is_installed()
False
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import logging
import sys
import threading
import time

from jaxmagic import _jax_private
from jaxmagic.recompiles.attribution import (
    after_caches_cleared,
    attributed_to,
    called_by_jax,
    decide_causes,
    equinox_user_call,
    is_equinox_wrapper,
    is_internal,
    is_jaxmagics_own,
    jit_request,
    jitted_by_user,
    shown_name,
    signature_or_none,
    stack_frames,
    user_call_signature,
    user_function_inside,
)
from jaxmagic.recompiles.cache_keys import KeyIndex
from jaxmagic.recompiles.compilations import Comparison, Compilation, Memory, ThreadNotes
from jaxmagic.recompiles.differences import nearest
from jaxmagic.recompiles.events import RecompileEvent
from jaxmagic.recompiles.explanations import TRACING_MISS, explained_function, is_explanation
from jaxmagic.recompiles.program_facts import program_facts
from jaxmagic.recompiles.programs import describe_difference, program_shape
from jaxmagic.recompiles.signatures import CallSignature, function_identity
from jaxmagic.recompiles.unwatched import causes_since_lowered, causes_since_unwatched
from jaxmagic.tracing.jitting import doing_own_work
from jaxmagic.tracing.listing import sub_jaxprs
from jaxmagic.tracing.sources import no_cells, pick_user_frame, source_line, without_jaxmagic_frames

PERSISTENT_CACHE_HIT = _jax_private.PERSISTENT_CACHE_HIT_EVENT
PERSISTENT_CACHE_MISS = "/jax/compilation_cache/cache_misses"
_PENDING_LIMIT = 64  # per-thread notes (trace times, explanations) kept before a compile consumes them


def attach(log) -> None:
    """Start handing compilations to ``log`` (installing JAX listeners if it is the first)."""
    _HUB.attach(log)


def detach(log) -> None:
    """Stop handing compilations to ``log`` (removing everything once no log watches)."""
    _HUB.detach(log)


def is_installed() -> bool:
    """True while jaxmagic's listeners are installed in JAX (some log is watching)."""
    return _HUB.installation is not None


# ----------------------------------------------------------------------------------------------


class _Installation:
    """What was changed in JAX and in logging, to undo it exactly."""

    def __init__(
        self,
        explain_was_on: bool,
        loggers: list[logging.Logger],
        events: dict[str, str],
        key_logger: logging.Logger | None = None,
        key_logger_level: int = logging.NOTSET,
    ):
        self.explain_was_on = explain_was_on
        self.loggers = loggers
        self.events = events
        self.key_logger = key_logger
        self.key_logger_level = key_logger_level
        self.traced_before: frozenset[int] | None = None


class _CacheKeyFilter(logging.Filter):
    """Reads the hash of each part of a persistent cache key as JAX logs it (at DEBUG level, which
    the watch turns on for that one logger); shows the user only what their own logging settings
    would have shown."""

    def __init__(self, hub: "_Hub"):
        super().__init__("jaxmagic.recompiles.cache_keys")
        self.hub = hub
        self.shown_from = logging.WARNING

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg == _jax_private.CACHE_KEY_PART_MESSAGE and isinstance(args, tuple) and len(args) == 2:
            name, digest = args
            parts = self.hub.notes.cache_key_parts
            if len(parts) > _PENDING_LIMIT:
                parts.clear()
            parts[str(name)] = str(digest)
        return record.levelno >= self.shown_from


class _ExplanationFilter(logging.Filter):
    """Keeps JAX's cache-miss explanations for the events; hides them unless the user asked for them."""

    def __init__(self, hub: "_Hub"):
        super().__init__("jaxmagic.recompiles")
        self.hub = hub
        self.swallow = False

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if not is_explanation(message):
            return True
        if message.startswith(TRACING_MISS):
            notes = self.hub.notes
            if len(notes.explanations) > _PENDING_LIMIT:
                notes.explanations.clear()
            notes.explanations[_explanation_key(message)] = message
        return not self.swallow


class _Hub:
    """The one set of JAX listeners, shared by every watching log."""

    def __init__(self):
        self.lock = threading.RLock()
        self.logs: list = []  # the watching RecompileLogs
        self.memory = Memory()
        self.notes = ThreadNotes()
        self.watch_period = 0  # counts the stretches of watching: compilations in between went unseen
        self.installation: _Installation | None = None
        self.filter = _ExplanationFilter(self)
        self.key_filter = _CacheKeyFilter(self)
        self.key_indexes: dict[str | None, KeyIndex] = {}
        self.errors: collections.deque[str] = collections.deque(maxlen=20)
        # Made once, so that unregistering finds the very object registered.
        self.cost = _Cost()
        self.duration_listener = _interruptible(self.on_duration, self.cost)
        self.event_listener = _interruptible(self.on_event, self.cost)
        self.trace_event = self.lower_event = self.compile_event = None
        self.clears = 0  # how often jax.clear_caches() ran since the hub first watched
        self.clears_seen: dict[str, int] = {}  # function -> ``clears`` at its last compilation
        self.clearing_mark = None  # registered among JAX's caches (JAX holds it weakly)

    # -- attaching logs ------------------------------------------------------------------------
    def attach(self, log) -> None:
        with self.lock:
            if log in self.logs:
                return
            log.watching = True
            log.started_at = log.started_at or time.time()
            if log.owner_thread is None:
                log.owner_thread = threading.get_ident()
            self.logs.append(log)
            if self.installation is None:
                self._install()
            self._explain_if_asked()

    def detach(self, log) -> None:
        with self.lock:
            if log in self.logs:
                self.logs.remove(log)
            log.watching = False
            if not self.logs and self.installation is not None:
                self._uninstall()
            elif self.installation is not None:
                self._explain_if_asked()

    def _explain_if_asked(self) -> None:
        """JAX explains its cache misses (at a cost on every compilation) only while a log asks for
        its text, or when the user had turned it on."""
        import jax

        installation = self.installation
        assert installation is not None  # asked for only while the watch is installed
        wanted = installation.explain_was_on or any(getattr(log, "explain", False) for log in self.logs)
        if bool(jax.config.values.get("jax_explain_cache_misses", False)) != wanted:
            jax.config.update("jax_explain_cache_misses", wanted)

    def _install(self) -> None:
        import jax
        from jax import monitoring

        events = _jax_private.compile_event_names()
        self.trace_event, self.lower_event, self.compile_event = events["trace"], events["lower"], events["compile"]
        explain_was_on = bool(jax.config.values.get("jax_explain_cache_misses", False))
        loggers = [logging.getLogger(name) for name in _jax_private.explanation_logger_names()]
        self.filter.swallow = not explain_was_on
        for logger in loggers:
            logger.addFilter(self.filter)
        key_logger, key_level = None, logging.NOTSET
        with contextlib.suppress(Exception):  # without it, a cache miss is only said to be one
            key_logger = logging.getLogger(_jax_private.cache_key_logger_name())
            key_level = key_logger.level
            self.key_filter.shown_from = key_logger.getEffectiveLevel()
            key_logger.addFilter(self.key_filter)
            key_logger.setLevel(logging.DEBUG)  # JAX hashes each part again for it: only when it computes a key
        monitoring.register_event_duration_secs_listener(self.duration_listener)
        monitoring.register_event_listener(self.event_listener)
        self.installation = _Installation(explain_was_on, loggers, events, key_logger, key_level)
        if self.clearing_mark is None:
            with contextlib.suppress(Exception):
                self.clearing_mark = _jax_private.on_caches_cleared(self._caches_cleared)
        # What jax.jit had traced before the watch: anything traced since, in any thread, it saw.
        self.installation.traced_before = _jax_private.tracing_cache_marks()

    def _caches_cleared(self) -> None:
        self.clears += 1

    def _cleared_since(self, name: str) -> bool:
        """Whether ``jax.clear_caches()`` ran since ``name`` last compiled (while watched)."""
        last = self.clears_seen.get(name)
        self.clears_seen[name] = self.clears
        return last is not None and last < self.clears

    def _uninstall(self) -> None:
        import jax

        installation, self.installation = self.installation, None
        assert installation is not None  # removed only while installed
        self.watch_period += 1
        with contextlib.suppress(Exception):
            _jax_private.unregister_duration_listener(self.duration_listener)
        with contextlib.suppress(Exception):
            _jax_private.unregister_event_listener(self.event_listener)
        if bool(jax.config.values.get("jax_explain_cache_misses", False)) != installation.explain_was_on:
            jax.config.update("jax_explain_cache_misses", installation.explain_was_on)
        for logger in installation.loggers:
            logger.removeFilter(self.filter)
        if installation.key_logger is not None:
            installation.key_logger.removeFilter(self.key_filter)
            installation.key_logger.setLevel(installation.key_logger_level)
        self.notes = ThreadNotes()

    # -- JAX's events --------------------------------------------------------------------------
    def on_duration(self, event: str, duration: float, **kwargs) -> None:
        """``jax.monitoring`` duration listener: trace, lower and compile times (none of jaxmagic's
        own work: its traces would otherwise be taken for the next compilation of that name)."""
        if event == self.compile_event:
            limit = self._compiled(str(kwargs.get("fun_name", "?")), duration, sys._getframe(1))
            if limit is not None:
                raise limit
        elif doing_own_work():
            return
        elif event == self.trace_event:
            self._traced(str(kwargs.get("fun_name", "?")), duration, sys._getframe(1))
        elif event == self.lower_event:
            notes = self.notes
            if len(notes.lowers) > _PENDING_LIMIT:
                notes.lowers.clear()
            notes.lowers[str(kwargs.get("fun_name", "?"))] = duration

    def on_event(self, event: str, **kwargs) -> None:
        """``jax.monitoring`` event listener: did the persistent compilation cache serve it?"""
        if event == PERSISTENT_CACHE_HIT:
            self.notes.persistent = True
        elif event == PERSISTENT_CACHE_MISS:
            self.notes.persistent = False

    def _traced(self, name: str, duration: float, frame) -> None:
        notes = self.notes
        if len(notes.traces) > _PENDING_LIMIT:
            notes.traces.clear()
            notes.traced_calls.clear()
        notes.traces[name] = duration
        if notes.busy or not self.logs:
            return
        notes.busy = True
        try:
            call = _jax_private.jit_call_in_progress(frame)
            # An ordinary call is read again at its compilation; only ``.trace`` / ``.lower`` are
            # read now, as their compilation happens later, away from the arguments.
            if call is not None and not call.called:
                signature = signature_or_none(call, self._failed)
                notes.traced_calls[name] = (signature, stack_frames(frame))
            del call
        except Exception as exc:
            self._failed(exc)
        finally:
            notes.busy = False
            del frame

    def _compiled(self, jax_name: str, backend_s: float, frame):
        notes = self.notes
        compilation = notes.take(jax_name, backend_s)
        if notes.busy or doing_own_work():  # jaxmagic's own: never the user's, not even with --all
            return None
        with self.lock:
            logs = list(self.logs)
        if not logs:
            return None
        notes.busy = True
        try:
            event, wanted = self._event(compilation, frame, logs)
            if event is None:
                return None
            if compilation.key_parts and event.persistent_cache is not None:
                event = self._with_key_difference(event, jax_name, compilation.key_parts)
            if not event.internal and any(log.keep_programs for log in wanted):
                event = dataclasses.replace(event, program_facts=self._program_facts(frame))
            for log in wanted:
                log.record(event)
            self._hand_program(event, wanted, frame)
            return self._limit_error(event, wanted)
        except Exception as exc:
            self._failed(exc)
            return None
        finally:
            notes.busy = False
            del frame

    def _event(self, compilation: Compilation, frame, logs: list):
        """``(event, logs that want it)``: the function compiled, its signature compared with the
        nearest earlier one, and the causes decided; ``(None, [])`` when no log wants it."""
        call = _jax_private.jit_call_in_progress(frame)
        fun = call.fun if call is not None else None
        name, internal, user_function = self._identify(fun, compilation.base, frame)
        wanted = [log for log in logs if log.wants(name, internal)]
        if not wanted:
            return None, []
        namer = _cell_namer(wanted)
        raw = compilation.explanation(fun, name)
        stack = compilation.stack(call, frame)
        signature, name, equinox = self._signature(call, frame, compilation.traced, name)
        signature, program = (signature, None) if internal else self._with_program(signature, frame)
        signature = _attributed(signature, fun, user_function, name, internal)
        name = shown_name(signature, name)
        jax_keys = None if internal or equinox else self._traced_before_watch(signature, call)
        del call, fun, user_function
        compared = self._compared(signature, name, namer)
        unwatched = _unwatched_causes(compared, jax_keys, frame)
        causes = decide_causes(
            name,
            compared.signature,
            compared.closest,
            compared.own,
            None if equinox else raw,
            compared.seen,
            internal=internal,
            unwatched=unwatched,
        )
        causes = after_caches_cleared(causes, name, self._cleared_since(name))
        difference = compared.program_difference(program)
        event = RecompileEvent(
            function=name,
            defined_at=compared.defined_at(name, namer),
            call_site=_call_site(stack, namer),
            compile_s=compilation.compile_s,
            causes=causes,
            raw=raw,
            trace_s=compilation.trace_s,
            lower_s=compilation.lower_s,
            backend_s=compilation.backend_s,
            persistent_cache=compilation.persistent_cache(),
            internal=internal,
            signature=compared.summary(),
            jax_name=compilation.jax_name,
            thread=threading.current_thread().name,
            program_diff=_described(difference, namer),
            program_difference=difference,
            unwatched_since_before=compared.unwatched_since_before,
        )
        return event, wanted

    def _traced_before_watch(self, signature: CallSignature | None, call):
        """For a function the watch has not seen compile: the keys ``jax.jit`` traced of it
        before the watch began (``None`` when the watch has seen it, or there is no call)."""
        if signature is None or call is None:
            return None
        with self.lock:
            if self.memory.earlier(signature.family):
                return None
            installation = self.installation
        marks = installation.traced_before if installation is not None else None
        return _jax_private.traced_keys(call.fun, marks)

    def _compared(self, signature: CallSignature | None, name: str, namer) -> Comparison:
        """The signature compared with the nearest earlier one of its family, then remembered
        (stamped with the current stretch of watching)."""
        with self.lock:
            seen = self.memory.seen_name(name)
            if signature is None:
                self.memory.add(None, name)
                return Comparison(None, None, [], seen, False)
            closest, own = nearest(self.memory.earlier(signature.family), signature, namer)
            signature = dataclasses.replace(signature, watch_period=self.watch_period)
            self.memory.add(signature, name)
            # Compared with a compilation seen before a stretch when nothing watched: JAX may have
            # compiled other signatures in between, which jaxmagic never saw.
            unwatched_since = closest is not None and closest.watch_period != self.watch_period
        return Comparison(signature, closest, own, seen, unwatched_since)

    def _program_facts(self, frame):
        """The facts of the program XLA has just compiled for this call (``None`` out of reach)."""
        try:
            program = _jax_private.program_being_compiled(frame)
            if program is None:
                return None
            jaxpr = _jax_private.compiling_jaxpr(frame)
            return program_facts(program.hlo_text, program.cost, program.memory_stats, jaxpr)
        except Exception as exc:
            self._failed(exc)
            return None

    @staticmethod
    def _identify(fun, base: str, frame):
        """``(name, internal, user_function)`` of the function being compiled: the user's own
        function inside a JAX wrapper (pmap), the user's jax.jit of a library function, or JAX's
        own work (``internal``)."""
        internal = is_internal(fun) or called_by_jax(fun, frame)
        jax_wrapper = internal and not _jax_private.is_primitive_wrapper(fun) and not is_jaxmagics_own(fun)
        user_function = user_function_inside(fun) if jax_wrapper else None
        if user_function is not None:  # e.g. pmap: JAX jits its own wrapper of the user's function
            internal = False
        elif internal and jitted_by_user(fun, _jax_private.jit_caller_filename(frame)):
            internal = False  # the user's own jax.jit of a library function: jax.jit(jax.nn.relu)
        elif internal and _jax_private.is_primitive_wrapper(fun) and _runs_a_body(frame):
            # lax.scan, while_loop, cond or a callback run eagerly: JAX compiles their body for this
            # call, again for every new body (a lambda made anew), and its compile log counts each: so do we
            internal = False
        shown = user_function if user_function is not None else fun
        name = function_identity(shown)[0] if shown is not None else base
        if user_function is not None and base.endswith(f"({name})"):
            name = base  # JAX's own name says which transformation: grad(loss), vmap(f)
        return name, internal, user_function

    def _signature(self, call, frame, traced, name: str):
        """``(signature, name, through_equinox)``: the call's signature, read from the user's own
        call when Equinox split it (``filter_jit``), else from JAX's call or its trace."""
        through_equinox = equinox_user_call(frame) if call is not None and is_equinox_wrapper(call.fun) else None
        if through_equinox is not None:  # the user's own function and arguments, not Equinox's split
            user_fun, user_args, user_kwargs = through_equinox
            signature = user_call_signature(user_fun, user_args, user_kwargs, self._failed)
            return signature, (signature.function if signature is not None else name), True
        if call is not None and call.called:
            return signature_or_none(call, self._failed), name, False
        return (traced[0] if traced is not None else None), name, False

    def _with_program(self, signature, frame):
        """The signature with the shape of the traced program (equations by source line), and
        that shape; the signature alone when JAX's jaxpr is out of reach."""
        if signature is None:
            return None, None
        try:
            jaxpr = _jax_private.compiling_jaxpr(frame)
            if jaxpr is None:
                return signature, None
            program = program_shape(jaxpr)
            return dataclasses.replace(signature, program=program), program
        except Exception as exc:
            self._failed(exc)
            return signature, None

    def _with_key_difference(self, event: RecompileEvent, jax_name: str, parts: dict[str, str]) -> RecompileEvent:
        """For a persistent-cache miss, which parts of the key differ from the last key recorded
        for this function in that cache; the key is recorded either way."""
        directory = _jax_private.persistent_cache_directory()
        index = self.key_indexes.get(directory)
        if index is None:
            index = self.key_indexes[directory] = KeyIndex(directory)
        if event.persistent_cache is False:
            found = index.compare(jax_name, parts)
            if found is not None:
                event = dataclasses.replace(
                    event, persistent_key_parts=found.parts, persistent_recorded_at=found.recorded_at
                )
        index.record(jax_name, parts)
        return event

    @staticmethod
    def _hand_program(event: RecompileEvent, logs: list, frame) -> None:
        """Logs that read what was compiled (``record_program(event, hlo_text)``, such as
        ``expect_collectives``'s) get the optimized HLO text of the new executable, the
        shardings of the call's arguments (``None`` for a leaf without one) and the jaxpr compiled
        (``None`` for ``.lower().compile()``)."""
        readers = [log for log in logs if hasattr(log, "record_program")]
        if not readers:
            return
        program = _jax_private.program_being_compiled(frame)
        if program is None:
            return
        call = _jax_private.jit_call_in_progress(frame)
        leaves = [*call.args, *call.kwargs.values()] if call is not None else []
        shardings = [getattr(leaf, "sharding", None) for leaf in _leaves(leaves)]
        jaxpr = _jax_private.compiling_jaxpr(frame)
        asked = jit_request(call, event)
        del call, leaves
        for log in readers:
            log.record_program(event, program.hlo_text, shardings, jaxpr, asked)

    def _limit_error(self, event: RecompileEvent, logs: list):
        """The ``--max`` error to raise at this very call: only in the thread running the watched
        code (a background thread's compilation is reported at the end instead)."""
        for log in logs:
            limit = log.max_compiles
            if limit is None or event.function in log.limit_raised:
                continue
            if log.counts.get(event.function, 0) > limit and threading.get_ident() == log.owner_thread:
                log.limit_raised.add(event.function)
                return log.limit_error(event.function)
        return None

    def _failed(self, exc: BaseException) -> None:
        self.errors.append(f"{type(exc).__name__}: {exc}")


def _cell_namer(logs: list):
    """The first cell namer a log has (how notebook cells are named in source lines)."""
    return next((log.cell_namer for log in logs if log.cell_namer is not no_cells), no_cells)


def _call_site(stack: list[tuple[str, int, str]], namer):
    """The user's line that made the call (``None`` when no frame of the stack is the user's)."""
    site = pick_user_frame(stack)
    return source_line(*site, cell_namer=namer) if site else None


def _described(difference, namer) -> str | None:
    """The program difference in words (``None`` for none)."""
    return describe_difference(difference, namer) if difference is not None else None


def _runs_a_body(frame) -> bool:
    """Whether the program being compiled is a primitive that runs code of its own: a body
    (``scan``, ``while``, ``cond``: a jaxpr among its parameters) or a Python callback
    (``pure_callback``, ``io_callback``)."""
    try:
        jaxpr = _jax_private.compiling_jaxpr(frame)
        eqns = getattr(getattr(jaxpr, "jaxpr", jaxpr), "eqns", ())
        return any(any(sub_jaxprs(eqn.params)) or "callback" in eqn.params for eqn in eqns)
    except Exception:  # out of reach: as JAX's own work
        return False


def _attributed(
    signature: CallSignature | None, fun, user_function, name: str, internal: bool = True
) -> CallSignature | None:
    """The signature attributed to the user's function inside JAX's wrapper; for one of the
    wrappers JAX makes per primitive and parameters, a family of its own (for one that runs the
    user's body, eagerly: the primitive's, so that a new body is compared with the last one)."""
    if signature is None:
        return None
    if user_function is not None:
        return attributed_to(signature, user_function, name)
    if _jax_private.is_primitive_wrapper(fun):
        if internal:
            return dataclasses.replace(signature, family=signature.family + (id(fun),))
        return dataclasses.replace(signature, family=signature.family + (name,), runs_body=name)
    return signature


def _unwatched_causes(compared: Comparison, jax_keys, frame):
    """For a function with nothing earlier to compare with but that ``jax.jit`` traced before the
    watch: the causes against those traces, else against the shardings it was lowered for."""
    if compared.closest is not None or not jax_keys or compared.signature is None:
        return None
    unwatched = causes_since_unwatched(compared.signature, jax_keys)
    if unwatched is None:
        lowerings = _jax_private.lowered_input_shardings(_jax_private.compiling_jaxpr(frame))
        unwatched = causes_since_lowered(compared.signature, lowerings)
    return unwatched


def _leaves(tree) -> list:
    import jax

    return jax.tree_util.tree_leaves(tree)


def _interruptible(listener, cost: "_Cost"):
    """A listener that lets Ctrl-C through as the user's own: a ``KeyboardInterrupt`` that arrives
    while jaxmagic reads a compilation stops the user's cell, showing none of jaxmagic's frames.
    The time it takes is added to ``cost``."""

    @functools.wraps(listener)
    def listen(*args, **kwargs):
        __tracebackhide__ = True  # IPython leaves this frame out of the traceback it shows
        start = time.perf_counter()
        try:
            return listener(*args, **kwargs)
        except KeyboardInterrupt as interruption:
            # the same interruption raised again, not a new error: its cause and context stay as they were
            raise interruption.with_traceback(without_jaxmagic_frames(interruption.__traceback__))  # noqa: B904
        finally:
            cost.seconds += time.perf_counter() - start

    return listen


class _Cost:
    """Seconds spent in the watch's listeners, all threads together (what the watch adds to
    compilations; a call served from JAX's caches never reaches them)."""

    seconds = 0.0


def watch_seconds() -> float:
    """Seconds the watch has spent reading compilations since the process started: its own cost.

    >>> watch_seconds() >= 0.0
    True
    """
    return _HUB.cost.seconds


_HUB = _Hub()


# ----------------------------------------------------------------------------------------------


def _explanation_key(message: str):
    """Which traced function an explanation is about: the function object JAX is tracing in this
    thread (names can differ between JAX's explanation and its events), else the name it gives."""
    frame = sys._getframe(1)
    try:
        call = _jax_private.jit_call_in_progress(frame)
        if call is not None:
            return id(call.fun)
    except Exception:
        pass
    finally:
        del frame
    return explained_function(message) or ""
