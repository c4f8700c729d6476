"""What each input and output of a traced jaxpr stands for, written as the user writes it:
``x``, ``params['w1']``, ``state.params['Dense_0']['kernel']``, ``m.linear.kernel``; for
``-t grad``, which input each gradient belongs to.

The names come from the trees themselves (``jax.tree_util`` key paths of the arguments JAX traced),
never from printed text.

>>> import jax, jax.numpy as jnp
>>> from jaxmagic.call import Call
>>> def f(params, x):
...     return params["w"] @ x
>>> call = Call(f, ({"w": jnp.ones((2, 2)), "b": jnp.ones(2)}, jnp.ones(2)), {})
>>> traced = jax.jit(f).trace(*call.args)
>>> input_names(call, traced), output_names(call, traced)
(["params['b']", "params['w']", 'x'], ['result'])
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from jaxmagic.callables import positional_parameters

RESULT = "result"
_OUTPUT_TRANSFORMS = ("grad", "value_and_grad", "jacfwd", "jacrev")


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
    if call.receiver and parameters:
        parameters = [call.receiver, *parameters[1:]]
    return parameters


def _parameter_for(position: int, parameters: list[str], static: set[int], *, skips_static: bool) -> str:
    """The name of the ``position``-th traced positional argument. ``skips_static``: JAX dropped the
    static arguments, so positions count the dynamic ones only."""
    if skips_static:
        dynamic = [i for i in range(max(len(parameters), position + len(static) + 1)) if i not in static]
        position = dynamic[position] if position < len(dynamic) else position
    if position < len(parameters):
        return parameters[position]
    return f"args[{position - len(parameters)}]" if parameters else f"args[{position}]"


def input_names(call: Any, traced: Any, transforms: Sequence[str] = ()) -> list[str]:
    """One name per input of ``traced.jaxpr``, in order (``[]`` where the structure is unknown)."""
    import jax

    flat = jax.tree_util.tree_flatten_with_path(traced.args_info)[0]
    parameters = _parameters(call)
    static = set(call.static_argnums)
    adapter = _adapter_kind(call)
    names = []
    for path, _ in flat:
        path = list(path)
        if adapter == "untraceable":  # traced as (dynamic_args, dynamic_kwargs, static_args, static_kwargs)
            path = path[1:]
        if len(path) < 2:
            names.append(_keys_text(path) or "?")
            continue
        group, first, rest = _index(path[0]), _index(path[1]), path[2:]
        if group == 0:
            head = _parameter_for(int(first), parameters, static, skips_static=adapter == "jax.jit" or bool(transforms))
        else:
            head = str(first)
        names.append(head + _keys_text(rest))
    if adapter == "nnx":
        names = _nnx_names(call, traced, names)
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
    flat = jax.tree_util.tree_flatten_with_path(traced.out_info)[0]
    if _adapter_kind(call) == "nnx":
        return _nnx_output_names(call, traced, len(flat))
    return [RESULT + _keys_text(path) for path, _ in flat]


def _nnx_output_names(call: Any, traced: Any, count: int) -> list[str]:
    """NNX returns the state of every module it was given, then the function's own result."""
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


def _nnx_names(call: Any, traced: Any, generic: list[str]) -> list[str]:
    """NNX traces a module as its graph's state: name each array by its attribute path
    (``m.linear.kernel``) where the state's leaves line up with the traced inputs."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None:
        return generic
    parameters = _parameters(call)
    names = []
    for position, value in enumerate(call.args):
        if position in call.static_argnums:
            continue
        head = parameters[position] if position < len(parameters) else f"args[{position}]"
        if nnx.graph.is_graph_node(value):
            for path, _ in nnx.to_flat_state(nnx.state(value)):
                names.append(head + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path))
        else:
            import jax

            names += [head + _keys_text(p) for p, _ in jax.tree_util.tree_flatten_with_path(value)[0]]
    for name, value in call.kwargs.items():
        import jax

        if name in call.static_argnames:
            continue
        names += [name + _keys_text(p) for p, _ in jax.tree_util.tree_flatten_with_path(value)[0]]
    return names if len(names) == len(generic) else generic
