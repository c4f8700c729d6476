"""Listings as users write them, as data: the shapes JAX's documentation teaches (the jaxpr page,
the autodiff cookbook, control flow, pytrees, checkify, debugging, vmap and hessian, checkpointing)
and those of Flax NNX, Equinox and Optax, in our own words. Each case is a cell that defines what
the call needs, and the ``%jaxpr`` line that traces it; ``title`` names the transforms the user
wrote, which the listing's title must show.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    setup: str
    line: str  # what follows ``%jaxpr -o``: options and the call; for a cell case, the options only
    title: tuple[str, ...] = ()
    cell: str = ""  # a ``%%jaxpr`` cell: its body, whose last statement is the call

    @property
    def source(self) -> str:
        return textwrap.dedent(self.setup)


JAX_DOCS = [
    Case(
        "jaxpr-func1",
        """
        def func1(first, second):
            temp = first + jnp.sin(second) * 3.0
            return jnp.sum(temp)
        a5, b5 = jnp.zeros(8), jnp.ones(8)
        """,
        "func1(a5, b5)",
    ),
    Case(
        "jaxpr-func4-python-control-flow",
        """
        def func4(arg):
            for i in range(3):
                arg = arg + jnp.sin(arg) * i
            return arg
        """,
        "func4(jnp.ones(5))",
    ),
    Case(
        "jaxpr-cond",
        """
        from jax import lax
        def one_of_three(index, arg):
            return lax.switch(index, [lambda x: x + 1.0, lambda x: x - 2.0, lambda x: x + 3.0], arg)
        def cond_branches(arg):
            return lax.cond(arg > 0, lambda x: x * 2.0, lambda x: x - 1.0, arg)
        """,
        "cond_branches(1.5)",
    ),
    Case("jaxpr-switch", "", "one_of_three(1, 5.0)"),
    Case(
        "jaxpr-while",
        """
        def func10(arg, n):
            ones = jnp.ones(arg.shape)
            return lax.fori_loop(0, n, lambda i, carry: carry + ones * 3.0 + arg, arg + ones)
        def until_big(x):
            return lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x)
        """,
        "func10(jnp.ones(4), 5)",
    ),
    Case("jaxpr-while-loop", "", "until_big(1.0)"),
    Case(
        "jaxpr-scan",
        """
        def cumsum(xs):
            def step(carry, x):
                carry = carry + x
                return carry, carry
            return lax.scan(step, 0.0, xs)
        """,
        "cumsum(jnp.arange(5.0))",
    ),
    Case(
        "jaxpr-inner-jit",
        """
        @jax.jit
        def inner(x):
            return x + 1.0
        def outer(x):
            return inner(x) * 2.0
        """,
        "outer(jnp.ones(3))",
    ),
    Case(
        "cookbook-grad-tanh",
        """
        def tanh(x):
            y = jnp.exp(-2.0 * x)
            return (1.0 - y) / (1.0 + y)
        """,
        "jax.grad(tanh)(1.0)",
        ("grad",),
    ),
    Case("cookbook-grad-grad", "", "jax.grad(jax.grad(tanh))(1.0)", ("grad",)),
    Case(
        "cookbook-named-transforms",
        """
        grad_tanh = jax.grad(tanh)
        @jax.vmap
        def row_norms(v):
            return jnp.sqrt(jnp.sum(v ** 2))
        """,
        "grad_tanh(2.0)",
        ("grad",),
    ),
    Case("decorated-vmap", "", "row_norms(jnp.ones((3, 4)))", ("vmap",)),
    Case(
        "cookbook-logistic",
        """
        def sigmoid(x):
            return 0.5 * (jnp.tanh(x / 2) + 1)
        def predict(W, b, inputs):
            return sigmoid(jnp.dot(inputs, W) + b)
        def loss(W, b, inputs, targets):
            preds = predict(W, b, inputs)
            label_probs = preds * targets + (1 - preds) * (1 - targets)
            return -jnp.sum(jnp.log(label_probs))
        inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
        targets = jnp.array([True, True, False, True])
        W, b = jnp.array([0.1, -0.2, 0.3]), 0.1
        """,
        "-t grad loss(W, b, inputs, targets)",
        ("grad",),
    ),
    Case("cookbook-grad-argnums", "", "jax.grad(loss, argnums=(0, 1))(W, b, inputs, targets)", ("grad",)),
    Case("cookbook-value-and-grad", "", "jax.value_and_grad(loss)(W, b, inputs, targets)", ("value_and_grad",)),
    Case(
        "cookbook-hessian",
        """
        def f3(x):
            return jnp.sum(jnp.sin(x) * x ** 2)
        x3 = jnp.array([1.0, 2.0, 3.0])
        """,
        "jax.hessian(f3)(x3)",
        ("hessian",),
    ),
    Case("cookbook-jacfwd-jacrev", "", "jax.jacfwd(jax.jacrev(f3))(x3)", ("jacfwd", "jacrev")),
    Case("cookbook-jacrev", "", "jax.jacrev(predict)(W, b, inputs)", ("jacrev",)),
    Case("cookbook-hessian-option", "", "-t jacfwd -t jacrev f3(x3)", ("jacfwd", "jacrev")),
    Case(
        "cookbook-per-example-grads",
        """
        def example_loss(w, x):
            return jnp.sum(jnp.tanh(x @ w) ** 2)
        w2 = jnp.ones((3, 2))
        """,
        "jax.vmap(jax.grad(example_loss), in_axes=(None, 0))(w2, inputs)",
        ("vmap", "grad"),
    ),
    Case(
        "vmap-convolve",
        """
        def convolve(x, w):
            output = []
            for i in range(1, len(x) - 1):
                output.append(jnp.dot(x[i - 1 : i + 2], w))
            return jnp.array(output)
        xs8 = jnp.stack([jnp.arange(5.0), jnp.arange(5.0) * 2])
        ws8 = jnp.stack([jnp.array([2.0, 3.0, 4.0])] * 2)
        """,
        "jax.vmap(convolve)(xs8, ws8)",
        ("vmap",),
    ),
    Case("vmap-in-axes", "", "jax.vmap(convolve, in_axes=[0, None])(xs8, ws8[0])", ("vmap",)),
    Case(
        "cookbook-per-example-named",
        """
        per_example_grads = jax.jit(jax.vmap(jax.grad(example_loss), in_axes=(None, 0)))
        """,
        "per_example_grads(w2, inputs)",
        ("vmap", "grad"),
    ),
    Case("vmap-option", "", "-t vmap convolve(xs8, ws8)", ("vmap",)),
    Case(
        "vmap-of-f",
        """
        def f(x):
            return jnp.sum(jnp.sin(x) ** 2)
        xs = jnp.ones((3, 4))
        x4 = jnp.ones(4)
        """,
        "jax.vmap(f)(xs)",
        ("vmap",),
    ),
    Case("hessian-of-f", "", "jax.hessian(f)(x4)", ("hessian",)),
    Case("lambda-in-the-call", "", "jax.vmap(lambda v: jnp.sin(v) * 2.0)(xs)", ("vmap",)),
    Case(
        "checkpoint",
        """
        def g_layer(W, x):
            y = jnp.dot(W, x)
            return jnp.sin(y)
        def f_net(W1, W2, W3, x):
            x = g_layer(W1, x)
            x = g_layer(W2, x)
            return g_layer(W3, x)
        W1 = W2 = W3 = jnp.ones((5, 5)) * 0.1
        x5 = jnp.ones(5)
        """,
        "jax.checkpoint(f_net)(W1, W2, W3, x5)",
        ("checkpoint",),
    ),
    Case("checkpoint-grad", "", "jax.grad(jax.checkpoint(f))(x4)", ("grad", "checkpoint")),
    Case("remat-alias", "", "jax.remat(f)(x4)", ("remat",)),
    Case(
        "pytree-node-class",
        """
        @jax.tree_util.register_pytree_node_class
        class Special:
            def __init__(self, x, y):
                self.x = x
                self.y = y
            def tree_flatten(self):
                return ((self.x, self.y), None)
            @classmethod
            def tree_unflatten(cls, aux_data, children):
                return cls(*children)
        def use_special(s):
            return jnp.sum(s.x * 2.0 + s.y)
        special = Special(jnp.ones(3), jnp.zeros(3))
        """,
        "use_special(special)",
    ),
    Case(
        "pytree-register-node",
        """
        class MyContainer:
            def __init__(self, name, a, b, c):
                self.name, self.a, self.b, self.c = name, a, b, c
        jax.tree_util.register_pytree_node(
            MyContainer,
            lambda xs: ((xs.a, xs.b, xs.c), xs.name),
            lambda name, children: MyContainer(name, *children),
        )
        def total(container):
            return container.a + container.b * container.c
        box = MyContainer("box", jnp.ones(2), jnp.ones(2), jnp.ones(2))
        """,
        "total(box)",
    ),
    Case(
        "pytree-namedtuple-dataclass",
        """
        from typing import NamedTuple
        import dataclasses
        class Params(NamedTuple):
            weight: jax.Array
            bias: jax.Array
        @jax.tree_util.register_dataclass
        @dataclasses.dataclass
        class Batch:
            x: jax.Array
            y: jax.Array
        def lin_loss(params, batch):
            return jnp.mean((batch.x @ params.weight + params.bias - batch.y) ** 2)
        lp = Params(jnp.ones((3, 1)), jnp.zeros(1))
        lb = Batch(jnp.ones((4, 3)), jnp.zeros((4, 1)))
        """,
        "lin_loss(lp, lb)",
    ),
    Case("pytree-grad", "", "jax.grad(lin_loss)(lp, lb)", ("grad",)),
    Case("pytree-class-grad", "", "-t grad use_special(special)", ("grad",)),
    Case(
        "checkify",
        """
        from jax.experimental import checkify
        def checked_log(x):
            checkify.check(x > 0, "x must be positive, got {}", x)
            return jnp.log(x)
        def index_and_divide(x, i):
            return x[i] / (i + 1)
        """,
        "checkify.checkify(checked_log)(jnp.array(2.0))",
        ("checkify",),
    ),
    Case(
        "checkify-errors",
        "",
        "checkify.checkify(index_and_divide, errors=checkify.index_checks)(jnp.ones(3), 1)",
        ("checkify",),
    ),
    Case(
        "debug-print",
        """
        def noisy(x):
            jax.debug.print("x is {x}", x=x)
            y = jnp.sin(x)
            jax.debug.print("y is {}", y)
            return y * 2.0
        """,
        "noisy(jnp.ones(2))",
    ),
    Case(
        "debug-callback",
        """
        seen = []
        def log_value(x):
            jax.debug.callback(lambda v: seen.append(v), x)
            return x + 1.0
        """,
        "log_value(jnp.ones(2))",
    ),
    Case("debug-print-grad", "", "-t grad noisy(1.0)", ("grad",)),
    Case(
        "grad-while-loop",
        """
        def loop_sum(x):
            return lax.fori_loop(0, 3, lambda i, v: v * x + 1.0, x)
        """,
        "-t grad loop_sum(1.5)",
        ("grad",),
    ),
    Case(
        "named-scope",
        """
        def scoped(x):
            with jax.named_scope("encoder"):
                h = jnp.tanh(x * 3.0)
            return jnp.sum(h ** 2)
        """,
        "-t vmap scoped(xs)",
        ("vmap",),
    ),
    Case(
        "partial-static",
        """
        from functools import partial
        @partial(jax.jit, static_argnames=["n"])
        def power(x, n):
            for _ in range(n):
                x = x * x
            return x
        """,
        "power(x4, n=2)",
    ),
    Case(
        "custom-jvp",
        """
        @jax.custom_jvp
        def log1pexp(x):
            return jnp.log(1.0 + jnp.exp(x))
        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            (x,), (x_dot,) = primals, tangents
            ans = log1pexp(x)
            return ans, x_dot * (1.0 - 1.0 / (1.0 + jnp.exp(x)))
        """,
        "jax.grad(log1pexp)(3.0)",
        ("grad",),
    ),
    Case("custom-jvp-vmap", "", "jax.vmap(jax.grad(log1pexp))(jnp.arange(3.0))", ("vmap", "grad")),
    Case(
        "value-and-grad-aux",
        """
        def loss_with_aux(w, x):
            pred = jnp.tanh(x @ w)
            return jnp.mean(pred ** 2), {"pred": pred}
        """,
        "jax.value_and_grad(loss_with_aux, has_aux=True)(w2[:, 0], inputs)",
        ("value_and_grad",),
    ),
    Case("jacobian-alias", "", "jax.jacobian(f3)(x3)", ("jacobian",)),
    Case(
        "debug-print-in-scan",
        """
        def scan_and_print(xs):
            def body(c, x):
                jax.debug.print("carry {}", c)
                return c + x, c
            return lax.scan(body, 0.0, xs)
        """,
        "scan_and_print(jnp.arange(3.0))",
    ),
    Case(
        "lax-map-and-cond",
        """
        def per_row(rows):
            return lax.map(lambda r: lax.cond(r.sum() > 0, jnp.sin, jnp.cos, r), rows)
        """,
        "per_row(xs)",
    ),
    Case(
        "donate",
        """
        @partial(jax.jit, donate_argnums=0)
        def update_in_place(buffer, delta):
            return buffer + delta
        """,
        "update_in_place(jnp.zeros(4), x4)",
    ),
    Case(
        "cell-form",
        "",
        "",
        cell="""
        def cell_model(w, x):
            h = jnp.tanh(x @ w)
            return jnp.sum(h)
        cell_w = jnp.ones((3, 2))
        jax.grad(cell_model)(cell_w, inputs)
        """,
        title=("grad",),
    ),
    Case(
        "cell-form-vmap-option",
        "",
        "-t vmap",
        cell="""
        def cell_rows(x):
            return jnp.dot(x, x)
        cell_rows(xs)
        """,
        title=("vmap",),
    ),
]

LIBRARIES = [
    Case(
        "nnx-scan",
        """
        from flax import nnx
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
        def running(carry, x):
            carry = carry + x
            return carry, carry * 2.0
        rows = jnp.ones((4, 3))
        """,
        "running(jnp.zeros(3), rows)",
    ),
    Case(
        "nnx-vmap",
        """
        class Block(nnx.Module):
            def __init__(self, rngs):
                self.linear = nnx.Linear(3, 3, rngs=rngs)
            def __call__(self, x):
                return jax.nn.relu(self.linear(x))
        block = Block(nnx.Rngs(0))
        @nnx.vmap(in_axes=(None, 0))
        def batched(model, x):
            return model(x)
        """,
        "batched(block, rows)",
    ),
    Case(
        "nnx-scan-layers",
        """
        @nnx.vmap(in_axes=0, out_axes=0)
        def make_stack(key):
            return Block(nnx.Rngs(key))
        stack = make_stack(jax.random.split(jax.random.key(0), 3))
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def through(layer, x):
            return layer(x)
        """,
        "through(stack, jnp.ones(3))",
    ),
    Case(
        "nnx-train-step",
        """
        import optax
        class MLP(nnx.Module):
            def __init__(self, rngs):
                self.l1 = nnx.Linear(3, 8, rngs=rngs)
                self.l2 = nnx.Linear(8, 1, rngs=rngs)
            def __call__(self, x):
                return self.l2(nnx.relu(self.l1(x)))
        mlp = MLP(nnx.Rngs(0))
        optimizer = nnx.Optimizer(mlp, optax.adam(1e-3), wrt=nnx.Param)
        @nnx.jit
        def train_step(model, optimizer, x, y):
            def loss_fn(model):
                return jnp.mean((model(x) - y) ** 2)
            loss, grads = nnx.value_and_grad(loss_fn)(model)
            optimizer.update(model, grads)
            return loss
        bx, by = jnp.ones((4, 3)), jnp.zeros((4, 1))
        """,
        "train_step(mlp, optimizer, bx, by)",
    ),
    Case(
        "nnx-split-merge-jit",
        """
        graphdef, params = nnx.split(mlp)
        @jax.jit
        def pure_forward(graphdef, params, x):
            model = nnx.merge(graphdef, params)
            return model(x)
        """,
        "pure_forward(graphdef, params, bx)",
    ),
    Case(
        "nnx-returns-its-split",
        """
        class Normed(nnx.Module):
            def __init__(self, rngs):
                self.linear = nnx.Linear(3, 3, rngs=rngs)
                self.norm = nnx.BatchNorm(3, rngs=rngs)
            def __call__(self, x):
                return self.norm(self.linear(x))
        normed = Normed(nnx.Rngs(0))
        def forward_and_split(model, x):
            model(x)
            return nnx.split(model)
        normed_graphdef, normed_state = nnx.split(normed)
        def apply_state(graphdef, state, x):
            y, _ = graphdef.apply(state)(x)
            return y
        """,
        "forward_and_split(normed, bx)",
    ),
    Case("nnx-graphdef-apply", "", "apply_state(normed_graphdef, normed_state, bx)"),
    Case(
        "nnx-dropout-rngs",
        """
        class Dropper(nnx.Module):
            def __init__(self, rngs):
                self.linear = nnx.Linear(3, 3, rngs=rngs)
                self.dropout = nnx.Dropout(0.5, rngs=rngs)
            def __call__(self, x):
                return self.dropout(self.linear(x))
        dropper = Dropper(nnx.Rngs(0))
        @nnx.jit
        def drop_forward(model, x):
            return model(x)
        """,
        "drop_forward(dropper, bx)",
    ),
    Case(
        "eqx-state-batchnorm",
        """
        import equinox as eqx
        class WithNorm(eqx.Module):
            linear: eqx.nn.Linear
            norm: eqx.nn.BatchNorm
            def __init__(self, key):
                self.linear = eqx.nn.Linear(3, 3, key=key)
                self.norm = eqx.nn.BatchNorm(3, axis_name="batch")
            def __call__(self, x, state):
                x = self.linear(x)
                x, state = self.norm(x, state)
                return x, state
        norm_model, norm_state = eqx.nn.make_with_state(WithNorm)(jax.random.PRNGKey(0))
        @eqx.filter_jit
        def norm_forward(model, state, xs):
            return jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(xs, state)
        """,
        "norm_forward(norm_model, norm_state, bx)",
    ),
    Case(
        "eqx-filter-jit-mlp",
        """
        eqx_mlp = eqx.nn.MLP(3, 1, 8, 2, key=jax.random.PRNGKey(1))
        @eqx.filter_jit
        def eqx_loss(model, x, y):
            pred = jax.vmap(model)(x)
            return jnp.mean((pred - y) ** 2)
        """,
        "eqx_loss(eqx_mlp, bx, by)",
    ),
    Case("eqx-filter-grad", "", "eqx.filter_grad(eqx_loss)(eqx_mlp, bx, by)", ("filter_grad",)),
    Case(
        "optax-step",
        """
        opt = optax.adam(1e-2)
        opt_params = {"w": jnp.ones((3, 1)), "b": jnp.zeros(1)}
        opt_state = opt.init(opt_params)
        def opt_loss(p, x, y):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
        @jax.jit
        def opt_step(p, state, x, y):
            grads = jax.grad(opt_loss)(p, x, y)
            updates, state = opt.update(grads, state, p)
            return optax.apply_updates(p, updates), state
        """,
        "opt_step(opt_params, opt_state, bx, by)",
    ),
    Case(
        "linen-apply",
        """
        import flax.linen as fnn
        class LinenMLP(fnn.Module):
            @fnn.compact
            def __call__(self, x):
                x = fnn.Dense(8)(x)
                return fnn.Dense(1)(fnn.relu(x))
        linen_model = LinenMLP()
        linen_vars = linen_model.init(jax.random.PRNGKey(0), bx)
        def linen_loss(variables, x, y):
            return jnp.mean((linen_model.apply(variables, x) - y) ** 2)
        """,
        "jax.grad(linen_loss)(linen_vars, bx, by)",
        ("grad",),
    ),
    Case("linen-bound-apply", "", "jax.jit(linen_model.apply)(linen_vars, bx)"),
    Case(
        "optax-chain",
        """
        chained = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3))
        chained_state = chained.init(opt_params)
        @jax.jit
        def chained_step(p, state, x, y):
            loss_value, grads = jax.value_and_grad(opt_loss)(p, x, y)
            updates, state = chained.update(grads, state, p)
            return optax.apply_updates(p, updates), state, loss_value
        """,
        "chained_step(opt_params, chained_state, bx, by)",
    ),
    Case(
        "eqx-filter-vmap",
        """
        eqx_linear = eqx.nn.Linear(3, 2, key=jax.random.PRNGKey(2))
        """,
        "eqx.filter_vmap(eqx_linear)(bx)",
        ("filter_vmap",),
    ),
    Case(
        "nnx-grad-in-jit",
        """
        @nnx.jit
        def grads_only(model, x, y):
            return nnx.grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        """,
        "grads_only(mlp, bx, by)",
    ),
    Case(
        "diffrax-solve",
        """
        import diffrax
        def decay(t, y, args):
            return -args * y
        def solve(y0, rate):
            term = diffrax.ODETerm(decay)
            solution = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=rate)
            return solution.ys
        """,
        "solve(jnp.ones(2), 0.5)",
    ),
]

CORPUS = JAX_DOCS + LIBRARIES

# A function in a file of the user's own (a module next to the notebook), not in a cell.
USER_MODULE = """\
import jax
import jax.numpy as jnp


def smooth(x):
    y = jnp.tanh(x)
    return jnp.sum(y * y)


def looped(x):
    return jax.lax.fori_loop(0, 3, lambda i, v: v * 0.5 + x, x)
"""
USER_FILE_CASES = [
    Case("file-function", "", "labels_user_model.smooth(x4)"),
    Case("file-grad", "", "jax.grad(labels_user_model.smooth)(x4)", ("grad",)),
    Case("file-loop-vmap", "", "-t vmap labels_user_model.looped(xs)", ("vmap",)),
]
