"""Finding intercore's native processes, for tests that must prove none survive."""

from __future__ import annotations

import os
import time
from pathlib import Path

from intercore.base.native import bin_dir


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _ours(pid: int) -> bool:
    """A descendant of this test process, or an orphan (adopted by init: what a test that
    kills a parent leaves behind). Native tools run by other programs on the same machine,
    such as a measurement in another terminal, are none of this suite's business."""
    me = os.getpid()
    parent = _parent(pid)
    if parent == 1:
        return True
    while parent > 1:
        if parent == me:
            return True
        parent = _parent(parent)
    return False


def native_processes() -> list[tuple[int, str]]:
    """(pid, tool) of every running intercore native tool started by this test process or
    orphaned."""
    root = bin_dir().resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = Path(os.readlink(entry / "exe"))
        except OSError:
            continue
        if exe.parent == root and _ours(int(entry.name)):
            found.append((int(entry.name), exe.name))
    return found


def wait_no_native_processes(timeout: float = 3.0) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout
    while (left := native_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def programs_running(path: Path) -> list[int]:
    """Pids whose executable is `path` (a user's program, which ic-run or the harness ran)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "exe")) == path.resolve():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
