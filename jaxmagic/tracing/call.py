"""Find "the cell's call": a call expression, or a cell whose last statement is one, becomes a ``Call``.

>>> import jax.numpy as jnp
>>> def scale(x, n):
...     return x * n
>>> call = resolve_call("scale(x, 3)", {"scale": scale, "x": jnp.ones(2)}, static="n")
>>> call.name, call.static_argnames, call.args[1]
('scale', ('n',), 3)
>>> call.jit()(*call.args, **call.kwargs).tolist()
[3.0, 3.0]
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from jaxmagic import _jax_private
from jaxmagic.errors import UsageProblem, UserCodeError
from jaxmagic.tracing import libraries
from jaxmagic.tracing.callables import (
    bind_jitted_method,
    callable_name,
    is_function_value,
    positional_parameters,
    signature_of,
    unwrap_jit,
)
from jaxmagic.tracing.expression import Expression, as_function
from jaxmagic.tracing.jitting import LibraryJitted, UntraceableLeavesStatic, fresh_function, has_untraceable_leaves
from jaxmagic.tracing.static_options import CALL_EXAMPLE, merged_static, parse_static
from jaxmagic.words import units
from jaxmagic.words.untrusted import value_text


@dataclass(frozen=True, eq=False)
class Call:
    """One call to trace, time or watch: the callee as the user wrote it, and its arguments.

    ``static_argnums`` / ``static_argnames`` / ``donate_argnums`` merge the callee's own ``jax.jit``
    options with those asked for on the magic's line (``-s``). ``library`` is set for a callee
    jitted by ``nnx.jit`` or ``eqx.filter_jit``, which is traced and timed with its library's own
    semantics. ``automatic_static`` names the function-valued arguments made static because JAX
    cannot trace a function (``lax.while_loop(cond_fun, body_fun, 0)``).
    """

    fn: Callable
    args: tuple
    kwargs: dict
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    donate_argnums: tuple[int, ...] = ()
    source: str = ""
    # The Python function under any jit wrapper: None only until __post_init__ finds it from ``fn``.
    function: Callable = field(default=None)  # pyright: ignore[reportAssignmentType]
    library: libraries.LibraryJit | None = None
    # ``library`` was chosen by jaxmagic, not written by the user: a plain function called with
    # Flax NNX objects, traced the way nnx.jit traces them.
    library_for_nnx_objects: bool = False
    automatic_static: tuple[str, ...] = ()
    # Arguments hold leaves jax.jit cannot trace (an Equinox module's activation function): those
    # leaves are static, the way eqx.filter_jit treats them.
    untraceable_leaves: bool = False
    # The callee was an object's method or the object itself (``model(x)``): the object became the
    # first argument, and this is how the user wrote it (``model``).
    receiver: str | None = None
    # The ``in_shardings`` / ``out_shardings`` of the callee's own ``jax.jit``, kept for its jit.
    jit_shardings: dict = field(default_factory=dict)
    # The line held an expression, not a call (``%jitcompare f(x) + 1``): the callee is that
    # expression as a function of its free names that hold arrays (``lambda x: f(x) + 1``).
    expression: Expression | None = None

    def __post_init__(self):
        if self.function is None:
            object.__setattr__(self, "function", unwrap_jit(self.fn))
        # JAX infers names from positions (and back) only when given one of the two; we give both.
        nums, names = complete_static(self.function, self.static_argnums, self.static_argnames)
        object.__setattr__(self, "static_argnums", nums)
        object.__setattr__(self, "static_argnames", names)

    @property
    def name(self) -> str:
        """A short name for the callee: ``f``, ``<lambda>``, ``Model.apply``, ``partial(f)``."""
        return callable_name(self.fn)

    @property
    def static(self) -> tuple:
        """Static arguments as given: positions then names."""
        return self.static_argnums + self.static_argnames

    def static_values(self) -> list[tuple[str, Any]]:
        """``(parameter name, value)`` of each static argument of this call, in call order: what
        jit traced with, baked into the program.

        >>> import jax.numpy as jnp
        >>> def scale(x, n):
        ...     return x * n
        >>> resolve_call("scale(x, 3)", {"scale": scale, "x": jnp.ones(2)}, static="n").static_values()
        [('n', 3)]
        """
        signature = self.signature
        positional = list(signature.parameters) if signature is not None else []
        found, seen = [], set()
        for position, value in enumerate(self.args):
            name = positional[position] if position < len(positional) else f"argument {position}"
            if position in self.static_argnums:
                found.append((name, value))
                seen.add(name)
        found += [(k, v) for k, v in self.kwargs.items() if k in self.static_argnames and k not in seen]
        return found

    @property
    def signature(self) -> inspect.Signature | None:
        """The callee's signature, or ``None`` where Python cannot tell (some builtins)."""
        return signature_of(self.function)

    def jit(self, **options) -> Callable:
        """``jax.jit`` of the callee with its static and donated arguments (``options`` override).

        A callee jitted by a library gets a fresh wrapper of that library instead (its own options).
        """
        import jax

        if self.library is not None:
            return LibraryJitted(self.library)
        if self.untraceable_leaves and not options:
            return UntraceableLeavesStatic(
                self.function, self.static_argnums, self.static_argnames, self.donate_argnums
            )

        settings: dict[str, Any] = dict(
            static_argnums=self.static_argnums,
            static_argnames=self.static_argnames,
            donate_argnums=self.donate_argnums,
        )
        settings.update(self.jit_shardings)
        settings.update(options)
        return jax.jit(fresh_function(self.function), **settings)  # the user's caches stay theirs

    def is_static(self, position: int | None = None, name: str | None = None) -> bool:
        """Whether the argument at ``position`` (or keyword ``name``) is static."""
        if position is not None:
            return position in self.static_argnums
        return name in self.static_argnames

    def dynamic(self) -> tuple[Callable, tuple, dict]:
        """The callee as a function of its dynamic arguments only, with those arguments.

        Transforms such as ``jax.grad`` and ``jax.vmap`` apply to this function: static arguments
        are baked in, so ``grad`` differentiates with respect to the first dynamic argument.
        """
        if self.library_for_nnx_objects:
            raise UsageProblem(
                f"`{self.name}` is called with Flax NNX objects (modules, optimizers, Rngs), which are traced "
                f"the way nnx.jit traces them; a JAX transform applied from the outside cannot map or "
                f"differentiate a module. Apply the NNX transform to the function and call that instead.",
                example=f"%jaxpr nnx.vmap({self.name}, in_axes=(None, 0))(model, x)   # or nnx.grad({self.name})(model, x)",
            )
        if self.library is not None:
            raise UsageProblem(
                f"`{self.name}` is jitted with {self.library.decorator}, whose arguments are not all arrays; "
                f"a transform cannot be applied from the outside. Apply it inside the function instead "
                f"(jax.grad / nnx.grad / eqx.filter_grad) and call that.",
                example="%jaxpr train_step(model, x, y)   # with nnx.grad inside train_step",
            )
        if self.untraceable_leaves:
            raise UsageProblem(
                f"the arguments of `{self.name}` hold leaves that are not arrays (functions or other objects, "
                f"such as an Equinox module's activation); a transform applied from the outside would try to "
                f"differentiate or map them. Use the filtered transform as the call instead.",
                example=f"%jaxpr eqx.filter_grad({self.name})(...)",
            )
        args, kwargs, function = self.args, self.kwargs, self.function
        dynamic_positions = [i for i in range(len(args)) if not self.is_static(position=i)]
        static_kwargs = {k: v for k, v in kwargs.items() if self.is_static(name=k)}
        dynamic_kwargs = {k: v for k, v in kwargs.items() if not self.is_static(name=k)}

        def with_static_arguments(*dynamic_args, **more_kwargs):
            full = list(args)
            for position, value in zip(dynamic_positions, dynamic_args, strict=False):
                full[position] = value
            return function(*full, **static_kwargs, **more_kwargs)

        with_static_arguments.__name__ = getattr(function, "__name__", self.name)
        with_static_arguments.__qualname__ = getattr(function, "__qualname__", self.name)
        return with_static_arguments, tuple(args[i] for i in dynamic_positions), dynamic_kwargs

    def arguments(self) -> dict[str, Any]:
        """Parameter name -> value as the callee will see it (positions where no name is known)."""
        sig = self.signature
        if sig is not None:
            try:
                bound = sig.bind(*self.args, **self.kwargs)
                return dict(bound.arguments)
            except TypeError:
                pass
        named = {f"arg{i}": a for i, a in enumerate(self.args)}
        named.update(self.kwargs)
        return named


def complete_static(
    fn: Callable, nums: tuple[int, ...], names: tuple[str, ...]
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Static positions and names, each completed from the other through ``fn``'s signature.

    >>> def f(x, n, *, mode="a"):
    ...     pass
    >>> complete_static(f, (1,), ("mode",))
    ((1,), ('mode', 'n'))
    """
    sig = signature_of(fn)
    if sig is None:
        return tuple(nums), tuple(names)
    params = list(sig.parameters.values())
    positional = [
        p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    num_list, name_list = list(nums), list(names)
    for index, param in enumerate(positional):
        if param.name in name_list and index not in num_list:
            num_list.append(index)
        if index in num_list and param.name not in name_list and param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            name_list.append(param.name)
    return tuple(sorted(num_list)), tuple(name_list)


# --------------------------------------------------------------------------------------------
# Parsing what the user typed


def parse_call_expression(text: str, *, magic: str = "%jaxpr", any_expression: bool = False) -> ast.expr:
    """The call expression in ``text`` (with ``any_expression``, any expression), or a
    ``UsageProblem`` saying what was expected.

    >>> ast.unparse(parse_call_expression("f(x, n=3)"))
    'f(x, n=3)'

    A trailing ``;`` (IPython's way to hide a line's value) is accepted:

    >>> ast.unparse(parse_call_expression("f(x);"))
    'f(x)'
    """
    text = text.strip()
    if text.endswith(";") and text[:-1].strip():
        text = text[:-1].rstrip()
    if not text:
        raise UsageProblem(f"{magic} needs a call expression to work on.", example=f"{magic} {CALL_EXAMPLE}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        if any_expression and _is_statement(text):
            raise UsageProblem(
                f"{magic} times an expression, such as `{CALL_EXAMPLE}` or `f(x) + 1`, not a statement: {text}",
                example=f"{magic} {CALL_EXAMPLE}",
            ) from None
        raise UsageProblem(
            f"{magic}: the call expression is not valid Python ({exc.msg}): {text}",
            example=f"{magic} {CALL_EXAMPLE}",
        ) from None
    if not isinstance(tree.body, ast.Call) and not any_expression:
        raise UsageProblem(
            f"{magic} works on a call expression such as `{CALL_EXAMPLE}`, not `{text}`.",
            example=f"{magic} {CALL_EXAMPLE}",
        )
    return tree.body


def _is_statement(text: str) -> bool:
    """Whether ``text`` is valid Python as a statement (``y = f(x)``), not as an expression."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def takes_any_expression(magic: str) -> bool:
    """Whether the magic times any expression, as ``%timeit`` does (``%jitcompare f(x) + 1``), or
    works on a call only."""
    return "jitcompare" in magic


# --------------------------------------------------------------------------------------------
# Evaluating the callee and its arguments


def resolve_call(
    text: str,
    namespace: dict[str, Any],
    *,
    local_namespace: Mapping[str, Any] | None = None,
    static: str | None = None,
    magic: str = "%jaxpr",
    filename: str = "<jaxmagic-call>",
    line: int = 1,
) -> Call:
    """Evaluate the callee and arguments of the call expression ``text`` in ``namespace``.

    ``local_namespace`` holds local variables (a magic used inside a function); ``static`` is the
    ``-s`` option: parameter names and/or positions, comma-separated. ``filename`` and ``line``
    say where the expression stands, for tracebacks and for lambdas written in the call itself.
    """
    node = parse_call_expression(text, magic=magic, any_expression=takes_any_expression(magic))
    if not isinstance(node, ast.Call):
        found = as_function(text, namespace, local_namespace, filename=filename, line=line, magic=magic)
        return _call_of(
            found.function,
            found.args,
            {},
            source=found.expression.text,
            receiver=None,
            static=static,
            magic=magic,
            expression=found.expression,
        )
    ast.increment_lineno(node, line - 1)
    fn, args, kwargs = _evaluate(node, namespace, local_namespace, filename, magic)
    check_callable(fn, text=ast.unparse(node.func), magic=magic)
    fn, args, kwargs = libraries.without_nnx_partials(fn, tuple(args), dict(kwargs))
    fn, bound_args = bind_jitted_method(fn, tuple(args))
    receiver = _receiver_text(node.func) if len(bound_args) > len(args) else None
    return _call_of(fn, bound_args, kwargs, source=ast.unparse(node), receiver=receiver, static=static, magic=magic)


def _call_of(
    fn: Callable,
    args: tuple,
    kwargs: dict,
    *,
    source: str,
    receiver: str | None,
    static: str | None,
    magic: str,
    expression: Expression | None = None,
) -> Call:
    """The ``Call`` of ``fn`` on these arguments: the callee's own jit options and library, the
    static arguments asked for and those made static because JAX cannot trace them, checked."""
    library = libraries.recognise(fn)
    if library is not None:
        options = _jax_private.JitOptions(library.static_argnums, library.static_argnames, library.donate_argnums)
    elif _jax_private.is_jitted(fn):
        options = _jax_private.jit_options(fn)
    else:
        options = _jax_private.JitOptions()
    static_argnums, static_argnames = parse_static(static, unwrap_jit(fn), args, magic=magic)
    automatic_nums, automatic_names, for_nnx_objects = (), (), False
    if library is None and not _jax_private.is_jitted(fn):  # a jitted callee keeps its own options
        automatic_nums = tuple(i for i, a in enumerate(args) if is_function_value(a))
        automatic_names = tuple(k for k, v in kwargs.items() if is_function_value(v))
        if libraries.holds_nnx_objects(args, kwargs):  # modules, optimizers, Rngs: traced as nnx.jit does
            fn = libraries.nnx_jit(fn, static_argnums + automatic_nums, static_argnames + automatic_names)
            library = libraries.recognise(fn)
            assert library is not None  # nnx.jit made it: recognised as nnx.jit
            options = _jax_private.JitOptions(library.static_argnums, library.static_argnames)
            for_nnx_objects = True
    untraceable = (
        library is None
        and not _jax_private.is_jitted(fn)
        and has_untraceable_leaves(
            tuple(a for i, a in enumerate(args) if i not in static_argnums + automatic_nums + options.static_argnums),
            {k: v for k, v in kwargs.items() if k not in static_argnames + automatic_names},
        )
    )
    call = Call(
        fn=fn,
        args=tuple(args),
        kwargs=dict(kwargs),
        static_argnums=merged_static(options.static_argnums, static_argnums + automatic_nums),
        static_argnames=merged_static(options.static_argnames, static_argnames + automatic_names),
        donate_argnums=options.donate_argnums,
        source=source,
        library=library,
        library_for_nnx_objects=for_nnx_objects,
        automatic_static=_parameter_names(unwrap_jit(fn), automatic_nums) + automatic_names,
        untraceable_leaves=untraceable,
        receiver=receiver,
        jit_shardings=_own_shardings(fn, library, receiver, static_argnums + automatic_nums, static_argnames),
        expression=expression,
    )
    check_static_values(call, magic=magic)
    if "jitcompare" in magic:
        _check_runnable(call, magic=magic)
    return call


def _own_shardings(fn, library, receiver, added_nums, added_names) -> dict:
    """The callee's own ``jax.jit`` shardings, to compile it as it would be: ``out_shardings``
    always; ``in_shardings`` only where the arguments are the ones it was given (no receiver
    bound in front, no argument made static on the magic's line)."""
    if library is not None or not _jax_private.is_jitted(fn):
        return {}
    found = _jax_private.jit_shardings(fn)
    if receiver is not None or added_nums or added_names:
        found.pop("in_shardings", None)
    return found


def _check_runnable(call: Call, *, magic: str) -> None:
    """A ``UsageProblem`` when an argument is a ``jax.ShapeDtypeStruct``: a shape and a dtype,
    enough to trace (``%jaxpr``), but no values to run and time.

    >>> import jax, jax.numpy as jnp
    >>> _check_runnable(Call(jnp.sin, (jax.ShapeDtypeStruct((3,), jnp.float32),), {}), magic="%jitcompare")
    Traceback (most recent call last):
    ...
    jaxmagic.errors.UsageProblem: %jitcompare runs the call, and `x` is a jax.ShapeDtypeStruct: a shape and a dtype with no values. Pass an array of that shape, e.g. jnp.zeros((3,), jnp.float32) (%jaxpr traces a ShapeDtypeStruct as it is).
    """
    import jax

    for parameter, value in call.arguments().items():
        for path, leaf in jax.tree_util.tree_leaves_with_path(value):
            if not isinstance(leaf, jax.ShapeDtypeStruct):
                continue
            name = parameter + jax.tree_util.keystr(path)
            raise UsageProblem(
                f"{magic} runs the call, and `{name}` is a jax.ShapeDtypeStruct: a shape and a dtype with no "
                f"values. Pass an array of that shape, e.g. jnp.zeros({tuple(leaf.shape)}, jnp.{leaf.dtype}) "
                f"(%jaxpr traces a ShapeDtypeStruct as it is).",
            )


def _receiver_text(func: ast.expr) -> str:
    """How the user wrote the object a call was bound to: ``model`` for ``model(x)`` and for
    ``model.apply(x)``."""
    return ast.unparse(func.value if isinstance(func, ast.Attribute) else func)


def _parameter_names(fn: Callable, positions: tuple[int, ...]) -> tuple[str, ...]:
    positional = positional_parameters(fn)
    return tuple(positional[i] if i < len(positional) else f"argument {i}" for i in positions)


def check_static_values(call: Call, *, magic: str = "%jaxpr") -> None:
    """A ``UsageProblem`` when a static argument's value cannot be hashed (a list, a dict, an array):
    JAX finds a compiled version again by the hash of each static value.

    >>> def f(x, shape):
    ...     return x
    >>> check_static_values(Call(f, (1.0, [2, 3]), {}, static_argnums=(1,)))
    Traceback (most recent call last):
    ...
    jaxmagic.errors.UsageProblem: %jaxpr: `shape` is static, but its value [2, 3] is a list, which cannot be hashed. JAX finds each compiled version again by the hash of its static values: pass a hashable value (a tuple instead of a list, a number instead of an array), or leave `shape` dynamic.
    """
    positional = positional_parameters(call.function)
    static = [
        (f"`{positional[i]}`" if i < len(positional) else f"Argument {i}", call.args[i])
        for i in call.static_argnums
        if i < len(call.args)
    ]
    static += [(f"`{name}`", call.kwargs[name]) for name in call.static_argnames if name in call.kwargs]
    for name, value in static:
        try:
            hash(value)
        except Exception:
            shown = " ".join(_short_repr(value).split())
            kind = "an array" if hasattr(value, "shape") and hasattr(value, "dtype") else f"a {type(value).__name__}"
            raise UsageProblem(
                f"{magic}: {name} is static, but its value {shown} is {kind}, which cannot be "
                f"hashed. JAX finds each compiled version again by the hash of its static values: pass a hashable "
                f"value (a tuple instead of a list, a number instead of an array), or leave {name} dynamic."
            ) from None


def check_traceable(call: Call, *, magic: str = "%jaxpr") -> None:
    """A ``UsageProblem`` when a dynamic (not static) argument is or holds a string: ``jax.jit``
    traces arrays and numbers, and a string can only be a static argument.

    >>> def greet(x, name):
    ...     return x
    >>> check_traceable(Call(greet, (1.0, "hi"), {}))
    Traceback (most recent call last):
    ...
    jaxmagic.errors.UsageProblem: %jaxpr: `name` is the string 'hi', and jax.jit traces arrays and numbers, not strings. Mark it static, so that its value is part of the compiled code: -s name
    Example: %jaxpr -s name greet(...)
    >>> check_traceable(Call(greet, (1.0, "hi"), {}, static_argnums=(1,)))
    """
    import jax

    if call.library is not None and call.library.all_non_arrays_static:
        return  # eqx.filter_jit: every leaf that is not an array is static
    positional = positional_parameters(call.function)
    dynamic = [
        (positional[i] if i < len(positional) else str(i), value)
        for i, value in enumerate(call.args)
        if not call.is_static(position=i)
    ]
    dynamic += [(name, value) for name, value in call.kwargs.items() if not call.is_static(name=name)]
    for name, value in dynamic:
        text = next((leaf for leaf in jax.tree_util.tree_leaves(value) if isinstance(leaf, (str, bytes))), None)
        if text is None:
            continue
        shown = f"`{name}`" if not name.isdigit() else f"Argument {name}"
        if text is value:
            what = f"{shown} is the string {_short_repr(value)}"
        else:
            what = f"{shown} holds the string {_short_repr(text)}"
        try:
            hash(value)
            fix = f"Mark it static, so that its value is part of the compiled code: -s {name}"
        except Exception:
            fix = "Pass only arrays and numbers there, and strings as separate static arguments (-s NAME)"
        raise UsageProblem(
            f"{magic}: {what}, and jax.jit traces arrays and numbers, not strings. {fix}",
            example=f"{magic} -s {name} {call.source or callable_name(call.fn) + '(...)'}",
        )


def _short_repr(value: Any, limit: int = 60) -> str:
    return units.shorten(value_text(value, 10_000), limit)


def _evaluate(node: ast.Call, namespace: dict, local_namespace: Mapping | None, filename: str, magic: str):
    """Evaluate ``f(a, *b, k=c, **d)`` as the triple ``(f, (a, *b), {'k': c, **d})``."""
    triple = ast.Tuple(
        elts=[
            node.func,
            ast.Tuple(elts=list(node.args), ctx=ast.Load()),
            ast.Dict(
                keys=[None if kw.arg is None else ast.Constant(kw.arg) for kw in node.keywords],
                values=[kw.value for kw in node.keywords],
            ),
        ],
        ctx=ast.Load(),
    )
    keys = [kw.arg for kw in node.keywords if kw.arg is not None]
    if len(keys) != len(set(keys)):
        raise UsageProblem(f"{magic}: a keyword argument is given twice in `{ast.unparse(node)}`.")
    expression = ast.Expression(body=triple)
    ast.copy_location(triple, node)
    ast.fix_missing_locations(expression)
    code = compile(expression, filename, "eval")
    try:
        return eval(code, namespace, local_namespace if local_namespace is not None else namespace)
    except NameError as exc:
        raise UsageProblem(
            f"{magic}: {exc}. Define it first (run the cell that defines it), "
            f"or use the cell form, where the cell's own definitions run first.",
            example=f"{magic} {CALL_EXAMPLE}",
        ) from None
    except Exception as exc:
        raise UserCodeError(exc, during=f"evaluating the arguments of `{ast.unparse(node)}`") from None


def check_callable(fn: Any, *, text: str, magic: str) -> None:
    """A ``UsageProblem`` unless ``fn`` is something that can be traced."""
    _check_not_ahead_of_time(fn, text=text, magic=magic)
    if not callable(fn):
        raise UsageProblem(
            f"{magic}: `{text}` is a {type(fn).__name__}, not a function; "
            f"the call's callee must be a function, a jitted function, a lambda, a partial, "
            f"a method or a callable object.",
            example=f"{magic} {CALL_EXAMPLE}",
        )
    inner = unwrap_jit(fn)
    if inspect.isclass(inner):
        raise UsageProblem(
            f"{magic}: `{text}` is a class; call a function or method that returns arrays instead "
            f"(e.g. an instance's `__call__` or `apply`).",
            example=f"{magic} model.apply(params, x)",
        )
    if inspect.isgeneratorfunction(inner) or inspect.isasyncgenfunction(inner):
        raise UsageProblem(
            f"{magic}: `{text}` is a generator function; JAX can only trace a function that returns "
            f"arrays (or pytrees of them).",
        )
    if inspect.iscoroutinefunction(inner):
        raise UsageProblem(
            f"{magic}: `{text}` is an async function; JAX can only trace a plain function that "
            f"returns arrays (or pytrees of them).",
        )


def _check_not_ahead_of_time(fn: Any, *, text: str, magic: str) -> None:
    """A ``UsageProblem`` for ``jax.jit(f).lower(x)`` / ``.compile()``: what is left of the function
    is XLA's program for one signature, with no jaxpr and no eager form.

    >>> import jax, jax.numpy as jnp
    >>> compiled = jax.jit(jnp.sin).lower(jnp.ones(2)).compile()
    >>> _check_not_ahead_of_time(compiled, text="compiled", magic="%jaxpr")
    Traceback (most recent call last):
    ...
    jaxmagic.errors.UsageProblem: %jaxpr: `compiled` is ahead-of-time compiled (`jax.jit(f).lower(...).compile()`): only XLA's program for one signature is left, no jaxpr; read it with `compiled.as_text()`, or trace the function it was compiled from.
    Example: %jaxpr f(x)
    """
    import jax

    stages = (jax.stages.Compiled, jax.stages.Lowered)
    if not isinstance(fn, stages):
        return
    kind = "compiled" if isinstance(fn, jax.stages.Compiled) else "lowered"
    how = "`jax.jit(f).lower(...).compile()`" if kind == "compiled" else "`jax.jit(f).lower(...)`"
    if "jitcompare" in magic:
        rest = (
            "it has no eager form to compare with; compare the function it was compiled from, or time the "
            f"compiled call alone with %timeit {text}(...)"
        )
    else:
        rest = f"only XLA's program for one signature is left, no jaxpr; read it with `{text}.as_text()`, or trace the function it was compiled from"
    raise UsageProblem(f"{magic}: `{text}` is ahead-of-time {kind} ({how}): {rest}.", example=f"{magic} f(x)")
