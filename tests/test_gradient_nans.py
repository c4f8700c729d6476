"""``--values`` on a gradient names the derivative that blew up, by the user's forward operation
and line, and shows JAX's documented fix (the double ``where``, a safe square root or norm),
checked on the user's arguments. Over the corpus's gradients that make a NaN or an inf: the NaN is
the one ``jax_debug_nans`` stops at; the derivative named is not finite at the point named (by
value, with ``jax.grad`` of that very operation); the value it is the derivative of is finite; and
every fix shown runs here, with the same values and a finite gradient."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from tests.corpus import CASES

GRADIENT_NANS = [c for c in CASES if "nan" in c.tags and "grad" in c.tags and not c.raises and c.available]

# The cases the rule was written for: each must be named and fixed.
MUST_BE_FIXED = {
    "jax-issue/8893/sqrt-grad-at-zero",  # jnp.sqrt(x) at 0
    "jax-issue/4177/norm-of-zero-vector",  # jnp.linalg.norm of a zero vector
    "jax-issue/11716/std-of-constant-row",  # jnp.std of a constant row
    "jax-docs/faq/double-where-trap",  # the double where trap
}

# What the user writes for each forward operation (the line named must show one of them).
WRITTEN = {
    "sqrt": ("sqrt", "norm", "std"),
    "log": ("log",),
    "atan2": ("arctan2", "atan2"),
    "asin": ("arcsin", "asin"),
    "acos": ("arccos", "acos"),
}


def _debug_nans_primitive(function, args) -> str:
    with jax.debug_nans(True):
        try:
            jax.block_until_ready(function(*args))
        except FloatingPointError as exc:
            found = re.search(r"encountered in (\w+)", str(exc))
            return found.group(1) if found else str(exc)
    return ""


def _not_finite(value) -> bool:
    return not bool(np.all(np.isfinite(np.asarray(value))))


def _derivative_at(primitive: str, point: float):
    """The derivative of the primitive itself at ``point``, by ``jax.grad`` (atan2 on the diagonal)."""
    if primitive == "atan2":
        return jax.grad(lambda v: lax.atan2(v, v))(point)
    return jax.grad(getattr(lax, primitive))(point)


def test_the_corpus_has_the_cases_the_rule_was_written_for():
    assert {c.id for c in GRADIENT_NANS} >= MUST_BE_FIXED


@pytest.mark.parametrize("case", GRADIENT_NANS, ids=[c.id for c in GRADIENT_NANS])
def test_a_gradient_s_nan_names_the_derivative_that_blew_up_and_its_fix_runs(ip, run, case):
    run(case.setup).assert_ok()
    shown = run(f"%jaxpr --values -o --max-eqns 5 {case.call}").assert_ok()
    report = shown.result
    blowup = report.derivative_blowup
    if case.id in MUST_BE_FIXED:
        assert blowup is not None and report.gradient_fix is not None
    if blowup is None:
        return
    callee = eval(case.call.split("(", 1)[0], ip.user_ns)  # noqa: S307
    forward, args, kwargs = report._forward_call()
    # the NaN is the one JAX's own jax_debug_nans stops at
    if report.value_run.first_nan is not None:
        assert report.value_run.first_nan.primitive == _debug_nans_primitive(callee, args)
    # the derivative named is not finite there, by value; the value it is the derivative of is finite
    assert _not_finite(_derivative_at(blowup.forward, blowup.at))
    assert not _not_finite(jax.tree_util.tree_leaves(forward(*args, **kwargs))[0])
    # the line named is the user's, and shows the operation
    assert blowup.source is not None and blowup.source.text in case.setup
    assert any(word in blowup.source.text for word in WRITTEN[blowup.forward])
    headline = next(line for line in shown.text.splitlines() if "comes from" in line)
    assert f"the derivative of `{blowup.forward}` at" in headline and blowup.source.text in headline
    fix = report.gradient_fix
    if fix is None:
        return
    # the fix printed runs: the same values on the user's arguments, and a finite gradient
    assert all(line in shown.text for line in fix.code.strip().splitlines() if line.strip())
    namespace = dict(ip.user_ns)
    exec(fix.code, namespace)  # noqa: S102
    fixed = namespace[fix.function]
    np.testing.assert_allclose(np.asarray(fixed(*args, **kwargs)), np.asarray(forward(*args, **kwargs)), rtol=1e-6)
    floats = tuple(i for i, a in enumerate(args) if jnp.issubdtype(jnp.result_type(a), jnp.inexact))
    gradient = jax.grad(lambda *a: jnp.sum(fixed(*a, **kwargs)), argnums=floats)(*args)
    assert not any(_not_finite(g) for g in jax.tree_util.tree_leaves(gradient))
    assert any(_not_finite(g) for g in jax.tree_util.tree_leaves(callee(*args, **kwargs)))  # the user's was not


def test_a_forward_value_that_is_not_finite_is_not_blamed_on_a_derivative(run):
    run("def inverse_root(x):\n    return (1 / jnp.sqrt(x)).sum()").assert_ok()
    report = run("%jaxpr --values -o -t grad inverse_root(jnp.array([0.0, 1.0]))").assert_ok().result
    assert report.value_run.first_nonfinite is not None
    assert report.derivative_blowup is None and report.gradient_fix is None
    assert "the derivative of" not in report.to_text()


def test_the_fix_is_written_in_the_user_s_own_names(run):
    run("import jax.numpy as np_\ndef spread(m):\n    return np_.std(m, axis=1).sum()").assert_ok()
    report = run("%jaxpr --values -o -t grad spread(np_.ones((2, 3)))").assert_ok().result
    fix = report.gradient_fix
    assert fix is not None and fix.kind == "safe std"
    assert "np_.var(m, axis=1)" in fix.fixed_line and "np_.where" in fix.code and "jnp" not in fix.code
