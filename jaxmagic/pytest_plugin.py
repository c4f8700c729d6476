"""jaxmagic's pytest plugin (entry point ``pytest11``): compile budgets and compile logs in tests.

* The fixture ``jax_compiles`` is a ``RecompileLog`` of the test's compilations (its fixtures'
  set-up included): ``assert jax_compiles.counts == {"step": 1}``.
* The marker ``@pytest.mark.max_compiles(N)`` fails the test when any of the user's jitted
  functions compiles more than ``N`` times; ``@pytest.mark.max_compiles(1, "step", "loss")``
  limits the budget to those functions.
* A failing test that watched its compilations (by the fixture or the marker) shows the log,
  with each compilation's causes and fixes, in a "JAX compilations" section of its report.

Nothing is imported (JAX included) until a test asks for the fixture or carries the marker.

>>> budget_of(_Marker(args=(2, "step"), kwargs={}))
(2, ('step',))
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

MARKER = "max_compiles"
SECTION = "JAX compilations"
_LOG = pytest.StashKey()


class _Marker(NamedTuple):
    args: tuple
    kwargs: dict


def budget_of(marker) -> tuple[int, tuple[str, ...]]:
    """``(N, names)`` of a ``max_compiles`` marker; a clear error for anything else.

    >>> budget_of(_Marker(args=(0,), kwargs={"functions": ["f"]}))
    (0, ('f',))
    """
    args, kwargs = tuple(marker.args), dict(marker.kwargs)
    limit = kwargs.pop("max", None) if not args else args[0]
    names = tuple(args[1:]) + tuple(kwargs.pop("functions", ()))
    if kwargs or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} takes a non-negative whole number and optionally function names, "
            f"e.g. @pytest.mark.{MARKER}(1) or @pytest.mark.{MARKER}(1, 'step'); got {marker.args!r} {marker.kwargs!r}"
        )
    if not all(isinstance(name, str) and name for name in names):
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER}: function names are strings, e.g. @pytest.mark.{MARKER}(1, 'step')"
        )
    return limit, names


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n, *functions): fail when a jitted function (of those named) compiles more than n times"
    )


def _wants_log(item) -> bool:
    return item.get_closest_marker(MARKER) is not None or "jax_compiles" in getattr(item, "fixturenames", ())


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if _wants_log(item):
        if item.get_closest_marker(MARKER) is not None:
            budget_of(item.get_closest_marker(MARKER))
        from jaxmagic.recompiles.log import RecompileLog

        item.stash[_LOG] = RecompileLog(scope=f"test {item.name}").start()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    marker = item.get_closest_marker(MARKER)
    log = item.stash.get(_LOG, None)
    if marker is None or log is None:
        return result
    limit, names = budget_of(marker)
    from jaxmagic.recompiles.budget import CompileBudgetExceeded
    from jaxmagic.recompiles.log import matches

    for function, count in log.counts.items():
        if count > limit and (not names or matches(function, names)):
            __tracebackhide__ = True
            events = [e for e in log.events if e.function == function]
            raise CompileBudgetExceeded(function, count, limit, events)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        log = item.stash.get(_LOG, None)
        if log is not None:
            log.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    log = item.stash.get(_LOG, None)
    if log is not None and report.failed and log.total:
        report.sections.append((SECTION, log.to_text()))
    return report


@pytest.fixture
def jax_compiles(request):
    """A ``RecompileLog`` of the test's compilations: ``counts``, ``events`` with their causes.

    >>> jax_compiles.__name__
    'jax_compiles'
    """
    log = request.node.stash.get(_LOG, None)
    if log is None:  # requested dynamically (request.getfixturevalue): start watching now
        from jaxmagic.recompiles.log import RecompileLog

        log = request.node.stash[_LOG] = RecompileLog(scope=f"test {request.node.name}").start()
    return log
