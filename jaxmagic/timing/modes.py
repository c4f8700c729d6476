"""How each timing mode runs the cell's call: ``eager`` (the user's own call, ``f(*args)``, jit on:
what they run without the outer ``jax.jit``), ``op-by-op`` (the same under ``jax.disable_jit()``:
every operation on its own, inner jits included), ``jit``, ``sharded`` (jit with the leading axis
split over a one-axis mesh of every device) and ``pmap`` (one slice per device).

A ``Runner`` holds a mode's callable and its arguments, already placed on the devices, so that
the stopwatch times calls and nothing else.

>>> import jax.numpy as jnp
>>> from jaxmagic.tracing.call import Call
>>> runner = build("jit", Call(jnp.sin, (jnp.zeros(2),), {}))
>>> runner.mode, runner.compiles, runner.call().tolist()
('jit', True, [0.0, 0.0])
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

import jax
import numpy as np

from jaxmagic import _jax_private
from jaxmagic.errors import UsageProblem
from jaxmagic.timing.notes import Note
from jaxmagic.tracing import libraries
from jaxmagic.tracing.call import Call
from jaxmagic.tracing.callables import positional_parameters
from jaxmagic.tracing.jitting import fresh_function

MODES = ("eager", "jit", "op-by-op", "sharded", "pmap")
DEFAULT_MODES = ("eager", "jit")
UNCOMPILED_MODES = ("eager", "op-by-op")  # they run the user's Python on every call
EAGER_SETUP = "f(*args), as you call it without the outer jit (jitted functions inside stay jitted)"
OP_BY_OP_SETUP = "f(*args) under jax.disable_jit(): every operation on its own, inner jits included"
MULTI_DEVICE_MODES = ("sharded", "pmap")
MESH_AXIS = "devices"
SIMULATE_DEVICES = "XLA_FLAGS=--xla_force_host_platform_device_count=8"
MAGIC = "%jitcompare"


# ------------------------------------------------------------------------------------------------
# Choosing modes


def parse_modes(spec: str | tuple | list | None, *, device_count: int | None = None) -> tuple[str, ...]:
    """The modes asked for (``"eager,jit"``; ``"all"`` is every mode these devices can run).

    >>> parse_modes("jit, eager,jit")
    ('jit', 'eager')
    >>> parse_modes("all", device_count=1)
    ('eager', 'jit', 'op-by-op')
    """
    if spec is None:
        return DEFAULT_MODES
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [item.strip().lower() for item in items if item.strip()]
    if not names:
        raise UsageProblem(
            f"{MAGIC}: --modes needs at least one mode: {', '.join(MODES)}.",
            example=f"{MAGIC} --modes eager,jit f(x)",
        )
    count = jax.device_count() if device_count is None else device_count
    chosen: list[str] = []
    for name in names:
        if name == "all":
            chosen += [m for m in MODES if count > 1 or m not in MULTI_DEVICE_MODES]
            continue
        if name not in MODES:
            raise UsageProblem(
                f"{MAGIC}: unknown mode `{name}`; the modes are: {', '.join(MODES)} (or `all`).",
                example=f"{MAGIC} --modes eager,jit,sharded,pmap f(x)",
            )
        if name in MULTI_DEVICE_MODES and count < 2:
            raise UsageProblem(
                f"{MAGIC}: mode `{name}` spreads the work over several devices, and JAX sees only "
                f"{count} ({describe_devices()}). To simulate 8 devices on the CPU, set "
                f"{SIMULATE_DEVICES} before JAX starts: restart the kernel and run "
                f"`import os; os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'` "
                f"before `import jax`.",
                example=f"{MAGIC} --modes eager,jit f(x)",
            )
        chosen.append(name)
    return tuple(dict.fromkeys(chosen))


def describe_devices() -> str:
    """``8 × cpu``: how many devices of which kind JAX uses.

    >>> describe_devices().endswith("cpu") or "gpu" in describe_devices() or "tpu" in describe_devices()
    True
    """
    devices = jax.devices()
    kinds = dict.fromkeys(d.platform for d in devices)
    return f"{len(devices)} × {', '.join(kinds)}"


def simulated_devices() -> bool:
    """True when JAX's several devices are CPU devices (simulated with ``XLA_FLAGS``, sharing cores).

    >>> simulated_devices() == (jax.device_count() > 1 and jax.devices()[0].platform == "cpu")
    True
    """
    devices = jax.devices()
    return len(devices) > 1 and all(d.platform == "cpu" for d in devices)


# ------------------------------------------------------------------------------------------------
# A mode, ready to run


@dataclass(eq=False)
class Runner:
    """One mode of the call, ready to be timed: ``call()`` runs it once (without waiting).

    ``donated`` lists positions whose arrays the compiled program consumes; ``call()`` gives it
    fresh copies (see ``fresh_arguments``), never the caller's own arrays. ``jitted`` is the
    ``jax.jit`` / ``jax.pmap`` object of a compiled mode (``None`` for eager); ``to_reference``
    turns an output into one comparable with the eager output (``None``: not comparable).

    >>> import jax.numpy as jnp
    >>> from jaxmagic.tracing.call import Call
    >>> eager = build("eager", Call(jax.jit(jnp.cos), (jnp.zeros(2),), {}))
    >>> eager.compiles, eager.fn is jnp.cos, eager.call().tolist()
    (False, True, [1.0, 1.0])
    """

    mode: str
    fn: Callable
    args: tuple
    kwargs: dict
    compiles: bool
    setup: str = ""
    donated: tuple[int, ...] = ()
    donated_names: tuple[str, ...] = ()  # the donated parameters' names, for arguments given by keyword
    jitted: Any = None
    to_reference: Callable[[Any], Any] | None = None
    notes: list[Note] = field(default_factory=list)  # how this mode was set up, as facts

    def context(self) -> ContextManager:
        """What every call of this mode runs inside: nothing for eager (the session's own setting,
        as the user's call runs), ``jax.disable_jit()`` for op-by-op. A compiled mode runs compiled
        even where the session has switched jit off (``jax_disable_jit``)."""
        if self.mode == "op-by-op":
            return jax.disable_jit()
        if self.mode == "eager":
            return contextlib.nullcontext()
        if _jax_private.jit_disabled():
            return jax.disable_jit(False)
        return contextlib.nullcontext()

    @property
    def donates(self) -> bool:
        """Whether the compiled program consumes some of its arguments (by position or keyword)."""
        return bool(self.donated or self.donated_names)

    def fresh_arguments(self) -> tuple[tuple, dict]:
        """The arguments, with a new copy of each donated one, given by position or by keyword
        (the copies are ready when returned)."""
        if not self.donates:
            return self.args, self.kwargs
        args = list(self.args)
        for position in self.donated:
            if position < len(args):
                args[position] = jax.tree.map(_copy_leaf, args[position])
        kwargs = dict(self.kwargs)
        for name in self.donated_names:
            if name in kwargs:
                kwargs[name] = jax.tree.map(_copy_leaf, kwargs[name])
        jax.block_until_ready((args, kwargs))
        return tuple(args), kwargs

    def call(self):
        """Run the mode once and return its output (not waited for)."""
        args, kwargs = self.fresh_arguments()
        with self.context():
            return self.fn(*args, **kwargs)

    def lowered(self):
        """The ``jax.stages.Lowered`` of a compiled mode (JAX's caches make it cheap after a call)."""
        args, kwargs = self.fresh_arguments()
        trace = getattr(self.jitted, "trace", None)
        if trace is not None:
            return trace(*args, **kwargs).lower()
        return self.jitted.lower(*args, **kwargs)


def on_device(arguments) -> tuple:
    """``(args, kwargs)`` with every NumPy array put on the device, and how many there were.

    >>> import numpy as np
    >>> args, kwargs, count = on_device(((np.ones(2), 3), {"y": np.zeros(1)}))
    >>> type(args[0]).__name__ != "ndarray", args[1], count
    (True, 3, 2)
    """
    count = 0

    def put(leaf):
        nonlocal count
        if isinstance(leaf, np.ndarray):
            count += 1
            return jax.numpy.asarray(leaf)
        return leaf

    args, kwargs = jax.tree.map(put, arguments)
    return args, kwargs, count


def _copy_leaf(leaf):
    return leaf.copy() if isinstance(leaf, (jax.Array, np.ndarray)) else leaf


def build(mode: str, call: Call, *, split: str | None = None) -> Runner:
    """The ``Runner`` for ``mode``; ``split`` names the arguments whose leading axis is spread over
    the devices in ``sharded`` and ``pmap`` modes (default: every array argument)."""
    if mode in UNCOMPILED_MODES:
        # The Python function under the callee's own jit wrapper (jax.jit, nnx.jit, eqx.filter_jit),
        # called on the user's arguments: what they run when they leave that jit out.
        args, kwargs, converted = on_device((call.args, call.kwargs))
        runner = Runner(
            mode,
            call.function,
            args,
            kwargs,
            compiles=False,
            setup=_uncompiled_setup(mode, call),
            to_reference=lambda out: out,
        )
        if converted:
            runner.notes.append(Note("numpy_converted", mode=mode, facts={"count": converted}))
        return runner
    if mode == "jit":
        jitted = jitted_version(call)
        args, kwargs, _ = on_device((call.args, call.kwargs))
        how = call.library.decorator if call.library is not None else "jax.jit"
        if call.untraceable_leaves:
            how = (
                "eqx.filter_jit"
                if _equinox_jitted(call)
                else "jax.jit, the arguments' leaves that are not arrays static"
            )
        if call.expression is not None:
            how = _expression_setup(how, call)
        return Runner(
            "jit",
            jitted,
            args,
            kwargs,
            compiles=True,
            setup=how,
            jitted=jitted,
            to_reference=lambda out: out,
            **_donation(call),
        )
    if mode == "sharded":
        return _sharded(call, split)
    if mode == "pmap":
        return _pmap(call, split)
    raise UsageProblem(f"{MAGIC}: unknown mode `{mode}`; the modes are: {', '.join(MODES)}.")


def _uncompiled_setup(mode: str, call: Call) -> str:
    if call.expression is None:
        return EAGER_SETUP if mode == "eager" else OP_BY_OP_SETUP
    if mode == "eager":
        return f"{call.expression.text}, as written (jitted functions it calls stay jitted)"
    return f"{call.expression.text} under jax.disable_jit(): every operation on its own, inner jits included"


def _expression_setup(how: str, call: Call) -> str:
    """What was jitted for an expression: ``jax.jit(lambda x: f(x) + 1): x traced; f closed over``."""
    assert call.expression is not None
    expression = call.expression
    traced = ", ".join(expression.arguments) or "no argument"
    line = f"{how}({expression.function_text}): {traced} traced"
    if expression.closed_over:
        line += f"; {', '.join(expression.closed_over)} closed over (constants of the compiled program)"
    return line


def _donation(call: Call) -> dict:
    """What the compiled program consumes: the donated positions, and the names of those
    parameters (JAX donates an argument given by keyword too)."""
    names = positional_parameters(call.function)
    if call.library is not None and call.library.donates and not call.donate_argnums:
        # eqx.filter_jit(donate="all"): every array of every argument (copying one it keeps is harmless)
        return {"donated": tuple(range(len(call.args))), "donated_names": (*names, *call.kwargs)}
    return {
        "donated": call.donate_argnums,
        "donated_names": tuple(names[i] for i in call.donate_argnums if i < len(names)),
    }


def _equinox_jitted(call: Call) -> bool:
    """Whether the jit mode times ``eqx.filter_jit`` of the callee: arguments that hold an Equinox
    module with leaves ``jax.jit`` cannot trace, and no static or donated argument of the user's."""
    return (
        call.library is None
        and call.untraceable_leaves
        and not (call.static or call.donate_argnums)
        and libraries.holds_equinox_module(call.args, call.kwargs)
    )


def jitted_version(call: Call):
    """The jitted version of the callee that the jit and sharded modes time: the one place where
    it is built (a fresh wrapper, so its first call compiles from scratch). A callee jitted by a
    library keeps that library's jit; leaves JAX cannot trace stay static.

    >>> import jax.numpy as jnp
    >>> jitted_version(Call(jnp.sin, (jnp.zeros(1),), {}))(jnp.zeros(1)).tolist()
    [0.0]
    """
    if _equinox_jitted(call):  # a module holding functions: jitted as its users jit it, flattened on every call
        return libraries.filter_jit(fresh_function(call.function))
    if call.library is not None or call.untraceable_leaves:
        return call.jit()
    return jax.jit(
        fresh_function(call.function),
        static_argnums=call.static_argnums,
        static_argnames=call.static_argnames,
        donate_argnums=call.donate_argnums,
    )


# ------------------------------------------------------------------------------------------------
# Several devices


def _is_batch_leaf(leaf) -> bool:
    return isinstance(leaf, (jax.Array, np.ndarray)) and np.ndim(leaf) >= 1


def _is_array_leaf(leaf) -> bool:
    return isinstance(leaf, (jax.Array, np.ndarray))


@dataclass(frozen=True)
class _Argument:
    """One dynamic argument of the call: where it goes, its name, and whether it is split."""

    position: int | None  # None: a keyword argument
    keyword: str | None
    name: str
    value: Any
    split: bool


def _dynamic_arguments(call: Call, split: str | None) -> list[_Argument]:
    names = _parameter_names(call)
    chosen = _parse_split(split, call, names)
    found = []
    for position, value in enumerate(call.args):
        if call.is_static(position=position):
            continue
        name = names[position] if position < len(names) else f"argument {position}"
        wanted = chosen is None or position in chosen or name in chosen
        found.append(_Argument(position, None, name, value, wanted))
    for keyword, value in call.kwargs.items():
        if call.is_static(name=keyword):
            continue
        found.append(_Argument(None, keyword, keyword, value, chosen is None or keyword in chosen))
    return found


def _parameter_names(call: Call) -> list[str]:
    sig = call.signature
    if sig is None:
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def _parse_split(spec: str | None, call: Call, names: list[str]) -> set | None:
    """``--split batch,1`` as a set of parameter names and positions (``None``: split them all)."""
    if spec is None or not spec.strip():
        return None
    chosen: set = set()
    accepted = set(names) | set(call.kwargs)
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if item.isdigit():
            if int(item) >= len(call.args):
                raise UsageProblem(
                    f"{MAGIC}: --split {item}: the call has no positional argument {item} "
                    f"(positions start at 0; it has {len(call.args)}).",
                    example=f"{MAGIC} --modes jit,sharded --split batch step(params, batch)",
                )
            chosen.add(int(item))
        elif item.isidentifier():
            if item not in accepted:
                raise UsageProblem(
                    f"{MAGIC}: --split {item}: the call has no argument named `{item}`; "
                    f"its arguments are: {', '.join(names + [k for k in call.kwargs if k not in names]) or '(none)'}.",
                    example=f"{MAGIC} --modes jit,sharded --split batch step(params, batch)",
                )
            chosen.add(item)
        else:
            raise UsageProblem(
                f"{MAGIC}: --split takes argument names or positions separated by commas, not `{item}`.",
                example=f"{MAGIC} --modes jit,pmap --split batch step(params, batch)",
            )
    return chosen


def _check_splittable(mode: str, call: Call, arguments: list[_Argument], count: int) -> None:
    split_leaves = [
        (argument, path, leaf)
        for argument in arguments
        if argument.split
        for path, leaf in jax.tree_util.tree_flatten_with_path(argument.value)[0]
        if _is_batch_leaf(leaf)
    ]
    if not split_leaves:
        raise UsageProblem(
            f"{MAGIC}: mode `{mode}` splits the leading axis of the call's array arguments over the "
            f"{count} devices, and `{call.source or call.name}` has no "
            f"{'chosen ' if any(not a.split for a in arguments) else ''}array argument with a leading "
            f"axis (scalars and static arguments stay whole).",
            example=f"{MAGIC} --modes jit,{mode} f(jnp.ones(({count * 8}, 128)))",
        )
    for argument, path, leaf in split_leaves:
        size = np.shape(leaf)[0]
        if size % count:
            where = argument.name + jax.tree_util.keystr(path)
            fitting = max(count, size - size % count)
            raise UsageProblem(
                f"{MAGIC}: mode `{mode}` splits the leading axis of `{where}` (shape "
                f"{tuple(np.shape(leaf))}) over the {count} devices, and {size} is not divisible by "
                f"{count}. Use a leading size that is a multiple of {count} (e.g. {fitting}), or "
                f"--split to name only the arguments to split.",
                example=f"{MAGIC} --modes jit,{mode} --split batch step(params, batch)",
            )


def _mesh():
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()), (MESH_AXIS,))


def _split_summary(arguments: list[_Argument], count: int) -> str:
    parts = []
    for argument in arguments:
        leaves = [leaf for leaf in jax.tree.leaves(argument.value) if _is_batch_leaf(leaf)]
        if argument.split and leaves:
            size = np.shape(leaves[0])[0]
            parts.append(f"{argument.name}: {size // count} of {size} rows per device")
        elif leaves:
            parts.append(f"{argument.name}: a copy on every device")
    return "; ".join(parts)


def _sharded(call: Call, split: str | None) -> Runner:
    from jax.sharding import NamedSharding, PartitionSpec

    count = jax.device_count()
    arguments = _dynamic_arguments(call, split)
    _check_splittable("sharded", call, arguments, count)
    mesh = _mesh()
    split_sharding = NamedSharding(mesh, PartitionSpec(MESH_AXIS))
    replicated = NamedSharding(mesh, PartitionSpec())

    def place(value, wanted: bool):
        def leaf(x):
            if not _is_array_leaf(x):
                return x
            return jax.device_put(x, split_sharding if wanted and _is_batch_leaf(x) else replicated)

        return jax.tree.map(leaf, value)

    args = list(call.args)
    kwargs = dict(call.kwargs)
    for argument in arguments:
        placed = place(argument.value, argument.split)
        if argument.position is not None:
            args[argument.position] = placed
        else:
            kwargs[argument.keyword] = placed
    jax.block_until_ready((args, kwargs))
    jitted = jitted_version(call)
    setup = f"jax.jit over a mesh of {count} devices ('{MESH_AXIS}' axis); {_split_summary(arguments, count)}"
    return Runner(
        "sharded",
        jitted,
        tuple(args),
        kwargs,
        compiles=True,
        setup=setup,
        jitted=jitted,
        to_reference=lambda out: out,
        **_donation(call),
    )


def _pmap(call: Call, split: str | None) -> Runner:
    from jax.sharding import NamedSharding, PartitionSpec

    count = jax.device_count()
    arguments = _dynamic_arguments(call, split)
    _check_splittable("pmap", call, arguments, count)
    per_device = NamedSharding(_mesh(), PartitionSpec(MESH_AXIS))
    function, _, _ = call.dynamic()
    positional = [a for a in arguments if a.position is not None]
    keywords = [a for a in arguments if a.position is None]
    leaves, treedef = jax.tree.flatten(([a.value for a in positional], {a.keyword: a.value for a in keywords}))
    flags = [a.split for a in positional] + [a.split for a in keywords]
    leaf_flags = []
    for argument, flag in zip(positional + keywords, flags, strict=True):
        leaf_flags += [flag] * len(jax.tree.leaves(argument.value))

    # Each split array becomes (devices, rows per device, ...); every other array is copied onto
    # each device once (as a replicated training state is), so no call pays for moving it again.
    placed, in_axes = [], []
    for leaf, flag in zip(leaves, leaf_flags, strict=False):
        if flag and _is_batch_leaf(leaf):
            shape = np.shape(leaf)
            stacked = jax.numpy.reshape(leaf, (count, shape[0] // count) + tuple(shape[1:]))
        elif _is_array_leaf(leaf):
            stacked = jax.numpy.broadcast_to(leaf, (count,) + tuple(np.shape(leaf)))
        else:
            placed.append(leaf)
            in_axes.append(None)
            continue
        placed.append(jax.device_put(stacked, per_device))
        in_axes.append(0)
    jax.block_until_ready(placed)

    def per_device_call(*flat):
        dyn_args, dyn_kwargs = jax.tree.unflatten(treedef, list(flat))
        return function(*dyn_args, **dyn_kwargs)

    per_device_call.__name__ = per_device_call.__qualname__ = f"pmap({call.name})"
    mapped = jax.pmap(per_device_call, in_axes=tuple(in_axes))

    def merged(out):
        # (devices, rows per device, ...) -> (rows, ...): eager's shape when f works row by row.
        return jax.tree.map(
            lambda y: np.reshape(np.asarray(y), (-1,) + np.shape(y)[2:]) if np.ndim(y) >= 2 else None, out
        )

    runner = Runner(
        "pmap",
        mapped,
        tuple(placed),
        {},
        compiles=True,
        setup=f"jax.pmap over {count} devices; {_split_summary(arguments, count)}",
        jitted=mapped,
        to_reference=merged,
    )
    if call.donate_argnums:
        runner.notes.append(Note("pmap_no_donation", mode="pmap"))
    return runner
