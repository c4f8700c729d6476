"""``moved-name``: JAX's moved and removed names. Each entry of the table is true of the installed
JAX (the old name is gone where the table says so, the new spelling exists), each is recognised
from the error the old name raises, and each fix written as the user's code changed runs and
computes what the new spelling computes."""

from __future__ import annotations

import importlib
import textwrap
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from doctor_cases import namespace, run

from jaxmagic import doctor
from jaxmagic.doctor.clues import MISSING
from jaxmagic.doctor.moved_names import ENTRIES, MOVED
from jaxmagic.doctor.registry import _version

X = jnp.arange(3.0)


def resolved(path: str):
    """The object ``path`` names (importing its modules), or ``MISSING``."""
    parts = path.split(".")
    for length in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:length]))
        except ImportError:
            continue
        for part in parts[length:]:
            try:
                value = getattr(value, part)
            except AttributeError:
                return MISSING
        return value
    return MISSING


def gone_here(old: str) -> bool:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resolved(old) is MISSING


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.old)
def test_each_new_spelling_exists_in_this_jax(entry):
    assert resolved(entry.new) is not MISSING, f"{entry.new} does not exist in JAX {jax.__version__}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.old)
def test_each_old_name_is_gone_from_this_jax_where_the_table_says_so(entry):
    installed = _version(jax.__version__)
    if entry.removed is not None and _version(entry.removed) > installed:
        pytest.skip(f"{entry.old} is removed in JAX {entry.removed}; this is {jax.__version__}")
    assert gone_here(entry.old), f"{entry.old} still exists in JAX {jax.__version__}"
    if entry.deprecated and entry.removed:
        assert _version(entry.deprecated) < _version(entry.removed)


@dataclass(frozen=True)
class Case:
    """A cell that uses the old name (it fails), what runs after the fix (``after``), and the
    expression whose value ``result`` must then hold. ``expected=None``: no rename fixes it, the
    fix is words."""

    old: str
    cell: str
    after: str = ""
    expected: str | None = None


def fn(body: str, call: str = "result = f(X)") -> tuple[str, str]:
    """A jitted function whose line uses the old name, called: (cell, the call again)."""
    return f"@jax.jit\ndef f(x):\n    return {body}\n{call}", call


CASES = [
    Case("jax.numpy.softmax", *fn("jnp.softmax(x)"), "jax.nn.softmax(X)"),
    Case("jax.numpy.log_softmax", *fn("jnp.log_softmax(x)"), "jax.nn.log_softmax(X)"),
    Case("jax.numpy.sigmoid", *fn("jnp.sigmoid(x)"), "jax.nn.sigmoid(X)"),
    Case("jax.numpy.relu", *fn("jnp.relu(x - 1)"), "jax.nn.relu(X - 1)"),
    Case("jax.numpy.one_hot", *fn("jnp.one_hot(x.astype(int), 3)"), "jax.nn.one_hot(X.astype(int), 3)"),
    Case("jax.numpy.logsumexp", *fn("jnp.logsumexp(x)"), "jax.scipy.special.logsumexp(X)"),
    Case("jax.tree_map", *fn("jax.tree_map(lambda a: a * 2, {'w': x})['w']"), "X * 2"),
    Case("jax.tree_flatten", "result = jax.tree_flatten({'a': X})[0][0]", "", "X"),
    Case("jax.tree_leaves", "result = jax.tree_leaves({'a': X, 'b': X + 1})[1]", "", "X + 1"),
    Case("jax.tree_unflatten", "result = jax.tree_unflatten(jax.tree.structure({'a': 0}), [X])['a']", "", "X"),
    Case("jax.tree_structure", "result = jax.tree_structure({'a': X, 'b': 1}).num_leaves", "", "2"),
    Case(
        "jax.tree_transpose",
        "t = jax.tree.structure([0, 0])\nresult = jax.tree_transpose(t, jax.tree.structure((0, 0)), [(X, 1), (2, 3)])[0][1]",
        "",
        "2",
    ),
    Case("jax.treedef_is_leaf", "result = jax.treedef_is_leaf(jax.tree.structure(1))", "", "True"),
    Case(
        "jax.tree_util.tree_multimap",
        "result = jax.tree_util.tree_multimap(lambda a, b: a + b, [X], [X])[0]",
        "",
        "2 * X",
    ),
    Case("jax.numpy.product", *fn("jnp.product(x + 1)"), "6.0"),
    Case("jax.numpy.cumproduct", *fn("jnp.cumproduct(x + 1)"), "jnp.array([1.0, 2.0, 6.0])"),
    Case("jax.numpy.alltrue", *fn("jnp.alltrue(x >= 0)"), "True"),
    Case("jax.numpy.sometrue", *fn("jnp.sometrue(x > 1)"), "True"),
    Case("jax.numpy.round_", *fn("jnp.round_(x / 3, 2)"), "jnp.round(X / 3, 2)"),
    Case("jax.numpy.row_stack", *fn("jnp.row_stack([x, x])"), "jnp.vstack([X, X])"),
    Case("jax.numpy.trapz", *fn("jnp.trapz(x)"), "2.0"),
    Case("jax.numpy.in1d", *fn("jnp.in1d(x, x)")),
    Case("jax.numpy.fix", *fn("jnp.fix(x / 2 - 1)"), "jnp.trunc(X / 2 - 1)"),
    Case("jax.numpy.DeviceArray", "result = isinstance(X, jnp.DeviceArray)", "", "True"),
    Case("jax.interpreters.xla.DeviceArray", "result = isinstance(X, jax.interpreters.xla.DeviceArray)", "", "True"),
    Case(
        "jax.interpreters.xla.Device", "result = isinstance(jax.devices()[0], jax.interpreters.xla.Device)", "", "True"
    ),
    Case("jax.interpreters.xla.device_put", "result = jax.interpreters.xla.device_put(X)", "", "X"),
    Case(
        "jax.random.KeyArray",
        "def first_bits(key, kind=jax.random.KeyArray):\n"
        "    assert isinstance(key, kind)\n"
        "    return jax.random.bits(key)\n"
        "result = first_bits(jax.random.key(0))",
        "result = first_bits(jax.random.key(0))",
        "jax.random.bits(jax.random.key(0))",
    ),
    Case("jax.random.PRNGKeyArray", "result = isinstance(jax.random.key(0), jax.random.PRNGKeyArray)", "", "True"),
    Case(
        "jax.abstract_arrays.ShapedArray",
        "from jax.abstract_arrays import ShapedArray\nresult = ShapedArray((2,), jnp.float32).shape",
        "result = ShapedArray((2,), jnp.float32).shape",
        "(2,)",
    ),
    Case("jax.abstract_arrays", "import jax.abstract_arrays"),
    Case(
        "jax.xla_computation",
        "lowered = jax.xla_computation(jnp.sin)(X)",
        "result = 'sine' in lowered.as_text()",
        "True",
    ),
    Case("jax.ops.index_update", *fn("jax.ops.index_update(x, 1, 5.0)"), "X.at[1].set(5.0)"),
    Case("jax.ops.index_add", *fn("jax.ops.index_add(x, 1, 5.0)"), "X.at[1].add(5.0)"),
    Case("jax.ops.index_mul", *fn("jax.ops.index_mul(x, 1, 5.0)"), "X.at[1].multiply(5.0)"),
    Case("jax.ops.index_min", *fn("jax.ops.index_min(x, 2, 0.5)"), "X.at[2].min(0.5)"),
    Case("jax.ops.index_max", *fn("jax.ops.index_max(x, 0, 0.5)"), "X.at[0].max(0.5)"),
    Case("jax.lax.tie_in", *fn("jax.lax.tie_in(x, x + 1)"), "X + 1"),
    Case(
        "jax.random.shuffle",
        "result = jax.random.shuffle(jax.random.key(0), X)",
        "",
        "jax.random.permutation(jax.random.key(0), X, independent=True)",
    ),
    Case("jax.nn.normalize", *fn("jax.nn.normalize(x)"), "jax.nn.standardize(X)"),
    Case("jax.lax.zeros_like_array", *fn("jax.lax.zeros_like_array(x)"), "jnp.zeros_like(X)"),
    Case(
        "jax.scipy.special.sph_harm",
        "import jax.scipy.special\nresult = jax.scipy.special.sph_harm(jnp.array([0]), jnp.array([1]), X[:1], X[:1])",
    ),
    Case("jax.device_put_replicated", "result = jax.device_put_replicated(X, jax.devices())"),
    Case("jax.device_put_sharded", "result = jax.device_put_sharded([X], jax.devices()[:1])"),
    Case(
        "jax.experimental.optimizers",
        "from jax.experimental import optimizers\ninit, update, get_params = optimizers.sgd(0.1)",
        "init, update, get_params = optimizers.sgd(0.1)\nresult = get_params(init(X))",
        "X",
    ),
    Case(
        "jax.experimental.stax",
        "import jax.experimental.stax as stax\ninit, apply = stax.Relu",
        "init, apply = stax.Relu\nresult = apply((), X - 1)",
        "jax.nn.relu(X - 1)",
    ),
    Case(
        "jax.experimental.maps.Mesh",
        "from jax.experimental.maps import Mesh\nresult = Mesh(np.array(jax.devices()[:1]), ('x',)).shape['x']",
        "result = Mesh(np.array(jax.devices()[:1]), ('x',)).shape['x']",
        "1",
    ),
    Case("jax.experimental.maps.xmap", "from jax.experimental.maps import xmap"),
    Case("jax.experimental.maps", "import jax.experimental.maps"),
    Case("jax.experimental.host_callback.id_print", *fn("jax.experimental.host_callback.id_print(x)")),
    Case("jax.experimental.host_callback.id_tap", *fn("jax.experimental.host_callback.id_tap(print, x)")),
    Case("jax.experimental.host_callback.call", *fn("jax.experimental.host_callback.call(np.sin, x)")),
    Case("jax.experimental.host_callback", "import jax.experimental.host_callback as hcb"),
]


def test_every_entry_has_a_case():
    assert sorted(c.old for c in CASES) == sorted(MOVED)


def diagnosed_cell(cell: str):
    ns = namespace(X=X)
    error = run(cell, ns)
    assert error is not None, f"expected the cell to fail:\n{cell}"
    return doctor.diagnose(error), ns, error


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.old)
def test_each_old_name_is_recognised_and_its_fix_runs(case):
    if not gone_here(case.old):
        pytest.skip(f"{case.old} still exists in JAX {jax.__version__}")
    found, ns, error = diagnosed_cell(case.cell)
    assert found is not None, f"{type(error).__name__}: {error}"
    assert found.pitfall == "moved-name"
    entry = MOVED[case.old]
    assert entry.shown in found.explanation
    if case.expected is None:  # no rename does it: the fix is words, naming the new spelling
        assert found.fix == "" and entry.new in found.fix_note
        return
    assert found.fix, found
    fixed = run(found.fix, ns)
    assert fixed is None, f"the fix failed: {type(fixed).__name__}: {fixed}\n{found.fix}"
    if case.after:
        again = run(case.after, ns)
        assert again is None, f"after the fix: {type(again).__name__}: {again}\n{found.fix}"
    expected = eval(case.expected, namespace(X=X))
    np.testing.assert_allclose(np.asarray(ns["result"]), np.asarray(expected), rtol=1e-6)


def test_the_fix_is_the_users_function_with_the_new_spelling():
    found, _, _ = diagnosed_cell(
        "@jax.jit\ndef policy(obs, w):\n    logits = obs @ w\n    return jnp.softmax(logits)\nresult = policy(X, jnp.eye(3))"
    )
    assert found.pitfall == "moved-name" and found.where.line == 4
    assert found.fix == textwrap.dedent("""\
        @jax.jit
        def policy(obs, w):
            logits = obs @ w
            return jax.nn.softmax(logits)""")
    assert "never part of `jax.numpy`" in found.explanation


def test_the_users_own_names_are_used_and_a_missing_import_is_added():
    ns = {"numpy_jax": jnp, "X": X}  # no `jax` in the namespace: the fix imports what it names
    error = run("result = numpy_jax.product(X + 1)", ns)
    found = doctor.diagnose(error)
    assert found.fix == "result = numpy_jax.prod(X + 1)"
    error = run("result = numpy_jax.softmax(X)", ns)
    found = doctor.diagnose(error)
    assert found.fix == "import jax.nn\n\nresult = jax.nn.softmax(X)"
    assert run(found.fix, ns) is None
    np.testing.assert_allclose(ns["result"], jax.nn.softmax(X))


def test_an_import_of_several_names_keeps_the_others():
    found, ns, _ = diagnosed_cell("from jax import jit, tree_map as tm")
    assert found.pitfall == "moved-name"
    assert found.fix == "from jax import jit\nfrom jax.tree import map as tm"
    assert run(found.fix, ns) is None and ns["tm"] is jax.tree.map


def test_the_history_comes_from_the_table():
    found, _, _ = diagnosed_cell("result = jax.tree_map(lambda a: a, [X])")
    assert "JAX 0.4.26 deprecated it and JAX 0.6.0 removed it" in found.explanation


@pytest.mark.parametrize(
    "cell",
    [
        "result = jnp.no_such_function(X)",  # not in the table
        "result = X.softmax()",  # an array's attribute, not a moved name
        "import no_such_module",
        "from jax import no_such_name",
        "class Box:\n    pass\nresult = Box().tree_map",
    ],
)
def test_other_attribute_and_import_errors_get_no_diagnosis(cell):
    found, _, error = diagnosed_cell(cell)
    assert found is None, (error, found)


def test_a_call_with_keywords_is_named_but_not_rewritten():
    found, _, _ = diagnosed_cell("result = jax.ops.index_update(X, 0, y=5.0)")
    assert found.pitfall == "moved-name" and found.fix == "" and "x.at[idx].set(y)" in found.explanation
