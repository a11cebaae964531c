"""Finding intercore's native processes, for tests that must prove none survive."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
