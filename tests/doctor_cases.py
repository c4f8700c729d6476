"""Running a piece of user code the way a notebook does (its text known to ``linecache`` under a
file name of its own), so the doctor can read its source, and applying the fixes it suggests."""

from __future__ import annotations

import itertools
import linecache
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from jaxmagic import doctor
from jaxmagic.timing.agreement import tolerance

_numbers = itertools.count(1)


def register(source: str, name: str | None = None) -> str:
    """Put ``source`` in linecache under a fresh file name, as IPython does for a cell."""
    filename = name or f"<doctor-case-{next(_numbers)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


def namespace(**more) -> dict:
    return {"jax": jax, "jnp": jnp, "np": np, **more}


def run(source: str, ns: dict) -> BaseException | None:
    """Run ``source`` in ``ns`` as one cell; the exception it raised, or ``None``."""
    source = textwrap.dedent(source).strip("\n") + "\n"
    code = compile(source, register(source), "exec")
    try:
        exec(code, ns)
    except Exception as exc:
        return exc
    return None


def diagnosed(definition: str, call: str, **more) -> tuple[doctor.Diagnosis | None, dict, BaseException | None]:
    """Define, call, and diagnose what the call raised. Every diagnosis made here is held to the
    doctor's rule: a fix it shows was checked on the call's arguments, or it says it could not be."""
    ns = namespace(**more)
    assert run(definition, ns) is None, "the definitions themselves must run"
    error = run(call, ns)
    assert error is not None, f"expected `{call}` to fail"
    found = doctor.diagnose(error)
    if found is not None:
        assert_checked_or_said(found)
    return found, ns, error


def assert_checked_or_said(found: doctor.Diagnosis) -> None:
    """The fix shown is ``checked`` (and the card says so), or the card says it could not be checked;
    no words announce code (``…:``) that the card does not show."""
    if found.fix:
        said = ("Checked on", "Checked by running") if found.checked else ("Not checked on your arguments",)
        assert found.check_note.startswith(said), f"{found.pitfall}: {found.check_note!r}"
    for label, code in found.alternatives:
        assert code.strip() or not str(label).rstrip().endswith(":"), f"{found.pitfall}: {label!s} (no code follows)"


def apply(fix: str, ns: dict) -> None:
    """Run a suggested fix in the user's namespace (it redefines what it changes)."""
    error = run(fix, ns)
    assert error is None, f"the suggested fix failed: {type(error).__name__}: {error}\n{fix}"


def line_of(source: str, text: str) -> int:
    """The 1-based line of ``source`` (as ``run`` registers it) that contains ``text``."""
    lines = (textwrap.dedent(source).strip("\n") + "\n").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def intended(definition: str, call: str, ns: dict):
    """What ``call`` computes with JAX's jit switched off (``jax.disable_jit``): the values the
    code means, by JAX's own eager evaluation, in a namespace of its own."""
    eager = dict(ns)
    assert run(definition, eager) is None
    with jax.disable_jit():
        assert run(f"__result__ = {call}", eager) is None, f"`{call}` must run eagerly"
    return eager["__result__"]


def fix_runs(definition: str, call: str, expected=None, fixed_call: str | None = None, **more) -> doctor.Diagnosis:
    """Define, call (it fails), diagnose, apply the fix, call again (``fixed_call`` where the fix
    changes the call itself): the error is gone and the result is ``expected``, by default what
    JAX computes for the code with jit switched off. Returns the diagnosis."""
    found, ns, error = diagnosed(definition, call, **more)
    assert found is not None, f"no diagnosis for {type(error).__name__}: {error}"
    if expected is None:
        expected = intended(definition, call, namespace(**more))
    apply(found.fix, ns)
    again = run(f"__result__ = {fixed_call or call}", ns)
    assert again is None, f"after the fix, `{call}` still fails: {type(again).__name__}: {again}\n{found.fix}"
    assert_same_values(ns["__result__"], expected)
    return found


def assert_same_values(fixed, expected) -> None:
    """The fixed call's values are the ones meant, within the tolerance of their dtype that the card
    means by "the same values" (``timing.agreement.tolerance``: the last bits of a float32 may differ
    between jitted and eager code, as XLA orders a sum its own way)."""
    fixed, expected = np.asarray(fixed), np.asarray(expected)
    rtol, atol = max(tolerance(fixed.dtype), tolerance(expected.dtype))
    np.testing.assert_allclose(fixed, expected, rtol=rtol, atol=atol)
