"""A fix is shown only once it is checked: the doctor applies it to a copy of the user's namespace
and traces the fixed call on the user's own arguments, with ``jax.eval_shape`` (``nnx.eval_shape``
where the call holds Flax NNX objects), which runs nothing of the user's code but its tracing.

The user's namespace is never written (the fix runs in a copy of the globals), their objects are
never changed (an NNX model goes through ``nnx.eval_shape``, which traces copies), nothing the
fixed code prints reaches the user, and only definitions of the fix run (``def``, ``class``,
``import``, ``g = jax.jit(f)``): its other statements are read for the one call they make.

The outcome is a ``FixCheck``: ``passed`` (the fixed code traced on the arguments), ``failed``
(it raised: JAX's error is kept) or ``unchecked`` (with the reason, a short stable id).

>>> import jax.numpy as jnp
>>> def first(x, n):
...     return x[:n]
>>> call = UserCall(globals={"jax": jax, "first": first}, callee_name="first", args=(jnp.ones(3), 2), kwargs={})
>>> check("@jax.jit(static_argnames=('n',))\\ndef first(x, n):\\n    return x[:n]", call).outcome
'passed'
>>> check("@jax.jit\\ndef first(x, n):\\n    return x[:n]", call).outcome
'failed'
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import io
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

import jaxmagic.doctor.clues as clues
from jaxmagic import _jax_private
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.donations import is_nnx_object
from jaxmagic.doctor.traced_code import codes
from jaxmagic.tracing import callables, jitting

PASSED, FAILED, UNCHECKED = "passed", "failed", "unchecked"

# why a fix could not be checked (stable ids; the words are in ``diagnosis.check_words``)
NO_CALL = "no-call"  # the call and its arguments are not known (the function was not called by the user's code)
STATEMENTS = "statements"  # the fix changes statements that run, not only definitions and one call
ELIDED = "elided"  # the fix is shown in part (``...``)
NOT_REACHED = "not-reached"  # the call does not reach the fixed code (a method, a helper)
ARGUMENTS = "arguments"  # an argument is an expression jaxmagic will not run
NEW_PARAMETERS = "new-parameters"  # the fix asks for arguments the call does not have yet
FRAGMENT = "fragment"  # the fix is a line of the user's function, reading its local names

SAFE_BUILTINS = frozenset(
    {tuple, list, dict, set, frozenset, int, float, bool, str, complex, range, len, slice, abs, min, max, sorted, zip}
)
SAFE_MODULES = ("jax", "jaxlib", "numpy", "functools", "flax", "equinox", "optax", "ml_dtypes")


@dataclass(frozen=True)
class FixCheck:
    """What tracing a fix on the user's arguments found: ``outcome`` (``passed`` / ``failed`` /
    ``unchecked``), ``reason`` (why unchecked) and ``error`` (what JAX raised, where it failed).

    >>> FixCheck(PASSED).passed, FixCheck(FAILED, error="TypeError: boom").passed
    (True, False)
    """

    outcome: str
    reason: str = ""
    error: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == PASSED


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


# ------------------------------------------------------------------------------------------------
# Reading the fix


def _value_of(statement: ast.stmt) -> ast.expr | None:
    if isinstance(statement, (ast.Expr, ast.Assign)):
        return statement.value
    return None


def _is_definition(statement: ast.stmt, lookup) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        return _wraps_only(statement.value, lookup)
    return False


WRAPPERS = frozenset(
    {"jit", "partial", "grad", "value_and_grad", "vmap", "pmap", "checkpoint", "remat", "jacfwd", "jacrev", "hessian"}
    | {"filter_jit", "filter_grad", "filter_value_and_grad", "filter_vmap", "checkify"}
)


def _wraps_only(node: ast.AST, lookup) -> bool:
    """``jax.jit(f, ...)``, ``functools.partial(f, ...)``, a name: an assignment that wraps a
    function (a transform of JAX or a library), running nothing."""
    if isinstance(node, ast.Attribute):
        return _wraps_only(node.value, lookup) and not isinstance(node.value, ast.Call)
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Call):
        wrapper = getattr(_callee(node.func, lookup), "__name__", None) in WRAPPERS
        return wrapper and _is_library_call(node, lookup) and all(safe_expression(a, lookup) for a in node.args)
    return False


def _is_library(fn: Any) -> bool:
    """True for JAX's, NumPy's, the libraries' and Python's own callables; False for the user's
    (a function of theirs, jitted or not, a method, a callable object of their class)."""
    try:
        if fn in SAFE_BUILTINS:
            return True
    except TypeError:  # unhashable
        pass
    inner = callables.python_function(fn)
    if inner is not None:
        module = inner.__module__ or ""
    elif isinstance(fn, (type, types.BuiltinFunctionType, np.ufunc)):
        module = getattr(fn, "__module__", None) or ""
    else:
        module = type(fn).__module__ or ""
    return module.split(".")[0] in SAFE_MODULES


def safe_expression(node: ast.AST, lookup) -> bool:
    """True when evaluating ``node`` runs none of the user's functions: names, constants,
    containers, arithmetic, and calls of JAX, NumPy and Python's constructors.

    >>> import jax.numpy as jnp
    >>> lookup = {"jnp": jnp, "x": 1, "step": lambda v: v}.get
    >>> safe_expression(ast.parse("jnp.ones((2, x))", mode="eval").body, lookup)
    True
    >>> safe_expression(ast.parse("step(x)", mode="eval").body, lookup)
    False
    """
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)):
            return False
        if isinstance(inner, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
        if isinstance(inner, ast.Call) and not _is_library_call(inner, lookup):
            return False
    return True


def _callee(node: ast.expr, lookup) -> Any:
    """What a call calls: a name or a dotted name (``clues.resolve``), or an array's own method
    (``params.copy``), read from its class so that nothing runs."""
    found = clues.resolve(node, lookup)
    if found is MISSING and isinstance(node, ast.Attribute):
        base = clues.resolve(node.value, lookup)
        if isinstance(base, (jax.Array, np.ndarray)):
            try:
                return inspect.getattr_static(base, node.attr)
            except AttributeError:
                return MISSING
    return found


def _is_library_call(node: ast.Call, lookup) -> bool:
    fn = _callee(node.func, lookup)
    if fn is MISSING and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call):
        return safe_expression(node.func.value, lookup)  # jnp.arange(8.0).reshape(4, 2): a method of a library's result
    return fn is not MISSING and _is_library(fn)


def _calls_of_user_code(statement: ast.stmt, lookup) -> list[ast.Call]:
    return [n for n in ast.walk(statement) if isinstance(n, ast.Call) and not _is_library_call(n, lookup)]


# ------------------------------------------------------------------------------------------------
# Running it quietly, on copies


@contextlib.contextmanager
def _quiet():
    """Nothing the fixed code prints or warns while it is traced reaches the user."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        yield


def _evaluate(node: ast.expr, scope: dict) -> Any:
    return eval(compile(ast.Expression(node), "<jaxmagic fix check>", "eval"), scope)  # noqa: S307 (checked safe)


def _is_graph_node(value: Any) -> bool:
    """A Flax NNX object traced as a copy (a module, an optimizer; not one ``Variable``)."""
    return is_nnx_object(value) and not isinstance(value, sys.modules["flax.nnx"].Variable)


def _abstract(value: Any) -> Any:
    """An array as a ``ShapeDtypeStruct`` (its shape and dtype, no values); anything else as is."""
    if isinstance(value, jax.ShapeDtypeStruct):
        return value
    aval = getattr(value, "aval", None)
    if clues.is_tracer(value) and aval is not None:
        return jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=getattr(aval, "weak_type", False))
    if isinstance(value, (jax.Array, np.ndarray, np.generic)):
        return jax.ShapeDtypeStruct(value.shape, value.dtype, weak_type=getattr(value, "weak_type", False))
    return value


def _is_array_leaf(value: Any) -> bool:
    return isinstance(value, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct)) or clues.is_tracer(value)


def _apart(callee: Any) -> Any:
    """A ``jax.jit`` function as a new ``jax.jit`` of a fresh wrapper, with the same static
    arguments: tracing it leaves the user's function's caches as they were (``jitting.fresh_function``)."""
    if not _jax_private.is_jitted(callee):
        return callee
    options = _jax_private.jit_options(callee)
    inner = jitting.fresh_function(callables.unwrap_jit(callee))
    return jax.jit(inner, static_argnums=options.static_argnums, static_argnames=options.static_argnames)


def trace_call(callee: Any, args: tuple, kwargs: dict) -> None:
    """Trace ``callee(*args, **kwargs)`` abstractly: arrays become their shapes and dtypes, Python
    values stay as they are (as a real call passes them), Flax NNX objects are traced as copies.
    Raises what the traced code raises.

    >>> import jax.numpy as jnp
    >>> trace_call(lambda x, n: x[:n], (jnp.ones(3), 2), {})
    >>> try:
    ...     trace_call(lambda x, n: jnp.zeros(n), (jnp.ones(3), jnp.array(2)), {})
    ... except TypeError as exc:
    ...     print(str(exc).split(",")[0])
    Shapes must be 1D sequences of concrete values of integer type
    """
    callee = _apart(callee)
    leaves, tree = jax.tree_util.tree_flatten((tuple(args), dict(kwargs)), is_leaf=_is_graph_node)
    moving = [i for i, leaf in enumerate(leaves) if _is_array_leaf(leaf) or _is_graph_node(leaf)]
    graph = any(_is_graph_node(leaves[i]) for i in moving)

    def call(*values):
        full = list(leaves)
        for i, value in zip(moving, values, strict=True):
            full[i] = value
        a, k = jax.tree_util.tree_unflatten(tree, full)
        return callee(*a, **k)

    inputs = [leaves[i] if _is_graph_node(leaves[i]) else _abstract(leaves[i]) for i in moving]
    if graph:
        from flax import nnx

        nnx.eval_shape(call, *inputs)
    else:
        jax.eval_shape(call, *inputs)


# ------------------------------------------------------------------------------------------------
# The check


def _error_text(exc: BaseException) -> str:
    try:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    except Exception:
        first = ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def check(fix: str, call: UserCall | None, fix_call: str = "") -> FixCheck:
    """Apply ``fix`` to a copy of the user's namespace and trace the fixed call on the user's
    arguments. Never raises; never writes the user's namespace.

    >>> check("x = step(x)\\nx = step(x)", UserCall(globals={"step": print})).reason
    'statements'
    """
    if not fix.strip():
        return FixCheck(UNCHECKED, NO_CALL)
    if call is None:
        return FixCheck(UNCHECKED, NO_CALL)
    try:
        with jitting.own_work():  # its traces are the doctor's: a watch of the user's compilations leaves them out
            return _check(fix, call, fix_call)
    except Exception as exc:  # the fixed code raised while it was defined or traced
        return FixCheck(FAILED, error=_error_text(exc))


class _Scopes:
    """The copies the fix runs in: ``scope`` (the call site's globals and locals) and ``home`` (the
    globals of the function the fix rewrites: ``scope`` itself when they are the same module)."""

    def __init__(self, call: UserCall):
        self.before = {**call.globals, **call.locals}
        self.scope = dict(self.before)
        self.scope.setdefault("__builtins__", builtins)
        home = call.defined_in
        self.home = self.scope if home is None or home is call.globals else dict(home)

    def lookup(self, name: str) -> Any:
        return self.scope[name] if name in self.scope else getattr(builtins, name, MISSING)

    def lookup_home(self, name: str) -> Any:
        return self.home[name] if name in self.home else getattr(builtins, name, MISSING)


def _read_fix(tree: ast.Module, scopes: _Scopes) -> tuple[list[ast.stmt], list[ast.Call], list[ast.expr]] | None:
    """The fix's statements: definitions (run in the copy), the one call of the user's code it
    makes, or one expression of JAX's and NumPy's calls; ``None`` when it does more."""
    definitions: list[ast.stmt] = []
    calls: list[ast.Call] = []
    expressions: list[ast.expr] = []
    for statement in tree.body:
        if _is_definition(statement, scopes.lookup_home):
            definitions.append(statement)
            if isinstance(statement, (ast.Import, ast.ImportFrom)):  # later statements read the names it binds
                _define([statement], scopes.home)
            continue
        made = _calls_of_user_code(statement, scopes.lookup)
        value = _value_of(statement)
        if not made and not calls and not expressions and value is not None:
            expressions.append(value)  # JAX's and NumPy's calls only: traced as they are
            continue
        if len(made) != 1 or calls or expressions:
            return None
        calls.append(made[0])
    return definitions, calls, expressions


def _define(definitions: list, scope: dict) -> types.CodeType:
    """Run the fix's definitions in ``scope`` (a copy of the user's namespace); their code."""
    compiled = compile(ast.Module(definitions, type_ignores=[]), "<jaxmagic fix check>", "exec")
    with _quiet():
        exec(compiled, scope)  # noqa: S102 (definitions only, in a copy of the namespace)
    return compiled


def _check(fix: str, call: UserCall, fix_call: str = "") -> FixCheck:
    try:
        tree = ast.parse(fix)
    except SyntaxError as exc:
        return FixCheck(FAILED, error=_error_text(exc))
    if any(line.strip() == "..." for line in fix.splitlines()):
        return FixCheck(UNCHECKED, ELIDED)
    scopes = _Scopes(call)
    read = _read_fix(tree, scopes)
    if read is None:
        return FixCheck(UNCHECKED, STATEMENTS)
    definitions, calls, expressions = read
    compiled = _define(definitions, scopes.home)
    if expressions:
        if any(scopes.lookup(n) is MISSING for n in clues.names_in(expressions[0])):
            return FixCheck(UNCHECKED, FRAGMENT)
        with _quiet():
            jax.eval_shape(lambda: [_evaluate(expressions[0], scopes.scope), None][1])
        return FixCheck(PASSED)
    if fix_call:  # how the fixed code is called, in the traced function's parameters (``count(self.n)``)
        parameters = call.parameters()
        if not parameters:
            return FixCheck(UNCHECKED, NO_CALL)
        scopes.scope = {**scopes.scope, **parameters}
        written = ast.parse(fix_call, mode="eval").body
        if not isinstance(written, ast.Call):
            raise TypeError(f"the fixed code's call is not a call: {fix_call!r}")
        calls = [written]
    found = _fixed_call(calls[0] if calls else call.call, call, scopes)
    if isinstance(found, FixCheck):
        return found
    callee, original, args, kwargs = found
    fixed_codes = set(codes(compiled))
    callee = _rejitted(callee, scopes.scope, fixed_codes)
    if not calls and not _reaches_fix(callee, original, fixed_codes):
        return FixCheck(UNCHECKED, NOT_REACHED)
    args, kwargs = _with_new_parameters(callee, args, kwargs, scopes.scope)
    if args is None:
        return FixCheck(UNCHECKED, NEW_PARAMETERS)
    with _quiet():
        trace_call(callee, args, kwargs)
    return FixCheck(PASSED)


def _fixed_call(node: ast.Call | None, call: UserCall, scopes: _Scopes):
    """``(callee, original callee, args, kwargs)`` of the call to trace, or the ``FixCheck`` saying
    why there is none."""
    if node is None:
        callee = scopes.scope.get(call.callee_name, MISSING) if call.callee_name else MISSING
        original = scopes.before.get(call.callee_name, MISSING) if call.callee_name else MISSING
        if callee is MISSING or call.args is None:
            return FixCheck(UNCHECKED, NO_CALL)
        return callee, original, call.args, call.kwargs or {}
    if not safe_expression(node.func, scopes.lookup):
        return FixCheck(UNCHECKED, ARGUMENTS)
    try:
        callee = _evaluate(node.func, scopes.scope)
    except Exception:
        if node is call.call:  # the user's own call, which the fix does not reach (it rewrote another line)
            return FixCheck(UNCHECKED, NOT_REACHED)
        raise
    try:
        original = _evaluate(node.func, dict(scopes.before))
    except Exception:  # a name the fix defines
        original = MISSING
    try:
        args, kwargs = _arguments(node, call, scopes.lookup, scopes.scope)
    except Exception:  # an argument that cannot be read now (a donated array's copy): not the fix's fault
        return FixCheck(UNCHECKED, ARGUMENTS)
    if args is None:
        return FixCheck(UNCHECKED, ARGUMENTS)
    return callee, original, args, kwargs


def _reaches_fix(callee: Any, original: Any, fixed_codes: set) -> bool:
    """True when calling ``callee`` runs the fixed code: a function the fix defines, or another
    object than the one the user called."""
    function = callables.python_function(callee)
    if function is None:
        return callee is not original
    if function.__code__ in fixed_codes:
        return True
    return original is not MISSING and function is not callables.python_function(original)


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
        if safe_expression(arg, lookup):
            args.append(_evaluate(arg, scope))
        elif same_call and call.args is not None and len(call.args) == len(node.args):
            args.append(call.args[i])
        else:
            return None, {}
    kwargs: dict = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None, {}
        if safe_expression(keyword.value, lookup):
            kwargs[keyword.arg] = _evaluate(keyword.value, scope)
        elif same_call and call.kwargs is not None and keyword.arg in call.kwargs:
            kwargs[keyword.arg] = call.kwargs[keyword.arg]
        else:
            return None, {}
    return tuple(args), kwargs


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
