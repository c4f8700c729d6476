"""The doctor's registry: every pitfall is documented and tested, every fragment of JAX's messages
the doctor reads is still written by the installed JAX, the order and severities are the
declared ones, and a recogniser that breaks is logged and counted instead of vanishing."""

from __future__ import annotations

import logging
import operator
import pathlib
import re

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
import pytest

from jaxmagic import doctor
from jaxmagic.doctor import clues, registry

ROOT = pathlib.Path(__file__).resolve().parent.parent
X = jnp.ones(4)
scale_factor = 2.0  # a global the traced function below reads


def message(fn, *args) -> str:
    with pytest.raises(Exception) as info:
        fn(*args)
    return str(info.value)


def _leak_message() -> str:
    kept = []

    def step(x):
        y = jnp.sin(x)
        kept.append(y)
        return y

    jax.jit(step)(X)
    return message(lambda: kept[0] + 1)


def _checked_leak_message() -> str:
    kept = []

    def step(x):
        kept.append(x * 2)
        return x

    with jax.checking_leaks():
        return message(jax.jit(step), X)


def _donated_message(read: str) -> str:
    """What reading a donated array raises: passed to a jitted call again, read by NumPy, waited
    for. (``p + 1`` raises either of the first two, as JAX's dispatch cache of ``add`` stands.)"""
    step = jax.jit(lambda p: p * 2, donate_argnums=0)
    p = jnp.ones(2)
    step(p)
    reads = {"again": lambda: step(p), "numpy": lambda: np.asarray(p), "wait": p.block_until_ready}
    return message(reads[read])


def _attribute_message(module, name: str) -> str:
    """What reading ``module.name`` raises ("" where this JAX still has the name)."""
    try:
        getattr(module, name)
    except AttributeError as exc:
        return str(exc)
    return ""


def _nnx_message(mutate: bool) -> str:
    from flax import nnx

    if mutate:  # Flax refuses to change a BatchNorm's statistics from inside a trace it is not part of
        model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        return message(jax.jit(lambda x: model(x)), jnp.ones((4, 2)))
    linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    return message(jax.jit(lambda x: nnx.grad(lambda m: m(x).sum())(linear)), jnp.ones((1, 2)))


# Each fragment a recogniser declares (or clues reads), with code that makes the installed JAX
# write it. A fragment declared without an entry here fails the test below.
PRODUCERS = {
    "Slice entries must be static integers": lambda: message(jax.jit(lambda x, n: x[:n]), X, 2),
    "Array slice indices must have static start/stop/step": lambda: message(jax.jit(lambda x, n: x[:n]), X, 2),
    "Shapes must be 1D sequences of concrete values of integer type": lambda: message(jax.jit(jnp.zeros), 2),
    "must be statically specified": lambda: message(jax.jit(jnp.nonzero), X),
    "argument of jnp.": lambda: message(jax.jit(lambda n: jnp.linspace(0, 1, n)), 3),
    "arose in the jnp.": lambda: message(jax.jit(jnp.arange), 3),
    "for the first argument of jnp.": lambda: message(jax.jit(jnp.unique), X),
    "Non-hashable static arguments are not supported": lambda: message(
        jax.jit(lambda x, s: x, static_argnums=1), X, [1]
    ),
    "Array has been deleted": lambda: _donated_message("numpy"),
    "has been deleted or donated": lambda: _donated_message("again"),
    "called on deleted or donated buffer": lambda: _donated_message("wait"),
    "Leaked trace": _checked_leak_message,
    "unsupported format string passed to": lambda: message(jax.jit(lambda x: f"{x.sum():.2f}"), X),
    "argument must be known statically": lambda: message(jax.jit(lambda v, axis: v.min(axis)), X, 0),
    "JAX arrays are immutable and do not support in-place item assignment": lambda: message(X.__setitem__, 0, 1.0),
    "requires ndarray or scalar arguments, got <class 'list'> at position": lambda: message(jnp.sum, [1, 2, 3]),
    "'_IndexUpdateHelper' object does not support item assignment": lambda: message(operator.setitem, X.at, 0, 1.0),
    "'_IndexUpdateRef' and '": lambda: message(operator.iadd, X.at[0], 1.0),
    "as an abstract array. The problematic value is of type": lambda: message(jax.jit(lambda x, s: x), X, "a"),
    "truth value of an array with more than one element is ambiguous": lambda: message(lambda: (X > 0) and (X > 1)),
    "truth value of an array": lambda: message(jax.jit(lambda x: jnp.where(x, 1, 0) if x else x), X),
    "The error occurred while tracing the function": lambda: message(jax.jit(lambda n: jnp.zeros(n)), 2),
    "The function being traced when the value leaked was": _leak_message,
    "depends on the value of the argument": lambda: message(jax.jit(lambda n: jnp.zeros(n)), 2),
    "became a tracer due to JAX operations": lambda: message(
        jax.jit(lambda x: int(jnp.argmax(jnp.arange(3.0) * 2))), X
    ),
    "The leaked intermediate value was created on line": _leak_message,
    "See https://docs.jax.dev/en/latest/errors.html": lambda: message(jax.jit(lambda x: float(x.sum())), X),
    "has no attribute": lambda: _attribute_message(jnp, "softmax"),
    "was removed in JAX v0.6.0": lambda: _attribute_message(jax, "tree_map"),
    "jax.numpy.fix was deprecated in JAX v0.9.0": lambda: _attribute_message(jnp, "fix"),
    "jax.device_put_replicated is deprecated; use jax.device_put": lambda: _attribute_message(
        jax, "device_put_replicated"
    ),
    "jax.scipy.special.sph_harm was deprecated in v0.7.0 and removed in v0.10.0": lambda: _attribute_message(
        jax.scipy.special, "sph_harm"
    ),
    "It often happens when a jitted function is defined inside another": lambda: _max_traces_message(),
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop": lambda: message(
        jax.grad(jax.jit(lambda x, n: jax.lax.fori_loop(0, n, lambda i, a: a * x, 1.0))), 2.0, 3
    ),
    "grad requires real- or complex-valued inputs": lambda: message(jax.grad(jnp.tanh), 2),
    "vmap got inconsistent sizes for array axes to be mapped": lambda: message(
        jax.vmap(jnp.add, in_axes=(0, 1)), jnp.ones((3, 2)), jnp.ones((3, 2))
    ),
    "Gradient only defined for scalar-output functions. Output was (": lambda: message(
        jax.grad(lambda w: (w.sum(), w)), X
    ),
    "of type <class 'jax.ShapeDtypeStruct'> is not a valid JAX type": lambda: message(
        jax.jit(lambda x: x * 2), jax.ShapeDtypeStruct((3,), jnp.float32)
    ),
    "Previously-consumed key": lambda: _key_reuse_message(),
    "wrapped in a BatchTracer": lambda: _vmap_leak_message(),
    "from a different trace level": lambda: _nnx_message(mutate=True),
    "Cannot extract graph node from different trace level": lambda: _nnx_message(mutate=False),
}


def _key_reuse_message() -> str:
    def noise(key):
        return jax.random.normal(key, (2,)), jax.random.uniform(key, (2,))

    with jax.debug_key_reuse(True):
        return message(noise, jax.random.key(0))


def _vmap_leak_message() -> str:
    kept = []

    def sketch(x):
        kept.append(x)
        return x * 2

    jax.vmap(sketch)(X)
    return message(lambda: kept[0] + 1)


def _max_traces_message() -> str:
    chex = pytest.importorskip("chex")

    @jax.jit
    @chex.assert_max_traces(n=1)
    def normalise(x):
        return x / x.sum()

    normalise(X)
    try:
        return message(normalise, jnp.ones(5))
    finally:
        chex.clear_trace_counter()


def declared_fragments() -> list[tuple[str, registry.Written]]:
    found = [(p.id, m) for p in doctor.PITFALLS.values() for m in p.messages]
    return found + [("clues", m) for m in registry.written(clues.MESSAGES)]


@pytest.mark.parametrize("owner, fragment", declared_fragments(), ids=lambda v: str(getattr(v, "text", v))[:40])
def test_every_declared_message_fragment_is_still_written_by_this_jax(owner, fragment):
    assert fragment.text in PRODUCERS, f"{owner} reads {fragment.text!r}: add code that makes JAX write it"
    if not fragment.by(jax.__version__):
        pytest.skip(
            f"JAX {jax.__version__} does not write {fragment.text!r} (declared for {fragment.since}..{fragment.until})"
        )
    written = PRODUCERS[fragment.text]()
    assert fragment.text in written, f"JAX {jax.__version__} no longer writes {fragment.text!r} ({owner})"


def test_a_fragment_declared_for_other_versions_is_not_written_by_this_jax():
    # the declared range is true both ways: a version outside it writes another wording
    for owner, fragment in declared_fragments():
        if not fragment.by(jax.__version__):
            assert fragment.text not in PRODUCERS[fragment.text](), (
                f"JAX {jax.__version__} writes {fragment.text!r} ({owner}): widen its declared versions"
            )


@pytest.mark.parametrize("pitfall", sorted(doctor.PITFALLS))
def test_every_pitfall_has_its_docs_section(pitfall):
    page = (ROOT / registry.DOCS).read_text()
    assert re.search(rf"^## {re.escape(pitfall)}$", page, re.M), f"{registry.DOCS} has no '## {pitfall}' section"
    assert f"(#{pitfall})" in page, f"the table of {registry.DOCS} does not link #{pitfall}"


@pytest.mark.parametrize("pitfall", sorted(doctor.PITFALLS))
def test_every_pitfall_is_asserted_by_a_test(pitfall):
    tests = "".join(
        p.read_text() for p in (ROOT / "tests").glob("test_doctor_*.py") if p.name != pathlib.Path(__file__).name
    )
    # `found.pitfall == "<id>"`, `== ["<id>"]`, or the id in a table of cases that a test checks
    assert re.search(
        rf'\.pitfall == "{re.escape(pitfall)}"|== \["{re.escape(pitfall)}"\]|,\s+"{re.escape(pitfall)}",\s', tests
    ), f"no test checks that the doctor answers {pitfall!r}"


def test_each_pitfall_is_declared_once_with_a_known_severity_stage_and_recogniser():
    for pitfall in doctor.PITFALLS.values():
        assert pitfall.severity in registry.SEVERITIES and pitfall.stage in registry.STAGES
        assert callable(pitfall.recognise) and pitfall.title
    with pytest.raises(ValueError, match="declared twice"):
        registry.pitfall("traced-shape", "again", "error")(lambda case: None)


def test_the_severity_shown_is_the_registrys():
    for pitfall in doctor.PITFALLS.values():
        shown = doctor.Diagnosis(
            pitfall.id, explanation="", fix="", severity="error" if pitfall.severity == "warning" else "warning"
        )
        assert shown.severity == pitfall.severity


def test_the_more_specific_recognisers_run_first():
    order = [p.id for p in registry.in_order("error")]
    assert order.index("unhashable-static") < order.index("python-control-flow") < order.index("traced-shape")
    trace = [p.id for p in registry.in_order("trace")]
    assert trace.index("print-side-effect") < trace.index("baked-global")


def test_a_recogniser_that_raises_is_logged_and_counted_and_the_others_still_run(monkeypatch, caplog):
    broken = doctor.PITFALLS["unhashable-static"]

    def explode(case):
        raise RuntimeError("reworded by a new JAX")

    monkeypatch.setitem(
        doctor.PITFALLS,
        broken.id,
        registry.Pitfall(
            broken.id, broken.title, broken.severity, broken.order, broken.stage, broken.messages, explode
        ),
    )
    before = len(doctor.internal_errors())

    def first(x, n):
        return x[:n]

    with caplog.at_level(logging.WARNING, logger="jaxmagic.doctor"):
        try:
            jax.jit(first)(np.ones(3), 2)
        except IndexError as exc:
            found = doctor.diagnose(exc)
    assert found.pitfall == "traced-shape"  # the next recognisers still ran
    assert doctor.internal_errors()[-1] == "unhashable-static: RuntimeError: reworded by a new JAX"
    assert len(doctor.internal_errors()) == before + 1
    assert "the unhashable-static recogniser failed" in caplog.text and "reworded by a new JAX" in caplog.text


def test_a_trace_recogniser_that_raises_is_counted_too(monkeypatch):
    broken = doctor.PITFALLS["print-side-effect"]
    monkeypatch.setitem(
        doctor.PITFALLS,
        broken.id,
        registry.Pitfall(
            broken.id, broken.title, broken.severity, broken.order, broken.stage, broken.messages, lambda traced: 1 / 0
        ),
    )

    def f(x):
        return x * scale_factor

    found = doctor.observe_trace(f, jax.make_jaxpr(f)(X))
    assert [d.pitfall for d in found] == ["baked-global"]
    assert doctor.internal_errors()[-1].startswith("print-side-effect: ZeroDivisionError")
