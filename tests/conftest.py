"""Shared fixtures: no test may leave a native process behind."""

from __future__ import annotations

import os

import pytest
from _procs import wait_no_native_processes

# Store fixtures (a seeded results store) serve tests/store, tests/measure and tests/cli.
pytest_plugins = ("_store_fixtures",)


@pytest.fixture(autouse=True)
def no_stray_native_processes():
    yield
    left = wait_no_native_processes()
    for pid, _ in left:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert not left, f"native processes survived the test: {left}"
