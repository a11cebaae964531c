"""Shared fixtures: native tools must be findable, and no test may leave a process behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from intercore.native import bin_dir


def native_processes() -> list[tuple[int, str]]:
    """PIDs of every running process whose executable is one of intercore's native tools."""
    root = bin_dir().resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = Path(os.readlink(entry / "exe"))
        except OSError:
            continue
        if exe.parent == root:
            found.append((int(entry.name), exe.name))
    return found


def wait_no_native_processes(timeout: float = 3.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while (left := native_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


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
