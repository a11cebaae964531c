"""A critical and a best-effort cgroup v2 group for one benchmark run, under a root of
their own in the v2 mount, removed with whatever they hold (thawed, killed, emptied)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import os

from intercore.host.cgroups import read_cgroups


def host_problem() -> str | None:
    """Why this host cannot give a benchmark real cgroups to freeze, or None."""
    if os.geteuid() != 0:
        return "needs root (cgroups, the freezer, SCHED_FIFO)"
    info = read_cgroups()
    if info.freezer != "v2" or info.v2_mount is None:
        return f"needs the cgroup v2 freezer (this host: {info.freezer})"
    return None


@contextmanager
def bench_groups(name: str) -> Iterator[tuple[Path, Path]]:
    root = Path(read_cgroups().v2_mount) / name
    root.mkdir()
    made: list[Path] = []
    try:
        for sub in ("critical", "best-effort"):
            (root / sub).mkdir()
            made.append(root / sub)
        yield made[0], made[1]
    finally:
        for group in made:
            (group / "cgroup.freeze").write_text("0")
            (group / "cgroup.kill").write_text("1")
            deadline = time.monotonic() + 10
            while "populated 1" in (group / "cgroup.events").read_text() and \
                    time.monotonic() < deadline:
                time.sleep(0.01)
            group.rmdir()
        root.rmdir()
