"""A comparison's warnings and notes are facts first (``Comparison.facts``: kind, mode, numbers),
their sentences written from them: code can act on a note without reading its sentence."""

import numpy as np

from jaxmagic import resolve_call
from jaxmagic.timing import compare
from jaxmagic.timing.notes import KINDS, Note


def test_every_sentence_comes_from_a_fact_with_its_numbers():
    import jax.numpy as jnp

    namespace = {"jnp": jnp, "x": np.ones((64, 64), dtype=np.float32)}  # a NumPy argument
    result = compare(resolve_call("jnp.tanh(x)", namespace), repeat=2, budget=0.05)
    kinds = [note.kind for note in result.facts]
    assert "numpy_converted" in kinds  # the NumPy argument, said as a fact with its count
    (converted,) = [n for n in result.facts if n.kind == "numpy_converted"]
    assert converted.facts == {"count": 1} and converted.mode == "eager"
    assert result.warnings == [n.text for n in result.facts if n.warning]
    assert result.notes == [n.text for n in result.facts if not n.warning]


def test_an_unknown_kind_is_refused():
    try:
        Note("made_up")
    except ValueError as problem:
        assert "unknown note kind" in str(problem) and all(kind in str(problem) for kind in KINDS[:3])
    else:
        raise AssertionError("an unknown kind was accepted")
