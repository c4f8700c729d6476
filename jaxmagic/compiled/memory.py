"""What XLA says a compiled program needs in memory, read in one place with one set of names.

``jax.stages.Compiled.memory_analysis()`` answers with an object whose fields end in
``_in_bytes`` (one object per device on older JAX, ``None`` or an error on backends that do not
implement it). Every report that shows memory (``%jaxpr``'s ``memory``, ``%jitcompare``'s
``memory``) reads it here and uses the same keys: ``arguments``, ``outputs``, ``aliased``,
``temporaries``, ``code``.

>>> import jax, jax.numpy as jnp
>>> compiled = jax.jit(lambda v: v * 2).trace(jnp.ones(8)).lower().compile()
>>> sorted(compiled_memory(compiled))
['aliased', 'arguments', 'code', 'outputs', 'temporaries']
"""

from __future__ import annotations

# memory_analysis() field -> the key every report uses, in the order a reader wants them.
MEMORY_FIELDS = {
    "argument_size_in_bytes": "arguments",
    "output_size_in_bytes": "outputs",
    "alias_size_in_bytes": "aliased",
    "temp_size_in_bytes": "temporaries",
    "generated_code_size_in_bytes": "code",
}


def compiled_memory(compiled) -> dict[str, int]:
    """``{"arguments", "outputs", "aliased", "temporaries", "code"}`` bytes of a compiled program
    (per device), from ``jax.stages.Compiled.memory_analysis()``; ``{}`` where XLA gives none.

    >>> import jax, jax.numpy as jnp
    >>> compiled = jax.jit(lambda v: v * 2).trace(jnp.ones(8)).lower().compile()
    >>> compiled_memory(compiled)["arguments"]
    32
    """
    try:
        stats = compiled.memory_analysis()
    except Exception:  # some backends do not implement it
        return {}
    return memory_from_stats(stats)


def memory_from_stats(stats) -> dict[str, int]:
    """The same keys read from XLA's memory statistics object itself (``memory_analysis()``'s
    answer, or an executable's ``get_compiled_memory_stats()``); ``{}`` for ``None``."""
    if isinstance(stats, (list, tuple)):  # older JAX: one entry per device
        stats = stats[0] if stats else None
    if stats is None:
        return {}
    return {key: int(getattr(stats, field)) for field, key in MEMORY_FIELDS.items() if hasattr(stats, field)}


# Backends whose ``peak_memory_in_bytes`` leaves the program's temporaries out: XLA's CPU client
# computes it from a buffer-assignment record that holds no heap simulation of the temporaries, so
# it equals the arguments, outputs and constants alone (JAX 0.8.1 to 0.10.2: ``sin(x) @ x`` on
# 512x512 floats reports 2 MiB, while x, sin(x) and the product, 1 MiB each, are live at once).
PEAK_WITHOUT_TEMPORARIES = frozenset({"cpu"})


def xla_peak(compiled) -> int | None:
    """XLA's own peak for a compiled program (``memory_analysis().peak_memory_in_bytes``), where the
    backend counts the program's temporaries in it (TPU, GPU); ``None`` elsewhere.

    >>> import jax, jax.numpy as jnp
    >>> compiled = jax.jit(lambda v: v * 2).trace(jnp.ones(8)).lower().compile()
    >>> xla_peak(compiled) is None if jax.default_backend() == "cpu" else xla_peak(compiled) > 0
    True
    """
    if platform(compiled) in PEAK_WITHOUT_TEMPORARIES:
        return None
    try:
        stats = compiled.memory_analysis()
    except Exception:  # some backends do not implement it
        return None
    if isinstance(stats, (list, tuple)):
        stats = stats[0] if stats else None
    peak = getattr(stats, "peak_memory_in_bytes", None)
    return int(peak) if peak else None


def platform(compiled) -> str:
    """The platform (``cpu``, ``tpu``, ``gpu``, ``cuda``, ...) a compiled program runs on."""
    import jax

    for sharding in jax.tree_util.tree_leaves((compiled.input_shardings, compiled.output_shardings)):
        devices = getattr(sharding, "device_set", None)
        if devices:
            return next(iter(devices)).platform
    return jax.default_backend()
