"""Warnings found while tracing: print that runs only at trace time, globals baked in as constants,
NumPy that happened to work on a traced value. From the engine, and under %jaxpr's output."""

from __future__ import annotations

import jax
import numpy as np
from conftest import assert_no_internals
from doctor_cases import apply, line_of, namespace, run

from jaxmagic import doctor
from jaxmagic.tracing.call import Call

X = np.arange(1.0, 4.0, dtype=np.float32)


def traced(source: str, name: str, *args, **more):
    """Define ``name`` from ``source``, trace it with jax.make_jaxpr while watching what it prints."""
    ns = namespace(**more)
    assert run(source, ns) is None
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(ns[name])(*args)
    return ns, closed, printed.text


def pitfalls(found):
    return [d.pitfall for d in found]


def test_print_while_tracing_is_a_warning_with_a_debug_print_fix(capsys):
    source = """
    def train_step(params, batch):
        loss = jnp.mean((batch - params) ** 2)
        print(f"Loss: {loss!s}", "step")
        return loss
    """
    ns, closed, printed = traced(source, "train_step", X, X * 2)
    assert "JitTracer" in printed or "Traced" in printed
    (found,) = doctor.observe_trace(ns["train_step"], closed, printed)
    assert found.pitfall == "print-side-effect" and found.severity == "warning"
    assert found.where.line == line_of(source, "print(")
    assert found.variable == "loss"
    assert printed.strip().split(" ")[0] in found.explanation
    assert 'jax.debug.print("Loss: {!s} step", loss)' in found.fix
    apply(found.fix, ns)
    capsys.readouterr()
    jax.block_until_ready(jax.jit(ns["train_step"])(X, X * 2))
    jax.effects_barrier()
    assert "Loss: 4.66666" in capsys.readouterr().out  # printed by the compiled code, with the value


def test_print_formatting_a_traced_value_is_diagnosed_when_it_raises():
    from doctor_cases import diagnosed

    source = """
    @jax.jit
    def train_step(params, batch):
        loss = jnp.mean((batch - params) ** 2)
        print(f"Loss: {loss:.3f}")
        return loss
    """
    found, ns, error = diagnosed(source, "train_step(x, x * 2)", x=X)
    assert "unsupported format string" in str(error)
    assert found.pitfall == "formatted-tracer" and found.severity == "error"
    assert found.variable == "loss" and found.where.line == line_of(source, "print(")
    assert 'jax.debug.print("Loss: {:.3f}", loss)' in found.fix
    apply(found.fix, ns)
    ns["train_step"](X, X * 2)


def test_print_in_a_helper_the_traced_function_calls_is_found():
    source = """
    def compute_loss(params, batch):
        print("computing", params)
        return jnp.sum(params * batch)

    def train_step(params, batch):
        return compute_loss(params, batch) * 2
    """
    ns, closed, printed = traced(source, "train_step", X, X)
    (found,) = doctor.observe_trace(ns["train_step"], closed, printed)
    assert found.pitfall == "print-side-effect" and found.function == "compute_loss"


def test_jax_debug_print_and_print_of_plain_values_elsewhere_are_fine():
    source = """
    def train_step(params, batch):
        loss = jnp.mean((batch - params) ** 2)
        jax.debug.print("Loss: {}", loss)
        return loss
    """
    ns, closed, printed = traced(source, "train_step", X, X)
    assert doctor.observe_trace(ns["train_step"], closed, printed) == []


def test_global_number_and_array_are_baked_in():
    source = """
    learning_rate = 0.01
    offset = jnp.ones(3)
    EPSILON = 1e-6

    def update(params, grads):
        return params - learning_rate * grads + offset * EPSILON
    """
    ns, closed, printed = traced(source, "update", X, X)
    (found,) = doctor.observe_trace(ns["update"], closed, printed)
    assert found.pitfall == "baked-global" and found.severity == "warning"
    assert found.variable == "learning_rate"
    assert "`offset`" in found.explanation and "EPSILON" not in found.explanation  # constants by name stay quiet
    assert found.where.line == line_of(source, "return params")
    assert "def update(params, grads, learning_rate, offset):" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["update"](X, X, 0.5, np.zeros(3)), X * 0.5)


def test_a_global_made_a_parameter_keeps_its_value_when_the_fix_is_checked_on_generated_arguments():
    """Arguments of one value repeated are checked again on generated ones; the global the fix made
    a parameter is passed its own value there too, as the user's code reads it."""
    source = (
        "w = np.arange(16.0, dtype=np.float32).reshape(4, 4)\ndef f(x):\n    return (jnp.tanh(x @ w) @ w.T).sum()\n"
    )
    ns = namespace()
    assert run(source, ns) is None
    ones = np.ones((4, 4), np.float32)
    call = Call(ns["f"], (ones,), {})
    (found,) = doctor.observe_trace(call, jax.make_jaxpr(ns["f"])(ones))
    assert found.pitfall == "baked-global" and found.check.outcome == "same", found.check_note
    assert found.check.generated == "repeated"
    apply(found.fix, ns)
    np.testing.assert_allclose(ns["f"](ones, ns["w"]), (np.tanh(ones @ ns["w"]) @ ns["w"].T).sum(), rtol=1e-5)


def test_global_array_read_only_for_its_shape_is_not_baked():
    source = """
    template = jnp.ones(3)

    def reshape_like(x):
        return x.reshape(template.shape)
    """
    ns, closed, printed = traced(source, "reshape_like", X)
    assert doctor.observe_trace(ns["reshape_like"], closed, printed) == []


def test_numpy_that_happened_to_work_is_a_warning():
    source = """
    def bad_update(params, grad):
        lr = np.mean(grad) * 0.01
        return params - lr * grad
    """
    ns, closed, printed = traced(source, "bad_update", X, X)
    (found,) = doctor.observe_trace(ns["bad_update"], closed, printed)
    assert found.pitfall == "numpy-on-traced-value" and found.severity == "warning"
    assert found.variable == "grad"
    assert found.where.line == line_of(source, "np.mean")
    assert "lr = jnp.mean(grad) * 0.01" in found.fix
    apply(found.fix, ns)
    np.testing.assert_allclose(jax.jit(ns["bad_update"])(X, X), X - X.mean() * 0.01 * X, rtol=1e-6)


def test_observe_takes_a_jaxmagic_call_too():
    from jaxmagic.tracing.call import Call

    ns = namespace()
    run("scale = 2.0\ndef f(x):\n    return x * scale", ns)
    call = Call(ns["f"], (X,), {})
    assert pitfalls(doctor.observe_trace(call, jax.make_jaxpr(ns["f"])(X))) == ["baked-global"]


# ------------------------------------------------------------------------------------------------
# Under %jaxpr


def test_jaxpr_magic_shows_trace_warnings_under_its_output(run):
    run("""
scale = 2.0
def g(x):
    print("x is", x)
    return x * scale + np.mean(x)
""").assert_ok()
    shown = run("%jaxpr g(jnp.ones(3))").assert_ok()
    assert "x is JitTracer" in shown.stdout  # the user's own print still reaches the screen
    kinds = [
        o["text/html"].split('data-pitfall="')[1].split('"')[0]
        for o in shown.outputs
        if "data-pitfall" in o.get("text/html", "")
    ]
    assert kinds == ["print-side-effect", "baked-global", "numpy-on-traced-value"]
    assert 'data-primitive="mul"' in shown.outputs[0]["text/html"]  # the jaxpr comes first
    assert_no_internals(shown)


def test_jaxpr_magic_plain_shows_warnings_as_text(run):
    run("def h(x):\n    print(x)\n    return x + 1").assert_ok()
    shown = run("%jaxpr --plain h(jnp.ones(2))").assert_ok()
    assert "[print-side-effect]" in shown.stdout
    assert 'jax.debug.print("{}", x)' in shown.stdout


def test_jaxpr_magic_failure_shows_one_diagnosis(run):
    run("def f(x, use_relu):\n    if use_relu:\n        return x\n    return -x").assert_ok()
    shown = run("%jaxpr f(jnp.ones(3), True)")
    assert shown.error is not None
    cards = [o for o in shown.outputs if "data-pitfall" in o.get("text/html", "")]
    assert len(cards) == 1 and 'data-pitfall="python-control-flow"' in cards[0]["text/html"]
    assert "-s use_relu" in cards[0]["text/plain"]  # the magic's own way to mark it static
    assert_no_internals(shown)


def test_global_pytree_of_parameters_is_baked_in():
    source = """
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}

    def predict(x):
        return jnp.tanh(x @ params["w"] + params["b"])
    """
    ns, closed, printed = traced(source, "predict", X)
    (found,) = doctor.observe_trace(ns["predict"], closed, printed)
    assert found.pitfall == "baked-global" and found.variable == "params"
    assert "a dict of 2 arrays" in found.explanation
    apply(found.fix, ns)
    assert ns["predict"](X, ns["params"]).shape == (2,)


def test_an_f_string_given_to_jax_debug_print_is_a_warning_with_a_template_fix(capsys):
    source = """
    def step(params, batch):
        loss = jnp.mean((batch - params) ** 2)
        jax.debug.print(f"loss = {loss}, first = {params[0]}")
        return loss
    """
    ns, closed, printed = traced(source, "step", X, X * 2)
    (found,) = doctor.observe_trace(ns["step"], closed, printed)
    assert found.pitfall == "debug-print-fstring" and found.severity == "warning"
    assert found.where.line == line_of(source, "jax.debug.print")
    assert 'jax.debug.print("loss = {}, first = {}", loss, params[0])' in found.fix
    apply(found.fix, ns)
    capsys.readouterr()
    jax.block_until_ready(jax.jit(ns["step"])(X, X * 2))
    jax.effects_barrier()
    out = capsys.readouterr().out
    assert "loss = 4.66666" in out and "Tracer" not in out


def test_several_prints_get_one_warning_quoting_what_each_printed():
    source = """
    def step(params, batch):
        loss = jnp.mean((batch - params) ** 2)
        print("params", params)
        print("loss", loss)
        print("a")
        print("b")
        return loss
    """
    ns, closed, printed = traced(source, "step", X, X * 2)
    (found,) = doctor.observe_trace(ns["step"], closed, printed)
    assert found.pitfall == "print-side-effect" and found.where.line == line_of(source, 'print("params"')
    assert "`params JitTracer" in found.explanation  # the first print's own output, not another's
    body = found.fix.splitlines()
    assert sum("jax.debug.print" in line for line in body) == 4  # every print rewritten, none skipped
    apply(found.fix, ns)
    jax.block_until_ready(jax.jit(ns["step"])(X, X * 2))


def test_numpy_random_drawn_while_tracing_is_a_warning_with_a_jax_random_fix():
    source = """
    @jax.jit
    def noisy(x):
        return x + np.random.uniform()
    """
    ns, closed, printed = traced(source, "noisy", 1.0)
    (found,) = doctor.observe_trace(ns["noisy"], closed, printed)
    assert found.pitfall == "numpy-random" and found.severity == "warning"
    assert found.where.line == line_of(source, "np.random.uniform")
    assert "gives the same numbers" in found.explanation
    assert "def noisy(x, key):" in found.fix and "jax.random.uniform(key)" in found.fix
    apply(found.fix, ns)
    first, second = jax.random.split(jax.random.key(0))
    a, b = float(ns["noisy"](1.0, first)), float(ns["noisy"](1.0, second))
    assert a != b and 1.0 <= a < 2.0 and 1.0 <= b < 2.0, "a new key, new numbers, from the same distribution"
    assert float(ns["noisy"](1.0, first)) == a


def test_several_numpy_draws_and_a_generator_get_one_key_each():
    source = """
    rng = np.random.default_rng(0)

    def dropout(x):
        mask = rng.random((3,)) > 0.5
        noise = np.random.normal(0.0, 0.1, size=3)
        return x * mask + noise
    """
    ns, closed, printed = traced(source, "dropout", X)
    (found,) = doctor.observe_trace(ns["dropout"], closed, printed)
    assert found.pitfall == "numpy-random" and found.where.line == line_of(source, "rng.random")
    assert "key_1, key_2 = jax.random.split(key, 2)" in found.fix
    apply(found.fix, ns)
    out = jax.jit(ns["dropout"])(X, jax.random.key(1))
    assert out.shape == X.shape
    assert not np.array_equal(np.asarray(out), np.asarray(jax.jit(ns["dropout"])(X, jax.random.key(2))))


def test_numpy_random_outside_the_traced_code_and_jax_random_inside_are_fine():
    source = """
    np.random.seed(0)
    table = np.random.normal(size=3)

    def noisy(x, key):
        np.random.seed(1)  # not a draw
        return x + table + jax.random.normal(key, (3,))
    """
    ns, closed, printed = traced(source, "noisy", X, jax.random.key(0))
    found = doctor.observe_trace(ns["noisy"], closed, printed)
    assert "numpy-random" not in pitfalls(found), "the table is drawn once on purpose (it is baked-global's case)"


def test_a_traced_method_that_changes_its_object_is_a_warning_with_a_state_passing_fix():
    source = """
    class Counter:
        def __init__(self):
            self.n = 0

        def count(self) -> int:
            self.n += 1
            return self.n

        def reset(self):
            self.n = 0

    counter = Counter()
    fast_count = jax.jit(counter.count)
    """
    ns = namespace()
    assert run(source, ns) is None
    closed = jax.make_jaxpr(ns["fast_count"])()
    (found,) = doctor.observe_trace(ns["fast_count"], closed)
    assert found.pitfall == "state-mutation" and found.severity == "warning"
    assert found.variable == "self.n" and found.where.line == line_of(source, "self.n += 1")
    assert "runs once, when JAX traces" in found.explanation
    apply(found.fix, ns)  # def count(n): n += 1; return n, n
    fast = jax.jit(ns["count"])
    n, results = 0, []
    for _ in range(3):
        result, n = fast(n)
        results.append(int(result))
    assert results == [1, 2, 3] and int(n) == 3


def test_a_method_that_only_reads_its_object_is_fine():
    source = """
    class Scaler:
        def __init__(self, factor):
            self.factor = factor

        def apply(self, x):
            return x * self.factor

    scaler = Scaler(2.0)
    """
    ns = namespace()
    assert run(source, ns) is None
    closed = jax.make_jaxpr(ns["scaler"].apply)(X)
    assert "state-mutation" not in pitfalls(doctor.observe_trace(jax.jit(ns["scaler"].apply), closed))


def test_a_flax_nnx_module_keeps_its_own_state_and_is_not_warned_about():
    nnx = __import__("pytest").importorskip("flax.nnx")
    source = """
    class Tally(nnx.Module):
        def __init__(self):
            self.calls = 0

        def __call__(self, x):
            self.calls = self.calls + 1
            return x * 2
    tally = Tally()
    """
    ns = namespace(nnx=nnx)
    assert run(source, ns) is None
    # NNX refuses the assignment under a plain jax trace, and carries it out of nnx.jit itself
    assert "state-mutation" not in pitfalls(doctor.observe_trace(jax.jit(ns["tally"].__call__)))


def test_a_global_assigned_while_tracing_holds_a_tracer_and_is_said_at_once():
    source = """
    g = 0.0

    def impure_saves_global(x):
        global g
        g = x
        return x
    """
    ns, closed, printed = traced(source, "impure_saves_global", 4.0)
    assert isinstance(ns["g"], jax.core.Tracer), "what JAX's sharp bits show: the global holds a tracer"
    (found,) = doctor.observe_trace(ns["impure_saves_global"], closed, printed)
    assert found.pitfall == "stored-tracer" and found.variable == "g"
    assert found.where.line == line_of(source, "g = x") and "UnexpectedTracerError" in found.explanation
    apply(found.fix, ns)
    result, g = jax.jit(ns["impure_saves_global"])(4.0)
    assert float(result) == float(g) == 4.0


def test_a_global_assigned_a_plain_value_while_tracing_is_not_a_stored_tracer():
    source = """
    calls = 0

    def counted(x):
        global calls
        calls = 1
        return x * 2
    """
    ns, closed, printed = traced(source, "counted", X)
    assert "stored-tracer" not in pitfalls(doctor.observe_trace(ns["counted"], closed, printed))
