"""The fast lane runs what is not marked slow and fails, by name, a test that outgrew it;
the host's load stretches the bound rather than failing the lane (tests/_lanes.py)."""

from __future__ import annotations

import _lanes
import pytest

SUITE = """
import time
import pytest

def test_quick():
    pass

def test_outgrown():
    time.sleep(0.8)

@pytest.mark.slow
def test_marked():
    time.sleep(0.8)
"""


@pytest.fixture
def suite(pytester):
    pytester.makeini("[pytest]\nmarkers =\n  slow: as in pyproject\n")
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def run(suite, monkeypatch, load, *args):
    monkeypatch.setattr(_lanes, "load_per_cpu", lambda: load)
    # The inner run has only the lanes: installed plugins (labgrid's) hold process-wide state.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return suite.runpytest_inprocess("-p", "_lanes", *args)


def test_the_fast_lane_fails_an_unmarked_test_past_its_bound_by_name(suite, monkeypatch):
    result = run(suite, monkeypatch, 0.5, "--fast-lane", "--fast-lane-bound", "0.3")
    result.assert_outcomes(passed=2, errors=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_suite.py::test_outgrown took 0.8 s, past the fast "
                                 "lane's bound of 0.3 s*mark it @pytest.mark.slow*"])
    assert "test_quick took" not in result.stdout.str()


def test_load_beyond_one_task_per_cpu_stretches_the_bound(suite, monkeypatch):
    result = run(suite, monkeypatch, 10.0, "--fast-lane", "--fast-lane-bound", "0.3")
    result.assert_outcomes(passed=2, deselected=1)


@pytest.mark.slow
def test_without_the_lane_slow_tests_run_and_nothing_is_timed(suite, monkeypatch):
    result = run(suite, monkeypatch, 0.5, "--fast-lane-bound", "0.3")
    result.assert_outcomes(passed=3)
