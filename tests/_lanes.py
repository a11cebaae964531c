"""The fast lane (`make test-fast`, pytest --fast-lane): every test not marked slow, and a
check that keeps the marking true. docs/testing.md says how tests are marked and why."""

from __future__ import annotations

import os

import pytest

# The fast lane fails an unmarked test that took longer than this, several times the 1 s
# from which tests are marked slow, so that only a test that outgrew the lane fails, not one
# that met a busy moment.
BOUND_S = 10.0

_SPENT = pytest.StashKey[float]()


def load_per_cpu() -> float:
    """Runnable tasks per CPU over the last minute: on a host shared with other work a test
    gets about 1/load of a CPU, so its wall time stretches by as much."""
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def pytest_addoption(parser):
    group = parser.getgroup("intercore lanes")
    group.addoption("--fast-lane", action="store_true",
                    help="run only the tests not marked slow, and fail one that takes longer "
                         "than --fast-lane-bound: it belongs in the slow lane")
    group.addoption("--fast-lane-bound", type=float, default=BOUND_S, metavar="SECONDS",
                    help=f"a fast test's setup, call and teardown together, on a host with at "
                         f"most one runnable task per CPU; scaled by the load beyond that "
                         f"(default {BOUND_S:g})")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("fast_lane"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if not item.config.getoption("fast_lane"):
        return report
    spent = item.stash.get(_SPENT, 0.0) + report.duration
    item.stash[_SPENT] = spent
    if report.when != "teardown" or not report.passed:
        return report
    load = load_per_cpu()
    bound = item.config.getoption("fast_lane_bound") * max(1.0, load)
    if spent > bound:
        # Failed at teardown: the test's own outcome stands, and the report names it.
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {spent:.1f} s, past the fast lane's bound of {bound:.1f} s "
            f"({item.config.getoption('fast_lane_bound'):g} s at load {load:.1f} per CPU): "
            f"mark it @pytest.mark.slow (docs/testing.md)")
    return report
