"""A jitted call described the way JAX's caches see it: its ``CallSignature``.

``describe_call`` turns a callee and its arguments into a ``CallSignature``: for each parameter,
how it was passed, its static value or its pytree structure and leaf types (shape, dtype, weak
type, device or sharding); plus the jit options and JAX's tracing configuration. A signature
holds no reference to the user's arrays, and only a weak one to the function. What differs
between two signatures is ``jaxmagic.recompiles.differences``' job.

>>> import jax.numpy as jnp
>>> def f(x, n):
...     return x * n
>>> signature = describe_call(f, (jnp.ones(4), 3), {}, static_argnums=(1,))
>>> signature.summary(), signature.function
('(x: f32[4], n=3)', 'f')
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from jaxmagic.recompiles.attributes import Attribute, attributes_of, object_text
from jaxmagic.recompiles.closures import made_of
from jaxmagic.recompiles.leaves import LeafType, StaticValue, describe_leaf, is_array, is_simple
from jaxmagic.tracing.callables import callable_name, innermost
from jaxmagic.words import units
from jaxmagic.words.function_names import lambda_name
from jaxmagic.words.untrusted import value_text

MAX_TEXT = 72  # longest before/after text kept for one value


# ----------------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class ParamSignature:
    """One parameter of the call: how it was passed, and either its static value or its pytree.

    ``passed`` is ``"position"``, ``"keyword"`` or ``"default"`` (not passed at all).
    ``structure`` is the pytree's structure as text; ``leaves`` maps each leaf's path inside the
    parameter (``""``, ``"['w']"``, ``"[0]"``) to its ``LeafType``. A library object (an NNX or
    Equinox module, a Flax struct) is also read by attribute path: ``attributes``.
    """

    name: str
    passed: str
    static: bool = False
    value: StaticValue | None = None
    structure: str = ""
    leaves: tuple[tuple[str, LeafType], ...] = ()
    text: str = ""  # the pytree with each leaf's type in its place, written from the tree itself
    attributes: tuple[Attribute, ...] = ()
    filtered: bool = False  # every non-array in it is static, as under eqx.filter_jit

    def leaf_name(self, path: str) -> str:
        """``params['w']``: the parameter name followed by the leaf's path."""
        return f"{self.name}{path}"

    def describe(self, limit: int = MAX_TEXT) -> str:
        """The value as a reader should see it: ``2``, ``f32[3]``, ``{'w': f32[3,3], 'b': f32[3]}``."""
        if self.passed == "default":
            return "(default)"
        if self.static:
            return self.value.text if self.value else "?"
        if len(self.leaves) == 1 and self.leaves[0][0] == "" and self.structure == "*":
            return self.leaves[0][1].describe()
        return shorten(self.text or self.structure, limit)


# ----------------------------------------------------------------------------------------------
# The call


@dataclass(frozen=True, eq=False)
class CallSignature:
    """Everything JAX's compilation caches key on for one call of a jitted function.

    ``function`` is the callee's display name and ``family`` groups every definition of "the same"
    function (a function re-defined in a loop, or in a re-run cell, shares its family);
    ``function_ref`` is a weak reference to the callee object itself (``None`` where Python cannot
    make one); ``defined_at`` is ``(file, line)``. ``options`` are the ``jax.jit`` options and
    ``config`` the JAX settings that enter the cache key, both as ``(name, value)`` pairs;
    ``program`` is the compiled program's ``ProgramShape`` (``recompiles.programs``), when known;
    ``made`` what the callee is made of (its code, captured values, defaults, what a partial
    binds: ``recompiles.closures``) and ``handle`` the user's own name for it and the line that
    built it (``recompiles.handles``), where the call came from the user's code.
    """

    function: str
    family: tuple
    function_id: int
    function_ref: Any = field(default=None, repr=False)
    defined_at: tuple[str, int] | None = None
    options: tuple[tuple[str, Any], ...] = ()
    config: tuple[tuple[str, Any], ...] = ()
    params: tuple[ParamSignature, ...] = ()
    program: Any = field(default=None, repr=False, compare=False)  # its ProgramShape, once compiled
    watch_period: int = field(default=0, repr=False, compare=False)  # which unbroken stretch of watching saw it
    inner_ref: Any = field(default=None, repr=False, compare=False)  # weak reference to the function whose code runs
    wrapper: str = ""  # what wraps that function, when jax.jit got a wrapper: "jax.vmap", "functools.partial"
    made: tuple = field(default=(), repr=False, compare=False)  # what the callee is made of: ``closures.made_of``
    handle: Any = field(default=None, repr=False, compare=False)  # the user's name for it: ``handles.Handle``
    captured: tuple = field(default=(), repr=False, compare=False)  # (name, Handle) of objects its closure captures
    defined_by_caller: bool = field(default=False, repr=False, compare=False)  # the calling function defines it
    runs_body: str = field(default="", repr=False, compare=False)  # the primitive (scan, while) run eagerly with a body

    def is_same_function(self, other: "CallSignature") -> bool:
        """True when both calls went to the very same function object."""
        if self.function_ref is not None and other.function_ref is not None:
            mine = self.function_ref()
            return mine is not None and mine is other.function_ref()
        return self.function_id == other.function_id

    def summary(self, limit: int = 120) -> str:
        """``(x: f32[3], n=2)``: the arguments as types, static ones as values.

        Leaves that are plain arrays show their type; static arguments show their value after ``=``.
        """
        parts = []
        for param in self.params:
            if param.passed == "default":
                continue
            sep = "=" if param.static else ": "
            parts.append(f"{param.name}{sep}{param.describe()}")
        return shorten("(" + ", ".join(parts) + ")", limit)

    def param(self, name: str) -> ParamSignature | None:
        """The parameter called ``name``, if the call has one."""
        return next((p for p in self.params if p.name == name), None)

    def positional_names(self) -> list[str]:
        """Parameter names in the order their values were passed by position."""
        return [p.name for p in self.params if p.passed == "position"]


def describe_call(
    fun: Callable,
    args: Sequence,
    kwargs: dict,
    *,
    static_argnums: Iterable[int] = (),
    static_argnames: Iterable[str] = (),
    options: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    non_arrays_static: bool = False,
) -> CallSignature:
    """The ``CallSignature`` of calling ``fun(*args, **kwargs)`` under ``jax.jit``.

    ``static_argnums`` / ``static_argnames`` say which arguments are static, as ``jax.jit`` was told;
    ``options`` are the other jit options and ``config`` JAX's tracing configuration (both as
    name -> value; values are compared as text unless simple). With ``non_arrays_static`` every
    leaf that is not an array is static, as under ``eqx.filter_jit``.

    >>> import jax.numpy as jnp
    >>> def loss(params, x, *, scale=1.0):
    ...     return params["w"] * x * scale
    >>> describe_call(loss, ({"w": jnp.ones(2)}, jnp.ones(2)), {}).summary()
    "(params: {'w': f32[2]}, x: f32[2])"
    >>> describe_call(loss, ({"w": jnp.ones(2)}, 3), {}, non_arrays_static=True).summary()
    "(params: {'w': f32[2]}, x: 3)"
    """
    static_argnums, static_argnames = set(static_argnums), set(static_argnames)
    params = tuple(_describe_params(fun, tuple(args), dict(kwargs), static_argnums, static_argnames, non_arrays_static))
    name, family, defined_at = function_identity(fun)
    return CallSignature(
        function=name,
        family=family,
        function_id=id(fun),
        function_ref=_weak(fun),
        inner_ref=_weak(innermost(fun)),
        wrapper=wrapper_name(fun),
        made=made_of(fun),
        defined_at=defined_at,
        options=_comparable(options or {}),
        config=_comparable(config or {}, skip_complex=True),
        params=params,
    )


def _describe_params(fun, args, kwargs, static_argnums, static_argnames, non_arrays_static=False):
    import jax

    names = _parameter_names(fun, len(args), kwargs)
    for index, value in enumerate(args):
        name = names["positional"][index] if index < len(names["positional"]) else f"args[{index}]"
        static = index in static_argnums
        yield _param(name, "position", value, static, jax, non_arrays_static)
    for key, value in kwargs.items():
        yield _param(key, "keyword", value, key in static_argnames, jax, non_arrays_static)
    for name in names["defaults"]:
        yield ParamSignature(name=name, passed="default")


def describe_argument(name: str, value: Any, *, non_arrays_static: bool = False) -> ParamSignature:
    """One value passed by position, described as ``describe_call`` describes each argument.

    >>> describe_argument("scale", 2, non_arrays_static=True).describe()
    '2'
    """
    import jax

    return _param(name, "position", value, False, jax, non_arrays_static)


def _param(name: str, passed: str, value: Any, static: bool, jax, non_arrays_static: bool = False) -> ParamSignature:
    if static:
        return ParamSignature(name=name, passed=passed, static=True, value=StaticValue.of(value))
    leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(value)
    leaves = tuple(
        (
            jax.tree_util.keystr(path),
            LeafType.of_static(leaf) if non_arrays_static and not is_array(leaf) else describe_leaf(leaf),
        )
        for path, leaf in leaves_with_paths
    )
    attributes = attributes_of(value)
    leaf_texts = [leaf.describe() if leaf.static else leaf.type_text for _, leaf in leaves]
    # under eqx.filter_jit an object's numbers are static values: shown as values, not as types
    text = object_text(attributes) if attributes and not non_arrays_static else tree_text(treedef, leaf_texts)
    return ParamSignature(
        name=name,
        passed=passed,
        structure=_structure_text(treedef),
        leaves=leaves,
        text=text,
        attributes=attributes,
        filtered=non_arrays_static,
    )


MAX_TREE_NODES = 4096  # larger pytrees are written in short


def tree_text(treedef, leaf_texts: Sequence[str]) -> str:
    """A pytree written with ``leaf_texts`` in its leaves' places, from the tree's own nodes
    (``PyTreeDef.node_data`` / ``children``): dict keys are written as they are, whatever they hold.

    >>> import jax
    >>> tree_text(jax.tree_util.tree_structure({"a*b": 1, "c": [2, None]}), ["f32[2]", "f32[3]"])
    "{'a*b': f32[2], 'c': [f32[3], None]}"
    """
    if treedef.num_nodes > MAX_TREE_NODES:
        return f"a pytree of {treedef.num_leaves} leaves"
    leaves = iter(leaf_texts)
    return _node_text(treedef, leaves)


def _node_text(treedef, leaves) -> str:
    data = treedef.node_data()
    if data is None:
        return next(leaves, "?")
    kind, aux = data
    children = [_node_text(child, leaves) for child in treedef.children()]
    if kind is dict:
        return "{" + ", ".join(f"{key!r}: {child}" for key, child in zip(aux, children, strict=True)) + "}"
    if kind is list:
        return "[" + ", ".join(children) + "]"
    if kind is tuple:
        return "(" + ", ".join(children) + ("," if len(children) == 1 else "") + ")"
    if kind is type(None):
        return "None"
    fields = getattr(kind, "_fields", None)
    if fields is not None and len(fields) == len(children):  # a namedtuple
        return f"{kind.__name__}(" + ", ".join(f"{f}={c}" for f, c in zip(fields, children, strict=True)) + ")"
    return f"{getattr(kind, '__name__', 'node')}(" + ", ".join(children) + ")"


def _structure_text(treedef) -> str:
    text = str(treedef)
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef(") : -1]
    return text


def _parameter_names(fun, n_positional: int, kwargs: dict) -> dict[str, list[str]]:
    """Names of the parameters the positional values bind to, and of those left at their default."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return {"positional": [], "defaults": []}
    positional, defaults = [], []
    for param in sig.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            if len(positional) < n_positional:
                positional.append(param.name)
            elif param.name not in kwargs and param.default is not param.empty:
                defaults.append(param.name)
        elif param.kind is param.VAR_POSITIONAL:
            forwarded = _forwarded_names(fun, kwargs)[: n_positional - len(positional)]
            positional.extend(forwarded)
            positional.extend(f"{param.name}[{i}]" for i in range(len(positional), n_positional))
        elif param.kind is param.KEYWORD_ONLY and param.name not in kwargs and param.default is not param.empty:
            defaults.append(param.name)
    return {"positional": positional, "defaults": defaults}


def _forwarded_names(fun, kwargs: dict) -> list[str]:
    """The names of the parameters a Flax Linen ``model.apply(variables, *args, method=...)``
    hands its positional arguments to: the module's own ``__call__`` (or ``method``), as the
    user wrote it. ``[]`` for anything else."""
    owner = getattr(fun, "__self__", None)
    if getattr(fun, "__name__", "") != "apply" or not any(
        cls.__name__ == "Module" and cls.__module__.startswith("flax.linen") for cls in type(owner).__mro__
    ):
        return []
    method = kwargs.get("method") or type(owner).__call__
    if isinstance(method, str):
        method = getattr(type(owner), method, None)
    if method is None:
        return []
    try:
        parameters = list(inspect.signature(method).parameters.values())[1:]  # past self
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def function_identity(fun: Callable) -> tuple[str, tuple, tuple[str, int] | None]:
    """``(name, family, defined_at)`` of a callee.

    The family groups every definition of "the same" function: by module and qualified name, so a
    function re-defined in a loop or a re-run cell is recognised as a new definition of itself;
    lambdas, which all share one name, are told apart by where they are written, and named by
    their line: ``<lambda> (line 3)``.
    """
    name = display_name(fun)
    inner = innermost(fun)
    code = getattr(inner, "__code__", None)
    defined_at = (code.co_filename, definition_line(code)) if code is not None else None
    module = getattr(inner, "__module__", None) or type(inner).__module__
    qualname = getattr(inner, "__qualname__", None) or type(inner).__qualname__
    family: tuple = (module, qualname, "partial" if isinstance(fun, functools.partial) else "")
    if "<lambda>" in qualname and defined_at is not None:
        family += defined_at
        name = lambda_name(name, defined_at[1])
    return name, family, defined_at


def display_name(fun: Any) -> str:
    """The callee's name as JAX users know it: ``step``, ``Model.apply``, ``partial(step)``;
    a function defined inside another is named by itself, without its enclosing function.

    >>> def outer():
    ...     def step(x):
    ...         return x
    ...     return step
    >>> display_name(outer()), display_name(functools.partial(outer(), 1))
    ('step', 'partial(step)')
    """
    if isinstance(fun, functools.partial):
        return f"partial({display_name(fun.func)})"
    qualname = getattr(fun, "__qualname__", None)
    if isinstance(qualname, str) and not inspect.ismethod(fun):
        name = qualname.rsplit(".<locals>.", 1)[-1]
        return _COMPREHENSION.sub("", name)  # a lambda in a list comprehension: not its scope's name
    return callable_name(fun)


_COMPREHENSION = re.compile(r"^(?:<(?:listcomp|genexpr|dictcomp|setcomp)>\.)+")

_TRANSFORM_WRAPPERS = {
    "vmap_f": "jax.vmap",
    "grad_f": "jax.grad",
    "grad_f_aux": "jax.grad",
    "value_and_grad_f": "jax.value_and_grad",
    "jacfun": "jax.jacobian",
    "jacrev": "jax.jacrev",
    "jacfwd": "jax.jacfwd",
    "hessian": "jax.hessian",
    "f_checkpoint": "jax.checkpoint",
    "fun_remat": "jax.checkpoint",
}


def wrapper_name(fun: Any) -> str:
    """What wraps the function whose code runs, as the user wrote it: ``jax.vmap``,
    ``functools.partial``; ``""`` when ``fun`` is that function itself.

    >>> import functools, jax
    >>> def k(x, y):
    ...     return x
    >>> wrapper_name(jax.vmap(k)), wrapper_name(functools.partial(k, 1)), wrapper_name(k)
    ('jax.vmap', 'functools.partial', '')
    """
    if isinstance(fun, functools.partial):
        return "functools.partial"
    if innermost(fun) is fun or not hasattr(fun, "__wrapped__"):
        return ""
    inner, names = innermost(fun), []
    for _ in range(16):  # JAX's own decorators (its traceback filter) wrap the transform's function
        if fun is inner or fun is None:
            break
        candidates = [fun] + [_cell_value(cell) for cell in (getattr(fun, "__closure__", None) or ())]
        for candidate in candidates:
            code = getattr(candidate, "__code__", None)
            if code is not None and code.co_name in _TRANSFORM_WRAPPERS:
                return _TRANSFORM_WRAPPERS[code.co_name]
        code = getattr(fun, "__code__", None)
        if code is not None:
            names.append(code.co_name)
        fun = getattr(fun, "__wrapped__", None)
    return next((n for n in names if n != "reraise_with_filtered_traceback"), "")


def _cell_value(cell) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def definition_line(code) -> int:
    """The ``def`` line of a function (its code object starts at its first decorator)."""
    line = code.co_firstlineno
    for offset in range(32):
        text = linecache.getline(code.co_filename, line + offset).lstrip()
        if not text.startswith("@"):
            return line + offset
    return line


def _weak(obj: Any):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def _comparable(values: dict[str, Any], *, skip_complex: bool = False) -> tuple[tuple[str, Any], ...]:
    """``(name, value)`` pairs safe to keep and compare: simple values as they are, others as text.

    With ``skip_complex``, values that are not simple are left out (JAX's tracing context holds
    objects whose text changes from one call to the next without meaning anything).
    """
    out = []
    for name, value in values.items():
        if is_simple(value):
            out.append((name, value))
        elif not skip_complex:
            out.append((name, shorten(value_text(value, 10_000))))
    return tuple(out)


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    """``units.shorten`` at the length kept for one value.

    >>> shorten("a   long   text", limit=8)
    'a long …'
    """
    return units.shorten(text, limit)
