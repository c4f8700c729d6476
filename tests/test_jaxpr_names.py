"""``JaxprReport.input_names`` / ``output_names``: each input and output of the traced jaxpr named
as the user writes it, one per variable (the count is JAX's), in the order of its invars/outvars;
shown in a legend beside the listing."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

from jaxmagic import resolve_call, trace


class Pair(NamedTuple):
    w: jax.Array
    b: jax.Array


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class State:
    params: dict
    step: jax.Array


def mlp(params, x):
    return jnp.tanh(x @ params["w1"]) @ params["w2"]


def affine(p, xs):
    return xs @ p.w + p.b


def scaled(state, x):
    return state.params["a"] * x + state.step


def mix(ws, x, n):
    return ws[0] * x + ws[1] * n


def loss(w, x):
    return jnp.sum((x @ w) ** 2)


NAMESPACE = dict(
    mlp=mlp,
    affine=affine,
    scaled=scaled,
    mix=mix,
    loss=loss,
    params={"w1": jnp.ones((4, 8)), "w2": jnp.ones((8, 2))},
    x=jnp.ones((5, 4)),
    pair=Pair(jnp.ones((4, 2)), jnp.ones(2)),
    state=State({"a": jnp.ones(3)}, jnp.array(1.0)),
    v=jnp.ones(3),
    ws=(jnp.ones(3), jnp.ones(3)),
    wl=[jnp.ones(3), jnp.ones(3)],
    w=jnp.ones((4, 2)),
    batch_w=jnp.ones((5, 4, 2)),
)

CASES = [
    ("mlp(params, x)", [], None, ["params['w1']", "params['w2']", "x"], ["result"]),
    ("affine(pair, x)", [], None, ["p.w", "p.b", "xs"], ["result"]),  # the parameters' names
    ("scaled(state, v)", [], None, ["state.params['a']", "state.step", "x"], ["result"]),
    ("mix(ws, v, 3)", [], "n", ["ws[0]", "ws[1]", "x"], ["result"]),
    ("mix(wl, v, 3)", [], "n", ["ws[0]", "ws[1]", "x"], ["result"]),  # a list, by the parameter's name
    ("loss(w, x)", ["grad"], None, ["w", "x"], ["grad of w"]),
    ("loss(w, x)", ["value_and_grad"], None, ["w", "x"], ["value", "grad of w"]),
    ("loss(batch_w, x)", ["vmap"], None, ["w", "x"], ["result"]),
]


@pytest.mark.parametrize(
    "text, transforms, static, inputs, outputs", CASES, ids=[c[0] + " " + " ".join(c[1]) for c in CASES]
)
def test_names_follow_the_arguments_as_written(text, transforms, static, inputs, outputs):
    report = trace(resolve_call(text, NAMESPACE, static=static), transforms=transforms)
    assert len(report.input_names) == len(report.jaxpr.jaxpr.invars)
    assert len(report.output_names) == len(report.jaxpr.jaxpr.outvars)
    assert report.input_names == inputs and report.output_names == outputs


def test_a_model_s_arrays_are_named_by_the_model_s_own_name():
    import equinox as eqx
    from flax import nnx

    namespace = {
        "lin": nnx.Linear(3, 2, rngs=nnx.Rngs(0)),
        "mlpx": eqx.nn.MLP(3, 2, 4, 1, key=jax.random.PRNGKey(0)),
        "x3": jnp.ones((2, 3)),
        "v": jnp.ones(3),
    }
    flax_report = trace(resolve_call("lin(x3)", namespace))
    assert flax_report.input_names == ["lin.bias", "lin.kernel", "inputs"]
    assert flax_report.output_names[-1] == "result" and flax_report.output_names[0] == "lin.bias (after the call)"
    eqx_report = trace(resolve_call("mlpx(v)", namespace))
    assert eqx_report.input_names[0] == "mlpx.layers[0].weight" and eqx_report.input_names[-1] == "x"


def test_the_legend_shows_each_name_beside_its_variable(run):
    run(
        "def net(params, x):\n    return jnp.sum(x @ params['w'])\n"
        "params = {'w': jnp.ones((3, 2))}\nxs = jnp.ones((4, 3))"
    ).assert_ok()
    shown = run("%jaxpr -t grad net(params, xs)").assert_ok()
    assert "in:   a  params['w']" in shown.text and "grad of params['w']" in shown.text
    assert 'class="jm-table jm-legend"' in shown.html and "grad of params[&#x27;w&#x27;]" in shown.html
