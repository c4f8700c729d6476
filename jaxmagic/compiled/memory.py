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
