"""What a clean outcome of a magic is, for the bad-input, fuzzing and interrupt tests.

A magic may succeed, refuse with a ``UsageError`` that says what was expected, or fail with the
user's own error (shown as the user's traceback, or as the doctor's note); a ``--max`` overrun is
``RecompileLimitExceeded``. Nothing else: no internal traceback, no "bug in jaxmagic". Afterwards
the user's namespace holds what the cell defined, and JAX's configuration is what it was.
"""

from __future__ import annotations

import contextlib

import jax
from conftest import CellResult, assert_no_internals
from IPython.core.error import UsageError

OK, USAGE, USER, LIMIT = "ok", "usage", "user", "limit"
INTERNAL_FAILURE = "This is a bug in jaxmagic"


def outcome(result: CellResult) -> str:
    """``ok``, ``usage``, ``user`` or ``limit``; anything else fails the test with what was shown."""
    from jaxmagic.magics.failures import MagicFailure
    from jaxmagic.recompiles import RecompileLimitExceeded

    error = result.error
    if error is None:
        return OK
    if isinstance(error, UsageError):
        message = str(error)
        assert message.strip(), "an empty UsageError says nothing"
        assert INTERNAL_FAILURE not in message, message
        return USAGE
    if isinstance(error, MagicFailure):
        return USER
    if isinstance(error, RecompileLimitExceeded):
        return LIMIT
    raise AssertionError(
        f"not a clean outcome: {type(error).__module__}.{type(error).__name__}: {error}\n"
        f"{result.shown_traceback[-3000:]}"
    )


def assert_clean(result: CellResult) -> str:
    """The outcome is clean and nothing of jaxmagic's internals was shown; returns the outcome."""
    kind = outcome(result)
    assert_no_internals(result)
    return kind


def user_names(shell) -> set[str]:
    return {name for name in shell.user_ns if not name.startswith("_")}


class Snapshot:
    """The user's names and JAX's configuration before a cell, to compare with after it."""

    def __init__(self, shell):
        self.shell = shell
        self.names = user_names(shell)
        self.values = {name: shell.user_ns[name] for name in self.names}
        self.config = dict(jax.config.values)

    def new_names(self) -> set[str]:
        return user_names(self.shell) - self.names

    def assert_kept(self, *, defined: set[str] = frozenset(), ignore_config: tuple[str, ...] = ()) -> None:
        """Only ``defined`` is new or rebound; every other earlier name still holds its very object;
        JAX's configuration is equal (but for ``ignore_config``)."""
        assert self.new_names() == set(defined) - self.names
        missing = self.names - user_names(self.shell)
        assert not missing, f"the cell removed {missing}"
        rebound = {n for n in self.names - set(defined) if self.shell.user_ns[n] is not self.values[n]}
        assert not rebound, f"names now bound to other objects: {rebound}"
        now = dict(jax.config.values)
        changed = {k: (v, now.get(k)) for k, v in self.config.items() if k not in ignore_config and now.get(k) != v}
        assert not changed, f"JAX's configuration changed: {changed}"

    def forget_new_names(self) -> None:
        for name in self.new_names():
            self.shell.user_ns.pop(name, None)


def assert_usage_error(run, shell, cell: str, expected_words) -> str:
    """``cell`` is refused with a ``UsageError`` that contains each of ``expected_words``; nothing of
    jaxmagic's internals is shown; the namespace and JAX's configuration are kept. Returns the message."""
    before = Snapshot(shell)
    shown = run(cell)
    assert shown.usage_error is not None, f"expected a UsageError, got {shown.error!r}\n{shown.stdout}"
    for words in expected_words:
        assert words in shown.usage_error, shown.usage_error
    assert_no_internals(shown)
    before.assert_kept()
    return shown.usage_error


@contextlib.contextmanager
def defined_in_session(shell, setup: str, names: set[str]):
    """Run ``setup`` (which defines ``names``) for a module's tests; afterwards give the session back
    what it had under those names before (``jax``, ``jnp``, ...)."""
    saved = {name: shell.user_ns[name] for name in names if name in shell.user_ns}
    shell.run_cell(setup, store_history=False)
    yield
    for name in names:
        shell.user_ns.pop(name, None)
    shell.user_ns.update(saved)
