"""A fix is shown only once it is checked by its values: the doctor runs the user's call as it runs
without jit (``jax.disable_jit``) on the user's own arguments, applies the fix to a copy of the
user's namespace, runs the fixed call jitted on the same arguments, and compares the two results
leaf by leaf (``timing.agreement``: ``allclose`` within each dtype's tolerance). Where the user's
arrays hold zeros or one value repeated (a padding of zeros, a mask that keeps everything would agree
by chance), it compares again on generated arguments of the same shapes and dtypes.

Nothing of the user's changes: their namespace is copied, never written; both calls run on copies
of their arguments (Flax NNX objects, NumPy arrays, their own objects), of the mutable globals the
code reads, with NumPy's and Python's random state given back; nothing printed reaches the user.
Only definitions of the fix run (``def``, ``class``, ``import``, ``g = jax.jit(f)``): its other
statements are read for the one call they make.

The outcome is a ``FixCheck``: ``same`` (same values), ``differs`` (``difference`` says where and
how), ``runs`` (the fix runs; the user's code fails without jit too, so there is nothing to compare),
``failed`` (the fixed code raised: ``error``) or ``unchecked`` (``reason``, a short stable id).

>>> import jax.numpy as jnp
>>> def first(x, n):
...     return x[:n]
>>> call = UserCall(globals={"jax": jax, "first": first}, callee_name="first", args=(jnp.arange(3.0), 2), kwargs={})
>>> check("@jax.jit(static_argnames=('n',))\\ndef first(x, n):\\n    return x[:n]", call).outcome
'same'
>>> check("@jax.jit(static_argnames=('n',))\\ndef first(x, n):\\n    return x[:n] * 2", call).difference
Difference(where='', kind='value', original='1.0', fixed='2.0', index=(1,))
>>> check("@jax.jit\\ndef first(x, n):\\n    return x[:n]", call).outcome
'failed'
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import inspect
import io
import linecache
import random
import sys
import types
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING, lookup_in
from jaxmagic.doctor.donations import has_deleted, is_nnx_object
from jaxmagic.doctor.fix_safety import calls_of_user_code, evaluate, is_definition, is_library, safe_expression
from jaxmagic.doctor.fix_values import Difference, compared, degenerate, error_text, first_difference, generated, shown
from jaxmagic.doctor.traced_code import codes
from jaxmagic.tracing import callables, jitting, nnx_copies, streams

SAME, DIFFERS, RUNS, FAILED, UNCHECKED = "same", "differs", "runs", "failed", "unchecked"
_FILENAME = "<jaxmagic fix check>"  # where the fix's definitions are compiled, and their source is found

# why a fix could not be checked (stable ids; the words are in ``words.doctor``)
NO_CALL = "no-call"  # the call and its arguments are not known (the function was not called by the user's code)
STATEMENTS = "statements"  # the fix changes statements that run, not only definitions and one call
ELIDED = "elided"  # the fix is shown in part (``...``)
NOT_REACHED = "not-reached"  # the call does not reach the fixed code (a method, a helper)
ARGUMENTS = "arguments"  # an argument is an expression jaxmagic will not run
NEW_PARAMETERS = "new-parameters"  # the fix asks for arguments the call does not have yet
FRAGMENT = "fragment"  # the fix is a line of the user's function, reading its local names
TIME = "time"  # checking ran past its time limit
OFF = "off"  # checking was not asked for (``diagnose(..., check_seconds=0)``)
REASONS = (NO_CALL, STATEMENTS, ELIDED, NOT_REACHED, ARGUMENTS, NEW_PARAMETERS, FRAGMENT, TIME, OFF)


@dataclass(frozen=True)
class FixCheck:
    """What running a fix on the user's arguments found (see the module): ``outcome``, ``reason``
    (why unchecked), ``error`` (what the fixed code, or the user's without jit, raised),
    ``difference`` (where the values differ), ``generated`` (why generated arguments were used too:
    ``"zeros"`` or ``"repeated"`` in the user's, ``"shapes"`` where only their shapes are known),
    ``extra`` (values the fix hands back after the user's), and the two results where small
    (``original``, ``fixed``: text).

    >>> FixCheck(SAME).ran, FixCheck(UNCHECKED, NO_CALL).ran
    (True, False)
    """

    outcome: str
    reason: str = ""
    error: str = ""
    difference: Difference | None = None
    generated: str = ""
    extra: int = 0
    original: str = ""
    fixed: str = ""
    arguments: bool = True  # the call checked took arguments (top-level code takes none)

    @property
    def ran(self) -> bool:
        """The fixed code ran on the arguments and its values were compared (or had nothing to compare with)."""
        return self.outcome in (SAME, DIFFERS, RUNS)


@dataclass(frozen=True)
class UserCall:
    """The call that failed (or was traced), as the doctor can replay it: the globals its code
    reads (copied, never written), the call site's locals, the call as written (``None`` when a
    tool called the function), the name of the function called, and its arguments where known
    (``None``: read from the call's own text).
    """

    globals: dict
    locals: dict = field(default_factory=dict)
    call: ast.Call | None = None
    callee_name: str | None = None
    args: tuple | None = None
    kwargs: dict | None = None
    callee: Any = None  # the user's callee (when ``call`` is None and the fix does not redefine it)
    defined_in: dict | None = None  # the globals of the function the fix rewrites, where not ``globals``
    function: Any = None  # the traced function, whose parameters a diagnosis's ``fix_call`` may read

    def parameters(self) -> dict:
        """The traced function's parameters bound to the call's arguments (``{}`` where unknown)."""
        signature = callables.signature_of(self.function) if self.function is not None else None
        if signature is None or self.args is None:
            return {}
        try:
            return dict(signature.bind(*self.args, **(self.kwargs or {})).arguments)
        except TypeError:
            return {}


# Reading the fix


class _Scopes:
    """The copies the fix runs in: ``scope`` (the call site's globals and locals) and ``home`` (the
    globals of the function the fix rewrites: ``scope`` itself when they are the same module)."""

    def __init__(self, call: UserCall):
        self.before = {**call.globals, **call.locals}
        self.scope = dict(self.before)
        self.scope.setdefault("__builtins__", builtins)
        home = call.defined_in
        self.home = self.scope if home is None or home is call.globals else dict(home)
        self.classes: dict[str, type] = {}  # the classes the fix defines, by name

    def lookup(self, name: str) -> Any:
        return lookup_in(self.scope)(name)

    def remade(self, value: Any) -> Any:
        """An object of a class the fix defines again, as a copy of the new class (its attributes
        copied): the call then runs the fixed methods. Any other value as it is."""
        new = self.classes.get(type(value).__name__)
        if new is None or type(value) is new or not hasattr(value, "__dict__"):
            return value
        made = object.__new__(new)
        vars(made).update(_copied(vars(value)))
        return made

    def lookup_home(self, name: str) -> Any:
        return lookup_in(self.home)(name)


def _read_fix(tree: ast.Module, scopes: _Scopes) -> tuple[list[ast.stmt], list[ast.Call], list[ast.expr]] | None:
    """The fix's statements: definitions (run in the copy), the one call of the user's code it
    makes, or one expression of JAX's and NumPy's calls; ``None`` when it does more."""
    definitions: list[ast.stmt] = []
    calls: list[ast.Call] = []
    expressions: list[ast.expr] = []
    for statement in tree.body:
        if is_definition(statement, scopes.lookup_home):
            definitions.append(statement)
            if isinstance(statement, (ast.Import, ast.ImportFrom)):  # later statements read the names it binds
                _define([statement], scopes.home)
            continue
        made = calls_of_user_code(statement, scopes.lookup)
        value = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
        if not made and not calls and not expressions and value is not None:
            expressions.append(value)  # JAX's and NumPy's calls only: run as they are
            continue
        if len(made) != 1 or calls or expressions:
            return None
        calls.append(made[0])
    return definitions, calls, expressions


def _define(definitions: list, scope: dict, source: str = "") -> types.CodeType:
    """Run the fix's definitions (parsed from ``source``) in ``scope`` (a copy of the user's
    namespace); their code. Their source is where ``inspect.getsource`` looks for it, as a cell's is
    (``chex.assert_max_traces`` reads the source of the function it wraps)."""
    if source:
        linecache.cache[_FILENAME] = (len(source), None, source.splitlines(keepends=True), _FILENAME)
    compiled = compile(ast.Module(definitions, type_ignores=[]), _FILENAME, "exec")
    with _quiet():
        exec(compiled, scope)  # noqa: S102 (definitions only, in a copy of the namespace)
    return compiled


# Running a call quietly, on copies


@contextlib.contextmanager
def _quiet():
    """Nothing this thread prints reaches the user; NumPy's and Python's random state are given back,
    and so are chex's counts of traces (``chex.assert_max_traces``: a fix traced here is not the user's
    trace, and a fix checked again must not count the first check)."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    traces = getattr(sys.modules.get("chex._src.asserts_internal"), "TRACE_COUNTER", None)
    counted = dict(traces) if isinstance(traces, dict) else None
    try:
        with streams.this_thread_writes_to(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        if isinstance(traces, dict) and counted is not None:
            traces.clear()
            traces.update(counted)


_IMMUTABLE = (jax.Array, str, bytes, int, float, complex, bool, type(None), types.ModuleType, type, types.FunctionType)


def _copied(value: Any) -> Any:
    """A copy of ``value`` that the call may change: containers, NumPy arrays and the user's objects
    copied, JAX's arrays (immutable) shared; as it is where it cannot be copied."""
    if isinstance(value, _IMMUTABLE) or callable(value) and not hasattr(value, "__dict__"):
        return value
    memo = {id(leaf): leaf for leaf in jax.tree_util.tree_leaves(value) if isinstance(leaf, jax.Array)}
    try:
        return copy.deepcopy(value, memo)
    except Exception:
        return value


def private_globals(names, namespace: dict) -> dict:
    """Copies of the mutable values (lists, dicts, NumPy arrays, the user's objects) that ``names``
    are bound to in ``namespace``: what a call may change in place."""
    return {n: _copied(namespace[n]) for n in names if n in namespace and not callable(namespace[n])}


def _on_copies(callee: Any, args: tuple, kwargs: dict, eager: bool) -> tuple[Any, tuple, dict]:
    """The call on copies: NNX objects it reaches, its arguments, a method's object; without jit
    (``eager``), a function of the user's rebuilt around a copy of the mutable globals it reads or assigns."""
    bound = callee.__self__ if isinstance(callee, types.MethodType) and not is_nnx_object(callee.__self__) else None
    function = callee.__func__ if bound is not None else callee
    function = callables.unwrap_jit(function) if eager else function  # without jit, a library's jit runs the same
    if eager and isinstance(function, types.FunctionType) and clues.is_user_file(function.__code__.co_filename):
        held = function.__globals__
        private = {**held, **private_globals({n for code in codes(function.__code__) for n in code.co_names}, held)}
        rebuilt = types.FunctionType(
            function.__code__, private, function.__name__, function.__defaults__, function.__closure__
        )
        rebuilt.__kwdefaults__, function = function.__kwdefaults__, rebuilt
    callee = types.MethodType(function, _copied(bound)) if bound is not None else function
    callee, args, kwargs = nnx_copies.on_nnx_copies(callee, args, kwargs)
    return callee, _copied(args), _copied(kwargs)


def _run(callee: Any, args: tuple, kwargs: dict, *, eager: bool) -> Any:
    """``callee(*args, **kwargs)`` on copies, quietly: without jit (``eager``: the user's function out
    of its jit, called as they would call it; where that still fails, a jit inside it being the one
    that fails, with every jit off, ``jax.disable_jit``), or as it is. Its result, and the user's
    objects among the arguments as the call left them (``_objects``)."""
    ran, copies, more = _on_copies(callee, args, kwargs, eager)
    with _quiet():
        try:
            return jax.block_until_ready(ran(*copies, **more)), _objects((getattr(ran, "__self__", None), *copies))
        except Exception:
            if not eager:
                raise
        ran, copies, more = _on_copies(callee, args, kwargs, eager)
        with jax.disable_jit():
            return jax.block_until_ready(ran(*copies, **more)), _objects((getattr(ran, "__self__", None), *copies))


def _objects(args: tuple) -> list[tuple[str, dict]]:
    """The user's own objects among the arguments (a method's ``self``), by class: their attributes,
    which the call may have changed."""
    return [(type(a).__name__, dict(vars(a))) for a in args if hasattr(a, "__dict__") and not is_library(type(a))
            and not isinstance(a, (types.FunctionType, types.ModuleType, type)) and not is_nnx_object(a)]  # fmt: skip


def jitted(callee: Any, whole: bool) -> Any:
    """The fixed callee as it runs jitted: a ``jax.jit`` as a fresh function's (the user's caches
    left alone), its static arguments kept; a library's jit, a method or the user's plain function
    as it is (its own code jits what it jits); with ``whole`` (a tool jitted the user's function), a
    plain function jitted with the leaves JAX cannot trace kept static."""
    if _jax_private.is_jitted(callee):
        options = _jax_private.jit_options(callee)
        inner = jitting.fresh_function(callables.unwrap_jit(callee))
        return jax.jit(inner, static_argnums=options.static_argnums, static_argnames=options.static_argnames)
    if whole and isinstance(callee, types.FunctionType) and clues.is_user_file(callee.__code__.co_filename):
        return jitting.UntraceableLeavesStatic(jitting.fresh_function(callee))
    return callee


# The check


@dataclass
class Original:
    """The user's call run without jit, once for every fix of a diagnosis: its result on the user's
    arguments (or the error it raised there), and on generated ones where theirs could hide a
    difference (``why``)."""

    call: UserCall
    result: Any = MISSING
    error: str = ""
    why: str = ""
    more: Any = None  # its result on generated arguments
    read: bool = False
    known: bool = False

    def run(self, read_call) -> bool:
        """Run the call ``read_call()`` gives (``None``: no call to run) once; False where there is none."""
        if self.read:
            return self.known
        self.read = True
        try:
            found = read_call()
        except Exception as exc:  # its callee or an argument fails to evaluate: the user's code fails
            self.error, self.known = error_text(exc), True
            return True
        if found is None:
            return False
        callee, args, kwargs = found
        self.known, self.why = True, degenerate(args, kwargs)
        if self.why != "shapes":
            try:
                self.result = _run(callee, args, kwargs, eager=True)
            except Exception as exc:
                self.error = error_text(exc)
                return True
        if self.why:
            with contextlib.suppress(Exception):  # the user's code may not run on them: then theirs alone
                self.more = _run(callee, *generated(args, kwargs), eager=True)
        return True


def check(fix: str, call: UserCall | None, fix_call: str = "", original: Original | None = None) -> FixCheck:
    """Apply ``fix`` to a copy of the user's namespace, run the fixed call jitted on the user's
    arguments and compare with their call without jit (``original``: run once for several fixes).
    Never raises; never writes the user's namespace.

    >>> check("x = step(x)\\nx = step(x)", UserCall(globals={"step": print})).reason
    'statements'
    """
    if not fix.strip() or call is None:
        return FixCheck(UNCHECKED, NO_CALL)
    try:
        with jitting.own_work():  # its compilations are the doctor's: a watch of the user's leaves them out
            checked = _check(fix, call, fix_call, original or Original(call))
        top_level = call.callee_name is None and call.function is None  # a cell's own code: no arguments
        return replace(checked, arguments=False) if top_level else checked
    except Exception as exc:  # the fixed code raised while it was defined or run
        return FixCheck(FAILED, error=error_text(exc))


def fixed_function(fix: str, call: UserCall) -> Any:
    """The function ``call.callee_name`` as ``fix`` defines it, in a copy of the user's namespace
    (``None`` where the fix does not run or defines no such function)."""
    try:
        read = _defined(fix, call)
    except Exception:
        return None
    return None if isinstance(read, FixCheck) else read[0].home.get(call.callee_name or "")


def _defined(fix: str, call: UserCall) -> FixCheck | tuple:
    """The fix read and its definitions run in a copy of the namespace: ``(scopes, definitions,
    calls, expressions, code)``, or the ``FixCheck`` saying why it cannot be run."""
    try:
        tree = ast.parse(fix)
    except SyntaxError as exc:
        return FixCheck(FAILED, error=error_text(exc))
    if any(line.strip() == "..." for line in fix.splitlines()):
        return FixCheck(UNCHECKED, ELIDED)
    scopes = _Scopes(call)
    read = _read_fix(tree, scopes)
    if read is None:
        return FixCheck(UNCHECKED, STATEMENTS)
    compiled = _define(read[0], scopes.home, fix)
    scopes.home.update(private_globals({n for code in codes(compiled) for n in code.co_names}, scopes.home))
    return (scopes, *read, compiled)


def _expression(expression: ast.expr, scopes: _Scopes) -> FixCheck:
    """A fix that is one expression of JAX's and NumPy's calls: it runs (it reads no local name)."""
    if any(scopes.lookup(n) is MISSING for n in clues.names_in(expression)):
        return FixCheck(UNCHECKED, FRAGMENT)
    with _quiet():
        jax.block_until_ready(evaluate(expression, scopes.scope, _FILENAME))
    return FixCheck(RUNS)


def _check(fix: str, call: UserCall, fix_call: str, original: Original) -> FixCheck:
    read = _defined(fix, call)
    if isinstance(read, FixCheck):
        return read
    scopes, definitions, calls, expressions, compiled = read
    if expressions:
        return _expression(expressions[0], scopes)
    if fix_call:  # how the fixed code is called, in the traced function's parameters (``count(self.n)``)
        if not call.parameters():
            return FixCheck(UNCHECKED, NO_CALL)
        scopes.scope = {**scopes.scope, **call.parameters()}
        calls = [ast.parse(fix_call, mode="eval").body]
    scopes.classes = {d.name: scopes.home[d.name] for d in definitions if isinstance(d, ast.ClassDef)}
    scopes.scope.update(
        {name: made for name, value in scopes.before.items() if (made := scopes.remade(value)) is not value}
    )
    first = calls[0] if calls else call.call
    found = _fixed_call(first if isinstance(first, ast.Call) else None, call, scopes)
    if isinstance(found, FixCheck):
        return found
    callee, before, args, kwargs = found
    callee = _rejitted(callee, scopes.scope, set(codes(compiled)))
    if not calls and not _reached(callee, before, compiled, definitions, scopes, (args, kwargs)):
        return FixCheck(UNCHECKED, NOT_REACHED)
    given = set(kwargs)
    args, kwargs = _with_new_parameters(callee, args, kwargs, scopes.scope)
    if args is None:
        return FixCheck(UNCHECKED, NEW_PARAMETERS)
    made = calls[0] if calls and not fix_call and isinstance(calls[0], ast.Call) else None
    return _by_value(jitted(callee, call.call is None and not calls), args, kwargs, original, set(kwargs) - given,
                     lambda: _original_call(call, scopes, made if isinstance(made, ast.Call) else None))  # fmt: skip


def _reached(callee: Any, before: Any, compiled: types.CodeType, definitions: list, scopes: _Scopes, given) -> bool:
    """True when the call runs the fixed code: its callee is (or calls) a function the fix defines,
    or it is given an object of a class the fix defines."""
    classes = tuple(scopes.home[d.name] for d in definitions if isinstance(d, ast.ClassDef))
    if any(isinstance(leaf, classes) for leaf in jax.tree_util.tree_leaves(given)):
        return True
    return _reaches_fix(callee, before, set(codes(compiled)))


def _original_call(call: UserCall, scopes: _Scopes, made: ast.Call | None) -> tuple[Any, tuple, dict] | None:
    """The user's own call as it failed (its callee from before the fix, and its arguments), even
    where the fix adds options to it (``has_aux=True``); where it calls another function
    (``params = update(params, g)``), that call as the user's code makes it."""
    node = call.call
    if made is not None and (node is None or clues.called(made.func) != clues.called(node.func)):
        node = made
    if node is None:
        callee = call.callee if call.callee is not None else scopes.before.get(call.callee_name or "", call.function)
        return (
            (callee, call.args, call.kwargs or {}) if callee not in (MISSING, None) and call.args is not None else None
        )
    if not safe_expression(node.func, lookup_in(scopes.before)):
        return None
    args, kwargs = _arguments(node, call, lookup_in(scopes.before), scopes.before)
    return (evaluate(node.func, dict(scopes.before), _FILENAME), args, kwargs) if args is not None else None


def _by_value(fixed_callee: Any, args: tuple, kwargs: dict, original: Original, added: set, user) -> FixCheck:
    """Run the fixed call jitted on the arguments and compare with the user's call without jit (on
    generated arguments too, made alike from each call's own, where the user's could hide a
    difference, or where JAX no longer holds them: a tracer, a donated array); the parameters the
    fix made of globals (``added``) keep the globals' values there."""
    if not original.run(user):
        return FixCheck(UNCHECKED, ARGUMENTS)

    def generated_alike() -> tuple[tuple, dict]:
        made, named = generated(args, {k: v for k, v in kwargs.items() if k not in added})
        return made, {**named, **{k: kwargs[k] for k in added}}

    if original.why == "shapes" or degenerate(args, kwargs) == "shapes":
        fixed = _run(fixed_callee, *generated_alike(), eager=False)
        if original.error or original.more is None:
            return FixCheck(RUNS, error=original.error) if original.error else FixCheck(UNCHECKED, ARGUMENTS)
        return _verdict(original.more, fixed, "shapes")
    fixed = _run(fixed_callee, args, kwargs, eager=False)
    if original.error:
        return FixCheck(RUNS, error=original.error)
    verdict = _verdict(original.result, fixed, "")
    if verdict.outcome != SAME or original.more is None:
        return verdict
    again = _verdict(original.more, _run(fixed_callee, *generated_alike(), eager=False), original.why)
    return again if again.outcome == DIFFERS else FixCheck(SAME, generated=original.why, extra=verdict.extra)


def _verdict(original_run: tuple, fixed_run: tuple, generated_why: str) -> FixCheck:
    (original, before), (fixed, after) = original_run, fixed_run
    difference, extra = compared(original, fixed)
    for (name, was), (_, now) in (
        zip(before, after, strict=True) if difference is None and len(before) == len(after) else ()
    ):
        changed = first_difference(was, now)
        if changed is not None:
            attribute = changed.where.strip("[]'\"")
            return FixCheck(DIFFERS, difference=replace(changed, where=f"{name}.{attribute}", kind="state"))
    if difference is None:
        return FixCheck(SAME, generated=generated_why, extra=extra)
    return FixCheck(
        DIFFERS, difference=difference, generated=generated_why, original=shown(original), fixed=shown(fixed)
    )


def _fixed_call(node: ast.Call | None, call: UserCall, scopes: _Scopes):
    """``(callee, callee before the fix, args, kwargs)`` of the call to run, or the ``FixCheck``
    saying why there is none."""
    if node is None:
        callee = scopes.scope.get(call.callee_name, MISSING) if call.callee_name else MISSING
        before = scopes.before.get(call.callee_name, MISSING) if call.callee_name else MISSING
        if call.args is None:
            return FixCheck(UNCHECKED, NO_CALL)
        args = tuple(scopes.remade(a) for a in call.args)
        if callee is MISSING and args and hasattr(type(args[0]), call.callee_name or " "):  # a method, by its object
            return getattr(args[0], call.callee_name or ""), call.function, args[1:], call.kwargs or {}
        return (callee, before, args, call.kwargs or {}) if callee is not MISSING else FixCheck(UNCHECKED, NO_CALL)
    if not safe_expression(node.func, scopes.lookup):
        return FixCheck(UNCHECKED, ARGUMENTS)
    try:
        callee = evaluate(node.func, scopes.scope, _FILENAME)
    except Exception:
        if node is call.call:  # the user's own call, which the fix does not reach (it rewrote another line)
            return FixCheck(UNCHECKED, NOT_REACHED)
        raise
    try:
        before = evaluate(node.func, dict(scopes.before), _FILENAME)
    except Exception:  # a name the fix defines
        before = MISSING
    try:
        args, kwargs = _arguments(node, call, scopes.lookup, scopes.scope)
    except Exception:  # an argument that cannot be read now (a donated array's copy): not the fix's fault
        return FixCheck(UNCHECKED, ARGUMENTS)
    if args is None:
        return FixCheck(UNCHECKED, ARGUMENTS)
    return callee, before, args, kwargs


def _reaches_fix(callee: Any, before: Any, fixed_codes: set) -> bool:
    """True when calling ``callee`` runs the fixed code: a function the fix defines, or another
    function, object or jit (its static arguments) than the one the user called."""
    function = callables.python_function(callee)
    if function is not None and function.__code__ in fixed_codes:
        return True
    if before is MISSING:
        return function is None
    options = _jax_private.jit_options if _jax_private.is_jitted(callee) and _jax_private.is_jitted(before) else None
    return (function, getattr(callee, "__self__", None), options and options(callee)) != (
        callables.python_function(before), getattr(before, "__self__", None), options and options(before))  # fmt: skip


def _rejitted(callee: Any, scope: dict, fixed_codes: set) -> Any:
    """``fast = jax.jit(f)`` held from before the fix: the same ``jax.jit`` (static arguments
    kept) of the fixed ``f``, as re-running the user's ``fast = jax.jit(f)`` line makes it."""
    function = callables.python_function(callee)
    if function is None or function.__code__ in fixed_codes or not _jax_private.is_jitted(callee):
        return callee
    fixed = callables.python_function(scope.get(function.__name__))
    if fixed is None or fixed.__code__ not in fixed_codes:
        return callee
    options = _jax_private.jit_options(callee)
    return jax.jit(fixed, static_argnums=options.static_argnums, static_argnames=options.static_argnames)


def _arguments(node: ast.Call, call: UserCall, lookup, scope: dict) -> tuple[tuple | None, dict]:
    """The call's arguments: each expression evaluated where it runs nothing of the user's; else,
    for the user's own call, the value the jitted call received."""
    same_call = call.call is not None and ast.dump(node) == ast.dump(call.call)
    args: list = []
    for i, arg in enumerate(node.args):
        if isinstance(arg, ast.Starred):
            return None, {}
        if safe_expression(arg, lookup) and not _computes_on_deleted(arg, lookup):
            args.append(evaluate(arg, scope, _FILENAME))
        elif same_call and call.args is not None and len(call.args) == len(node.args):
            args.append(call.args[i])
        else:
            return None, {}
    kwargs: dict = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None, {}
        if safe_expression(keyword.value, lookup) and not _computes_on_deleted(keyword.value, lookup):
            kwargs[keyword.arg] = evaluate(keyword.value, scope, _FILENAME)
        elif same_call and call.kwargs is not None and keyword.arg in call.kwargs:
            kwargs[keyword.arg] = call.kwargs[keyword.arg]
        else:
            return None, {}
    return tuple(args), kwargs


def _computes_on_deleted(node: ast.expr, lookup) -> bool:
    """True for an expression that computes on an array JAX no longer holds (``p.copy()`` of a
    donated ``p``): JAX may hand it to XLA, whose runtime logs the error (a line of the user's
    output) before raising it. A bare name is passed as it is, its array replaced where it runs.

    >>> import jax, jax.numpy as jnp
    >>> p = jnp.ones(2); _ = jax.jit(lambda a: a * 2, donate_argnums=0)(p)
    >>> [_computes_on_deleted(ast.parse(e, mode="eval").body, {"p": p}.get) for e in ("p.copy()", "p")]
    [True, False]
    """
    if isinstance(node, ast.Name):
        return False
    return any(isinstance(n, ast.Name) and has_deleted(lookup(n.id)) for n in ast.walk(node))


def _with_new_parameters(callee: Any, args: tuple, kwargs: dict, scope: dict) -> tuple[tuple | None, dict]:
    """A fix that turned a global into a parameter (``def sgd(params, grads, learning_rate)``) is
    called with the global's value, as its fixed call passes it; ``None`` when a new parameter has
    no value to pass."""
    signature = callables.signature_of(callee)
    if signature is None:
        return args, kwargs
    try:
        signature.bind(*args, **kwargs)
        return args, kwargs
    except TypeError:
        pass
    params = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    missing = [p.name for p in params[len(args) :] if p.name not in kwargs and p.default is inspect.Parameter.empty]
    if not missing or any(name not in scope for name in missing):
        return None, {}
    more = {name: scope[name] for name in missing}
    try:
        signature.bind(*args, **kwargs, **more)
    except TypeError:
        return None, {}
    return args, {**kwargs, **more}


__all__ = ["FixCheck", "Original", "UserCall", "check", "compared", "degenerate", "generated"]
