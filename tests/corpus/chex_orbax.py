"""chex, jaxtyping and Orbax in the shapes their documentation teaches (chex's README: assertions,
``assert_max_traces``, dataclasses; jaxtyping: "Array annotations", runtime checks with
``isinstance``; Orbax: "Checkpointing PyTrees"), in our own words."""

from tests.corpus import Cell

CHEX = Cell(
    "chex",
    "chex docs: README.md (assertions, dataclasses)",
    "chex/assertions",
    """
import jax
import jax.numpy as jnp
import chex

@jax.jit
def normalise_rows(x):
    chex.assert_rank(x, 2)
    chex.assert_type(x, float)
    return x / jnp.linalg.norm(x, axis=1, keepdims=True)

@chex.dataclass
class Batch:
    inputs: chex.Array
    targets: chex.Array

@jax.jit
def batch_error(batch):
    chex.assert_equal_shape([batch.inputs, batch.targets])
    return jnp.mean((batch.inputs - batch.targets) ** 2)

batch = Batch(inputs=jnp.ones((4, 3)), targets=jnp.zeros((4, 3)))
matrix = jnp.arange(1.0, 7.0).reshape(2, 3)
vector = jnp.arange(3.0)

def trees_close(a, b):
    chex.assert_trees_all_close(a, b, rtol=1e-5)
    return True
""",
    needs=("chex",),
)

TRACES = Cell(
    "chex",
    "chex docs: README.md (assert_max_traces)",
    "chex/max-traces",
    """
import jax
import jax.numpy as jnp
import chex
import equinox as eqx

@jax.jit
@chex.assert_max_traces(n=1)
def traced_once(x):
    return x * 2

def two_shapes():
    return traced_once(jnp.ones(2)), traced_once(jnp.ones(3))

@chex.assert_max_traces(n=1)
@eqx.filter_jit
def counted_outside(x):
    return x + 1

def two_shapes_outside():
    return counted_outside(jnp.ones(2)), counted_outside(jnp.ones(3))
""",
    needs=("chex", "equinox"),
    tags={"recompile"},
)

JAXTYPING = Cell(
    "jaxtyping",
    "jaxtyping docs: api/array.md, api/runtime-type-checking.md",
    "jaxtyping/annotations",
    """
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, jaxtyped

@jaxtyped(typechecker=None)
def batched_outer(x: Float[Array, "batch dim"], y: Float[Array, "batch dim"]) -> Float[Array, "batch dim dim"]:
    assert isinstance(x, Float[Array, "batch dim"])
    assert isinstance(y, Float[Array, "batch dim"])
    return jnp.einsum("bi,bj->bij", x, y)

xs = jnp.ones((4, 3))
ys = jnp.ones((4, 3))
ys_wrong = jnp.ones((5, 3))
""",
    needs=("jaxtyping",),
)

ORBAX = Cell(
    "orbax",
    "orbax docs: guides/checkpoint/checkpointing_pytrees.ipynb",
    "orbax/checkpoint",
    """
import os
import tempfile
import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

state = {"params": {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.zeros(3)}, "step": jnp.int32(7)}

def save_and_restore(tree):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint")
        with ocp.StandardCheckpointer() as checkpointer:
            checkpointer.save(path, tree)
            checkpointer.wait_until_finished()
            return checkpointer.restore(path, jax.tree.map(ocp.utils.to_shape_dtype_struct, tree))
""",
    needs=("orbax",),
    tags={"no-jit", "pytree"},
)


CASES = [
    CHEX.case("assert-rank-in-jit", "normalise_rows(matrix)", tags={"jitted"}),
    CHEX.case("assert-rank-fails", "normalise_rows(vector)", "AssertionError", tags={"jitted"}),
    CHEX.case("dataclass-batch", "batch_error(batch)", tags={"jitted", "pytree"}),
    CHEX.case("trees-close", "trees_close(batch, batch)", tags={"no-jit", "pytree"}),
    TRACES.case("max-traces-fires", "two_shapes()", "AssertionError", tags={"no-jit"}),
    TRACES.case("max-traces-above-filter-jit", "two_shapes_outside()", tags={"no-jit"}),
    JAXTYPING.case("matching-dims", "batched_outer(xs, ys)"),
    JAXTYPING.case("mismatched-dims", "batched_outer(xs, ys_wrong)", "AssertionError"),
    ORBAX.case("save-restore", "save_and_restore(state)"),
]
