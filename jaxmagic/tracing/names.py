"""What each input and output of a traced jaxpr stands for, written as the user writes it:
``x``, ``params['w1']``, ``state.params['Dense_0']['kernel']``, ``m.linear.kernel``; for
``-t grad``, which input each gradient belongs to.

The names come from the trees themselves (``jax.tree_util`` key paths of the arguments JAX traced),
never from printed text.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> def f(params, x):
...     return params["w"] @ x
>>> call = Call(f, ({"w": jnp.ones((2, 2)), "b": jnp.ones(2)}, jnp.ones(2)), {})
>>> traced = jax.jit(f).trace(*call.args)
>>> input_names(call, traced), output_names(call, traced)
(["params['b']", "params['w']", 'x'], ['result'])
"""

from __future__ import annotations

import ast
import collections
import sys
from typing import Any, Sequence

from jaxmagic import _jax_private
from jaxmagic.tracing.callables import callable_name, positional_parameters, python_function

RESULT = "result"
EQUINOX_MARKER = "Equinox's marker"  # the int32 that eqx.filter_jit's program returns first, and waits on
_OUTPUT_TRANSFORMS = ("grad", "value_and_grad", "jacfwd", "jacrev")
# Transforms a user wraps a function in, by the name they call them (``jax.vmap``, ``nnx.grad``,
# ``eqx.filter_grad``, ``checkify.checkify``): a title names each one. A jit adds nothing to a title:
# every listing is of a jitted call.
_TITLED_TRANSFORMS = {
    "grad",
    "value_and_grad",
    "vmap",
    "pmap",
    "jacfwd",
    "jacrev",
    "jacobian",
    "hessian",
    "checkpoint",
    "remat",
    "checkify",
    "shard_map",
    "custom_jvp",
    "custom_vjp",
    "filter_grad",
    "filter_value_and_grad",
    "filter_vmap",
    "filter_pmap",
    "filter_checkpoint",
    "scan",
}
_JIT_WRAPPERS = {"jit", "pjit", "filter_jit"}


def callee_title(call: Any) -> str:
    """The callee as the user wrote it, each transform they wrapped it in named: ``vmap(grad(loss))``
    for ``jax.vmap(jax.grad(loss), in_axes=(None, 0))(w, xs)``; the callee's own name otherwise.

    >>> import jax
    >>> from jaxmagic.tracing.call import Call
    >>> def loss(w):
    ...     return w
    >>> callee_title(Call(jax.vmap(jax.grad(loss)), (), {}, source="jax.vmap(jax.grad(loss), in_axes=0)(ws)"))
    'vmap(grad(loss))'
    >>> callee_title(Call(jax.jit(loss), (), {}, source="jax.jit(loss)(w)"))
    'loss'
    >>> grad_loss = jax.grad(loss)  # made earlier, called by its own name
    >>> callee_title(Call(grad_loss, (), {}, source="grad_loss(w)"))
    'grad(loss)'
    """
    try:
        node = ast.parse(call.source, mode="eval").body
    except SyntaxError:
        node = None
    title = _expression_title(node.func) if isinstance(node, ast.Call) else None
    if title is not None and "(" in title:
        return title
    words, inner = _jax_private.transform_chain(call.function, _TITLED_TRANSFORMS)  # made in an earlier cell
    if not words:
        return call.name
    title = callable_name(inner)
    for word in reversed(words):
        title = f"{word}({title})"
    return title


def _expression_title(expression: ast.expr) -> str | None:
    """``grad(f)`` for ``jax.grad(f, argnums=1)``; ``None`` for what is not a transform of a name."""
    if isinstance(expression, ast.Name):
        return expression.id
    if isinstance(expression, ast.Attribute):
        return ast.unparse(expression)
    if isinstance(expression, ast.Lambda):
        return "<lambda>"
    if not isinstance(expression, ast.Call) or not expression.args:
        return None
    head = expression.func
    if isinstance(head, ast.Call) and not head.args:  # nnx.vmap(in_axes=0)(f): a decorator with options
        head = head.func
    word = head.attr if isinstance(head, ast.Attribute) else head.id if isinstance(head, ast.Name) else None
    inner = _expression_title(expression.args[0])
    if inner is None or word not in _TITLED_TRANSFORMS | _JIT_WRAPPERS:
        return None
    return inner if word in _JIT_WRAPPERS else f"{word}({inner})"


def _keys_text(path: Sequence[Any]) -> str:
    import jax

    return jax.tree_util.keystr(tuple(path))


def _index(key: Any) -> Any:
    """The index or name a path key stands for (``[3]`` -> 3, ``['k']`` -> 'k')."""
    for attribute in ("idx", "key", "name"):
        if hasattr(key, attribute):
            return getattr(key, attribute)
    return key


def _parameters(call: Any) -> list[str]:
    """The callee's positional parameters, the first one named as the user wrote the object a
    method was bound to (``model``, not ``self``)."""
    parameters = positional_parameters(call.function)
    if not parameters:  # a transform's wrapper that takes *args (checkify): the function inside it
        words, inner = _jax_private.transform_chain(call.function, _TITLED_TRANSFORMS)
        parameters = positional_parameters(inner) if words else []
    if call.receiver and parameters:
        parameters = [call.receiver, *parameters[1:]]
    return parameters


def _parameter_for(
    position: int, parameters: list[str], static: set[int], written: list[str], *, skips_static: bool
) -> str:
    """The name of the ``position``-th traced positional argument: its parameter's name, or where
    the callee takes ``*args`` (a transform's wrapper), the argument as the user wrote it.
    ``skips_static``: JAX dropped the static arguments, so positions count the dynamic ones only."""
    if skips_static:
        dynamic = [i for i in range(max(len(parameters), position + len(static) + 1)) if i not in static]
        position = dynamic[position] if position < len(dynamic) else position
    if position < len(parameters):
        return parameters[position]
    if position < len(written):
        return written[position]
    return f"args[{position - len(parameters)}]" if parameters else f"args[{position}]"


def input_names(call: Any, traced: Any, transforms: Sequence[str] = ()) -> list[str]:
    """One name per input of ``traced.jaxpr``, in order (``[]`` where the structure is unknown)."""
    import jax

    args_info = traced.args_info  # JAX builds it anew at each read: once here, not once per input
    flat = jax.tree_util.tree_flatten_with_path(args_info)[0]
    parameters = _parameters(call)
    written = _argument_texts(call)
    static = set(call.static_argnums)
    adapter = _adapter_kind(call)
    heads = []  # per input: (the argument's name, its traced value, the path inside it)
    for full_path, _ in flat:
        path = list(full_path)
        skipped = 1 if adapter == "untraceable" else 0  # traced as (dynamic_args, dynamic_kwargs, static...)
        path = path[skipped:]
        if len(path) < 2:
            heads.append((_keys_text(path) or "?", None, []))
            continue
        group, first = _index(path[0]), _index(path[1])
        if group == 0:
            head = _parameter_for(
                int(first), parameters, static, written, skips_static=adapter == "jax.jit" or bool(transforms)
            )
        else:
            head = str(first)
        heads.append((head, _walk(args_info, list(full_path)[: skipped + 2]), path[2:]))
    roots = {head: value for head, value, _ in heads}
    names = _numbered([_written_path(head, value, rest, roots) for head, value, rest in heads])
    if adapter == "nnx":
        names = _nnx_names(call, traced, names)
    return names


def _argument_texts(call: Any) -> list[str]:
    """Each positional argument of the call as the user wrote it (``xs``, ``(a + b)``), the object a
    method was bound to first; ``[]`` where unknown."""
    try:
        node = ast.parse(call.source, mode="eval").body
    except SyntaxError:
        return []
    if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
        return []
    simple = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant)
    texts = [ast.unparse(a) if isinstance(a, simple) else f"({ast.unparse(a)})" for a in node.args]
    return [call.receiver, *texts] if call.receiver else texts


def _walk(value: Any, path: Sequence[Any]) -> Any:
    """The part of ``value`` at a key path (``None`` where it cannot be reached)."""
    for key in path:
        value = _child(value, key)
        if value is None:
            return None
    return value


def _child(value: Any, key: Any) -> Any:
    import jax

    try:
        if isinstance(key, jax.tree_util.GetAttrKey):
            return getattr(value, key.name)
        if isinstance(key, jax.tree_util.FlattenedIndexKey):
            return _node_children(value)[key.key]
        return value[_index(key)]
    except Exception:  # a tree that cannot be read back: no value, only the path
        return None


def _node_children(node: Any) -> list:
    """The children a pytree node flattens into, one level down."""
    import jax

    return jax.tree_util.tree_flatten(node, is_leaf=lambda x: x is not node)[0]


def _written_path(head: str, value: Any, path: Sequence[Any], roots: dict) -> tuple[str, str | None]:
    """``(text, kind)``: the path as Python from ``head`` (``s.x``, ``params['w']``), cut where no
    Python names the next step (a pytree node whose children are no attributes of it, a key such as
    an effect): ``kind`` then says what the part cut at is (its type's name), else ``""``; ``None``
    where the rest is a library's wrapping of the value named (``result['l1']['bias']``)."""
    text = head
    for key in path:
        if _is_library_wrapper(value):
            return text, None
        step = _key_text(key, value, roots)
        if step is None:
            return text, type(value).__name__ if value is not None else "part"
        text += step
        value = _child(value, key)
    return text, ""


def _is_library_wrapper(value: Any) -> bool:
    """A library's own wrapping of the user's value, which the user never sees: Flax NNX hands a
    returned variable back as a ``NodeStates``."""
    return type(value).__name__ == "NodeStates" and type(value).__module__.startswith("flax.nnx")


def _key_text(key: Any, node: Any, roots: dict) -> str | None:
    import jax

    if isinstance(key, jax.tree_util.FlattenedIndexKey):
        return _field_of(node, key.key, roots)
    if isinstance(key, jax.tree_util.DictKey) and not isinstance(key.key, (str, int, float, bool, type(None))):
        return None
    text = _keys_text([key])
    try:
        ast.parse("x" + text, mode="eval")
    except SyntaxError:
        return None
    return text


def _field_of(node: Any, position: int, roots: dict) -> str | None:
    """How the user reads a pytree node's ``position``-th child: the attribute holding it
    (``.x``; ``.items[2]``), or for an Equinox ``State`` the ``.get(model.norm.state_index)`` that
    reads it; ``None`` where no public attribute holds it."""
    if node is None:
        return None
    try:
        child = _node_children(node)[position]
    except Exception:  # a node that cannot be flattened again
        return None
    if _is_equinox_state(node):
        return _equinox_state_getter(node, child, roots)
    for name, held in _public_attributes(node).items():
        if held is child:
            return f".{name}"
        if isinstance(held, (list, tuple)):
            for index, item in enumerate(held):
                if item is child:
                    return f".{name}[{index}]"
        if isinstance(held, dict):
            for k, item in held.items():
                if item is child and isinstance(k, (str, int)):
                    return f".{name}[{k!r}]"
    return None


def _public_attributes(node: Any) -> dict[str, Any]:
    attributes = getattr(node, "__dict__", None) or {
        name: getattr(node, name) for name in getattr(type(node), "__slots__", ()) if hasattr(node, name)
    }
    return {name: held for name, held in attributes.items() if name.isidentifier() and not name.startswith("_")}


def _is_equinox_state(node: Any) -> bool:
    return type(node).__name__ == "State" and type(node).__module__.startswith("equinox")


def _equinox_state_getter(state: Any, child: Any, roots: dict) -> str | None:
    """``.get(model.norm.state_index)``: the ``StateIndex`` among the call's other arguments whose
    marker keys ``child`` in an Equinox ``State``."""
    import jax

    markers = [k for k, v in getattr(state, "_state", {}).items() if v is child]
    if not markers:
        return None
    for head, root in roots.items():
        found = jax.tree_util.tree_flatten_with_path(root, is_leaf=lambda x: type(x).__name__ == "StateIndex")[0]
        for path, leaf in found:
            if type(leaf).__name__ == "StateIndex" and getattr(leaf, "marker", None) is markers[0]:
                return f".get({head}{_keys_text(path)})"
            if type(leaf).__name__ == "StateIndex" and isinstance(markers[0], str) and leaf.marker == markers[0]:
                return f".get({head}{_keys_text(path)})"
    return None


def _numbered(written: list[tuple[str, str | None]]) -> list[str]:
    """Names from ``(text, kind)``: a path cut short names each leaf under it by its place,
    ``result[0] (Error, leaf 2 of 3)``.

    >>> _numbered([("x", ""), ("err", "Error"), ("err", "Error"), ("g", None)])
    ['x', 'err (Error, leaf 1 of 2)', 'err (Error, leaf 2 of 2)', 'g']
    """
    totals = collections.Counter(text for text, kind in written if kind != "")
    seen: collections.Counter = collections.Counter()
    names = []
    for text, kind in written:
        if kind == "":
            names.append(text)
            continue
        seen[text] += 1
        place = f"leaf {seen[text]} of {totals[text]}" if totals[text] > 1 else ""
        note = ", ".join(part for part in (kind, place) if part)
        names.append(f"{text} ({note})" if note else text)
    return names


def output_names(call: Any, traced: Any, transforms: Sequence[str] = ()) -> list[str]:
    """One name per output of ``traced.jaxpr``: ``result``, ``result[0]``, ``result['loss']``; for a
    gradient, ``grad of params['w1']``."""
    import jax

    deciding = [t for t in transforms if t in _OUTPUT_TRANSFORMS]
    if deciding:
        kind = deciding[-1]  # the innermost transform that changes the outputs
        wrt = [
            name
            for name, first in zip(input_names(call, traced, transforms), _first_argument_flags(traced), strict=False)
            if first
        ]
        word = "grad of" if kind in ("grad", "value_and_grad") else "jacobian w.r.t."
        named = [f"{word} {name}" for name in wrt]
        if kind == "value_and_grad":
            named = ["value", *named]
        if len(named) == len(traced.jaxpr.out_avals):
            return named
    out_info = traced.out_info  # JAX builds it anew at each read: once here, not once per output
    flat = jax.tree_util.tree_flatten_with_path(out_info)[0]
    if _adapter_kind(call) == "nnx":
        return _nnx_output_names(call, traced, len(flat))
    roots = _input_roots(call, traced)
    if call.library is not None and call.library.decorator == "eqx.filter_jit":  # (marker, result)
        named = [_written_path(RESULT, out_info[1], list(path[1:]), roots) for path, _ in flat[1:]]
        return [EQUINOX_MARKER, *_numbered(named)]
    return _numbered([_written_path(RESULT, out_info, list(path), roots) for path, _ in flat])


def _input_roots(call: Any, traced: Any) -> dict:
    """Each positional argument's name -> its traced value (where an output refers to an input)."""
    parameters = _parameters(call)
    try:
        dynamic = traced.args_info[0]
    except (TypeError, IndexError, KeyError):
        return {}
    if not isinstance(dynamic, (tuple, list)):
        return {}
    return {name: value for name, value in zip(parameters, dynamic, strict=False)}


def _nnx_output_names(call: Any, traced: Any, count: int) -> list[str]:
    """NNX returns the state of every argument holding its objects (``[0][i]``: argument ``i``
    after the call), then the function's own result (``[2]``); where the outputs do not line up
    with that, by count: the states of the modules it was given, then the result."""
    by_position = _nnx_names_by_position(call)
    named = _nnx_outputs_by_path(traced, by_position) if by_position is not None else None
    if named is not None and len(named) == count:
        return named
    states = [name for name in input_names(call, traced) if "." in name or "[" in name]
    graph = sys.modules.get("flax.nnx.graph")
    if graph is not None:
        nodes = [
            p for i, (p, v) in enumerate(zip(_parameters(call), call.args, strict=False)) if graph.is_graph_node(v)
        ]
        states = [name for name in input_names(call, traced) if name.split(".")[0].split("[")[0] in nodes]
    results = count - len(states)
    if results < 1:
        return [f"output {i}" for i in range(count)]
    result_names = [RESULT] if results == 1 else [f"{RESULT}[{i}]" for i in range(results)]
    return [f"{name} (after the call)" for name in states] + result_names


def _first_argument_flags(traced: Any) -> list[bool]:
    """For each input: does it belong to the first positional argument (what ``grad`` differentiates)."""
    import jax

    return [
        len(path) >= 2 and _index(path[0]) == 0 and _index(path[1]) == 0
        for path, _ in jax.tree_util.tree_flatten_with_path(traced.args_info)[0]
    ]


def _adapter_kind(call: Any) -> str:
    if call.library is not None:
        return "nnx" if call.library.decorator == "nnx.jit" else "filtered"
    if call.untraceable_leaves:
        return "untraceable"
    return "jax.jit"


def _nnx_outputs_by_path(traced: Any, by_position: dict[int, list[str]]) -> list[str] | None:
    import jax

    written, taken = [], collections.Counter()
    out_info = traced.out_info  # built anew at each read
    for path, _ in jax.tree_util.tree_flatten_with_path(out_info)[0]:
        keys = [_index(k) for k in path[:2]]
        if len(keys) == 2 and keys[0] == 0 and keys[1] in by_position:
            position = keys[1]
            if taken[position] >= len(by_position[position]):
                return None
            written.append((f"{by_position[position][taken[position]]} (after the call)", ""))
            taken[position] += 1
        elif keys and keys[0] == 2:
            written.append(_written_path(RESULT, _walk(out_info, path[:1]), list(path[1:]), {}))
        else:
            return None
    if any(taken[p] not in (0, len(names)) for p, names in by_position.items()):
        return None
    return _numbered(written)


def _nnx_names_by_position(call: Any) -> dict[int, list[str]] | None:
    """Position -> the names of that positional argument's arrays, as ``_nnx_names`` gives them."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None:
        return None
    import jax

    parameters, written = _parameters(call), _argument_texts(call)
    found = {}
    for position, value in enumerate(call.args):
        if position in call.static_argnums:
            continue
        head = _parameter_for(position, parameters, set(), written, skips_static=False)
        if nnx.graph.is_graph_node(value):
            paths = [path for path, _ in nnx.to_flat_state(nnx.state(value))]
            found[position] = [
                head + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) for path in paths
            ]
        else:
            found[position] = [head + _keys_text(p) for p, _ in jax.tree_util.tree_flatten_with_path(value)[0]]
    return found


def _nnx_names(call: Any, traced: Any, generic: list[str]) -> list[str]:
    """NNX traces a module as its graph's state: name each array by its attribute path
    (``m.linear.kernel``) where the state's leaves line up with the traced inputs."""
    import jax

    by_position = _nnx_names_by_position(call)
    if by_position is None:
        return generic
    names = [name for position in sorted(by_position) for name in by_position[position]]
    for name, value in call.kwargs.items():
        if name in call.static_argnames:
            continue
        names += [name + _keys_text(p) for p, _ in jax.tree_util.tree_flatten_with_path(value)[0]]
    return names if len(names) == len(generic) else generic


def captured_names(closed_jaxpr: Any, fn: Any) -> dict[str, str]:
    """The arrays a traced function read from outside (the jaxpr's constants), by shape
    (``f32[512,512]``) to the name the function reads each by: a global of its module or a
    variable it closes over. A shape two of them share is left out (which is which is unknown).

    >>> import jax, jax.numpy as jnp
    >>> w = jnp.ones((3, 4))
    >>> def f(x):
    ...     return x @ w
    >>> captured_names(jax.make_jaxpr(f)(jnp.ones(3)), f)
    {'f32[3,4]': 'w'}
    """
    from jax.core import ShapedArray

    function = python_function(fn)
    if function is None:
        return {}
    scope = dict(getattr(function, "__globals__", {}))
    for variable, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=False):
        try:
            scope[variable] = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
    by_id = {id(value): variable for variable, value in scope.items() if hasattr(value, "shape")}
    found: dict[str, list[str]] = collections.defaultdict(list)
    for constant in getattr(closed_jaxpr, "consts", ()):
        if getattr(constant, "size", 0) <= 1 or not hasattr(constant, "dtype"):
            continue
        shape = ShapedArray(constant.shape, constant.dtype).str_short(short_dtypes=True)
        found[shape].append(by_id.get(id(constant), ""))
    return {shape: named[0] for shape, named in found.items() if len(set(named)) == 1 and named[0]}
