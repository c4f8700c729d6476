"""jaxmagic's pytest plugin (entry point ``pytest11``): compile budgets and compile logs in tests.

* The fixture ``jax_compiles`` is a ``RecompileLog`` of the test's compilations (its fixtures'
  set-up included): ``assert jax_compiles.counts == {"step": 1}``.
* The marker ``@pytest.mark.max_compiles(N)`` fails the test when any of the user's jitted
  functions compiles more than ``N`` times; ``@pytest.mark.max_compiles(1, "step", "loss")``
  limits the budget to those functions.
* The marker ``@pytest.mark.max_collectives({"all-gather": 1}, forbid=["all-to-all"])`` fails
  the test when the programs it compiles hold more communication than that
  (``jaxmagic.expect_collectives``).
* A failing test that watched its compilations (by the fixture or the marker) shows the log,
  with each compilation's causes and fixes, in a "JAX compilations" section of its report.
* ``--jaxmagic-fingerprint=FILE`` records what XLA compiled in every test (its compile
  fingerprint, one entry per test and function) into FILE at the end of the run;
  ``--jaxmagic-compare=FILE`` compares each test with that recording and fails the test whose
  change breaks the budgets (``--jaxmagic-budget=memory=10%,collectives=forbid,compilations=forbid``
  by default; ``@pytest.mark.jaxmagic_budget("memory=25%")`` sets a test's own), naming the line.
  Under ``jax.distributed`` each process records its own file (``fp.process1.json``), for
  ``python -m jaxmagic merge``; under pytest-xdist the workers' tests are written in one file.

Nothing is imported (JAX included) until a test asks for the fixture or carries the marker.

>>> budget_of(_Marker(args=(2, "step"), kwargs={}))
(2, ('step',))
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

MARKER = "max_compiles"
BUDGET_MARKER = "jaxmagic_budget"
COLLECTIVES_MARKER = "max_collectives"
SECTION = "JAX compilations"
_LOG = pytest.StashKey()
_RECORDED = pytest.StashKey()  # test id -> its functions' fingerprints, for --jaxmagic-fingerprint
_BASELINE = pytest.StashKey()  # the fingerprint --jaxmagic-compare reads
_WORKER_VERSIONS = pytest.StashKey()  # under pytest-xdist: the versions and devices the workers ran on
_WORKER_KEY = "jaxmagic_fingerprint"  # what an xdist worker sends its controller
_COLLECTIVES = pytest.StashKey()


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


def pytest_addoption(parser) -> None:
    group = parser.getgroup("jaxmagic", "JAX compile fingerprints (jaxmagic)")
    group.addoption(
        "--jaxmagic-fingerprint",
        metavar="FILE",
        help="record what XLA compiled in each test into FILE (JSON), to compare later with --jaxmagic-compare",
    )
    group.addoption(
        "--jaxmagic-compare",
        metavar="FILE",
        help="compare each test's compiled programs with the fingerprint in FILE; fail a test that breaks the budgets",
    )
    group.addoption(
        "--jaxmagic-budget",
        default="",
        metavar="BUDGETS",
        help="what a change may do: memory=PCT (default 10%%), flops=PCT (default any), "
        "collectives=allow|forbid, compilations=allow|forbid (default forbid)",
    )


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(n, *functions): fail when a jitted function (of those named) compiles more than n times"
    )
    config.addinivalue_line(
        "markers", f"{BUDGET_MARKER}(budgets): this test's own budgets for --jaxmagic-compare, e.g. 'memory=25%'"
    )
    config.addinivalue_line(
        "markers",
        f"{COLLECTIVES_MARKER}(max_or_total, *functions, forbid=[...]): fail when the programs the test "
        "compiles hold more collectives than that",
    )
    recorded = config.getoption("jaxmagic_fingerprint", None)
    compared = config.getoption("jaxmagic_compare", None)
    if recorded is None and compared is None:
        return
    from jaxmagic.words.untrusted import safe_text

    if recorded is not None:  # checked now: a run whose fingerprint cannot be written is lost at its end
        from jaxmagic.files import OutputRefused, check_output

        try:
            check_output(recorded, inputs=[compared] if compared else [])
        except OutputRefused as exc:
            raise pytest.UsageError(safe_text(f"--jaxmagic-fingerprint: {exc}")) from None
        config.stash[_RECORDED] = {}
    if compared is not None:
        from jaxmagic.recompiles.fingerprint import Fingerprint
        from jaxmagic.recompiles.fingerprint_diff import Budgets
        from jaxmagic.recompiles.fingerprint_schema import FingerprintError

        try:
            Budgets.parse(config.getoption("jaxmagic_budget") or "")
        except ValueError as exc:
            raise pytest.UsageError(safe_text(f"--jaxmagic-budget: {exc}")) from None
        try:
            config.stash[_BASELINE] = Fingerprint.load(compared)
        except FingerprintError as exc:
            raise pytest.UsageError(safe_text(f"--jaxmagic-compare: {exc}")) from None


def _fingerprinting(config) -> bool:
    return _RECORDED in config.stash or _BASELINE in config.stash


def _wants_log(item) -> bool:
    return (
        item.get_closest_marker(MARKER) is not None
        or "jax_compiles" in getattr(item, "fixturenames", ())
        or _fingerprinting(item.config)
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    problem = None
    if _wants_log(item):
        try:
            if item.get_closest_marker(MARKER) is not None:
                budget_of(item.get_closest_marker(MARKER))
        except pytest.UsageError as exc:
            problem = exc
        if problem is None:
            from jaxmagic.recompiles.fingerprint import KEEP_EVERY_COMPILATION
            from jaxmagic.recompiles.log import DEFAULT_CAPACITY, RecompileLog

            fingerprinting = _fingerprinting(item.config)
            capacity = KEEP_EVERY_COMPILATION if fingerprinting else DEFAULT_CAPACITY
            item.stash[_LOG] = RecompileLog(
                scope=f"test {item.name}", keep_programs=fingerprinting, capacity=capacity
            ).start()
    collectives = item.get_closest_marker(COLLECTIVES_MARKER)
    if collectives is not None and problem is None:
        from jaxmagic.recompiles.collective_budget import ExpectCollectives, limits_of_marker

        try:
            limits, names = limits_of_marker(collectives.args, collectives.kwargs)
        except (TypeError, ValueError) as exc:
            problem = exc
        else:
            budget = item.stash[_COLLECTIVES] = ExpectCollectives(None, limits, more=names)
            budget.__enter__()
    result = yield  # the other plugins' setup runs either way: their teardown counts on it
    if problem is not None:
        pytest.fail(str(problem), pytrace=False)  # the message alone: nothing to see in the plugin's frames
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    marker = item.get_closest_marker(MARKER)
    log = item.stash.get(_LOG, None)
    if log is not None and _fingerprinting(item.config):
        _fingerprint_test(item, log)
    budget = item.stash.get(_COLLECTIVES, None)
    if budget is not None:
        __tracebackhide__ = True
        del item.stash[_COLLECTIVES]
        budget.__exit__(None, None, None)
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


def _fingerprint_test(item, log) -> None:
    """Record the test's fingerprint, or compare it with the baseline's entry for the same test."""
    from jaxmagic.recompiles.fingerprint import Fingerprint, fingerprint_of

    prefix = f"{item.nodeid}::"
    found = fingerprint_of(log, root=str(item.config.rootpath), prefix=prefix)
    recorded = item.config.stash.get(_RECORDED, None)
    if recorded is not None:
        recorded.update(found.functions)
    baseline = item.config.stash.get(_BASELINE, None)
    if baseline is None:
        return
    before = {name: f for name, f in baseline.functions.items() if name.startswith(prefix)}
    if not before and not found.functions:
        return
    from jaxmagic.recompiles.fingerprint_diff import Budgets, FingerprintBudgetExceeded, compare

    marker = item.get_closest_marker(BUDGET_MARKER)
    budgets = Budgets.parse(
        marker.args[0] if marker is not None and marker.args else item.config.getoption("jaxmagic_budget") or ""
    )
    if not before:
        return  # a new test: nothing recorded to compare with
    difference = compare(Fingerprint(baseline.versions, before), Fingerprint(found.versions, found.functions), budgets)
    if difference.breaches:
        __tracebackhide__ = True
        raise FingerprintBudgetExceeded(difference, item.nodeid)


def pytest_sessionfinish(session, exitstatus) -> None:
    config = session.config
    recorded = config.stash.get(_RECORDED, None)
    if recorded is None:
        return
    from jaxmagic.recompiles.fingerprint import Fingerprint, environment
    from jaxmagic.recompiles.processes import for_this_process
    from jaxmagic.words.untrusted import safe_text

    worker_output = getattr(config, "workeroutput", None)
    if worker_output is not None:  # a pytest-xdist worker: its tests go to the controller, which writes
        worker_output[_WORKER_KEY] = Fingerprint(environment(), recorded).to_json()
        return
    versions = config.stash.get(_WORKER_VERSIONS, None) or environment()
    fingerprint = Fingerprint(versions, recorded)  # under jax.distributed: one file per process
    path = for_this_process(fingerprint, config.getoption("jaxmagic_fingerprint"))
    compared = config.getoption("jaxmagic_compare", None)
    try:
        fingerprint.save(path, inputs=[compared] if compared else [])
    except (OSError, ValueError) as exc:  # the folder was checked at the start: it changed since
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        message = safe_text(
            f"jaxmagic: could not write the fingerprint {path!r}: {getattr(exc, 'strerror', None) or exc}"
        )
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = session.exitstatus or pytest.ExitCode.INTERNAL_ERROR


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist's controller, as a worker ends: the worker's recorded tests join the run's."""
    found = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    recorded = node.config.stash.get(_RECORDED, None)
    if found is None or recorded is None:
        return
    from jaxmagic.recompiles.fingerprint import Fingerprint

    fingerprint = Fingerprint.from_json(found)
    recorded.update(fingerprint.functions)
    node.config.stash.setdefault(_WORKER_VERSIONS, fingerprint.versions)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        log = item.stash.get(_LOG, None)
        if log is not None:
            log.stop()
        budget = item.stash.get(_COLLECTIVES, None)
        if budget is not None:  # the test failed before its call ended: stop watching
            del item.stash[_COLLECTIVES]
            budget.log.stop()


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
