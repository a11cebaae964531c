"""Shared fixtures: no test may leave a native process behind."""

from __future__ import annotations

import os
import signal

import pytest
from _procs import wait_no_native_processes

# The tests stop commands with Ctrl-C as a user at a terminal does. A suite a script started in
# the background (`cmd &` in a non-interactive shell) inherits SIGINT ignored, and an ignored
# signal stays ignored across exec, so every command the tests start would ignore it too (as it
# should: such a job's Ctrl-C is not its own). Handled here, it is at its default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Store fixtures (a seeded results store) serve tests/store, tests/measure and tests/cli; the
# lanes give `make test-fast` its --fast-lane; pytester runs the lanes' own test.
pytest_plugins = ("_store_fixtures", "_lanes", "pytester")


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
