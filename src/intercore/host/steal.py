"""Time the hypervisor took from the CPUs while something ran ("steal" in /proc/stat).

On a virtual machine a job can miss its deadline because its vCPU was not running at all,
whatever the task set does: a scenario's figures read differently when its CPUs lost tens of
milliseconds to other tenants. The kernel counts steal in USER_HZ ticks (10 ms at the usual
100), so a figure is exact to one tick, and `tick_ms` says how large that is."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Iterable

from ..base.parse import proc_stat_steal
from .sysfs import read_text

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def read_steal(root: Path = Path("/")) -> dict[int, int]:
    """Steal ticks per CPU now; empty where /proc/stat is unreadable or has no steal field."""
    return proc_stat_steal(read_text(root / "proc/stat") or "")


class StolenTime:
    """`with StolenTime(cpus) as stolen:` ... `stolen.ms` is {cpu: milliseconds taken by the
    hypervisor from that CPU during the block}, or None where the host does not count steal
    for one of them (the figure is then unknown, not zero)."""

    def __init__(self, cpus: Iterable[int], root: Path = Path("/")) -> None:
        self.cpus = tuple(sorted(set(cpus)))
        self.root = root
        self.ms: dict[int, float] | None = None
        self._start: dict[int, int] = {}

    def __enter__(self) -> StolenTime:
        self._start = read_steal(self.root)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        end = read_steal(self.root)
        if all(c in self._start and c in end for c in self.cpus):
            self.ms = {c: (end[c] - self._start[c]) * TICK_MS for c in self.cpus}
