"""Fixtures for tests that run the real native tools: host caches, CPUs, and a launcher
that guarantees no aggressor outlives its test.

The binary comes from intercore.base.native.tool(), i.e. the installed package, or the build
named by INTERCORE_BIN_DIR (e.g. build/dev-aggr/aggressors during development).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from intercore.base.parse import parse_size
from intercore.base.native import tool

SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class Caches:
    """Data-cache sizes of CPU 0 in bytes, as sysfs reports them."""

    line: int
    l1d: int
    l2: int
    llc: int


@pytest.fixture(scope="session")
def caches() -> Caches:
    sizes: dict[int, int] = {}
    line = 64
    for index in sorted((SYS_CPU / "cpu0" / "cache").glob("index*")):
        if (index / "type").read_text().strip() == "Instruction":
            continue
        level = int((index / "level").read_text())
        sizes[level] = parse_size((index / "size").read_text())
        line = int((index / "coherency_line_size").read_text())
    if 1 not in sizes:
        pytest.fail("sysfs reports no L1 data cache for cpu0")
    l2 = sizes.get(2, sizes[max(sizes)])
    return Caches(line=line, l1d=sizes[1], l2=l2, llc=sizes[max(sizes)])


@pytest.fixture(scope="session")
def cpu() -> int:
    """The CPU aggressors are pinned to: the last one this test process may use."""
    return max(os.sched_getaffinity(0))


@pytest.fixture(scope="session")
def absent_cpu() -> int:
    """A CPU number that is not online here (99 unless the host is that big)."""
    online = os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
    return next(n for n in range(99, 4096) if n not in online)


@dataclass
class Aggressor:
    """A running ic-aggr with its stdout lines collected by a thread."""

    proc: subprocess.Popen[str]
    ready: dict = field(default_factory=dict)
    _lines: queue.Queue = field(default_factory=queue.Queue)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def event(self, timeout: float) -> dict:
        """The next JSON line on stdout."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"ic-aggr pid {self.pid}: no output within {timeout} s") from None
        if line is None:
            raise AssertionError(f"ic-aggr pid {self.pid} closed stdout "
                                 f"(exit {self.proc.wait()}: {self.proc.stderr.read()})")
        return json.loads(line)

    def signal(self, sig: int) -> None:
        os.kill(self.pid, sig)


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.fixture
def spawn():
    """spawn(kind, *args) starts `ic-aggr kind args`, waits for its ready line and returns
    an Aggressor. At teardown, any aggressor still running is killed and the test fails:
    every test must stop what it starts."""
    started: list[Aggressor] = []

    def start(kind: str, *args: str, ready_timeout: float = 30.0) -> Aggressor:
        proc = subprocess.Popen([str(tool("ic-aggr")), kind, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        agg = Aggressor(proc)
        started.append(agg)
        threading.Thread(target=_pump, args=(proc.stdout, agg._lines), daemon=True).start()
        agg.ready = agg.event(ready_timeout)
        assert agg.ready["event"] == "ready", agg.ready
        return agg

    yield start

    survivors = [a.pid for a in started if a.proc.poll() is None]
    for agg in started:
        if agg.proc.poll() is None:
            agg.proc.send_signal(signal.SIGKILL)
        agg.proc.wait(timeout=10)
        agg.proc.stdout.close()
        agg.proc.stderr.close()
    assert not [a.pid for a in started if Path(f"/proc/{a.pid}").exists()], \
        "aggressor processes still exist after teardown"
    assert not survivors, f"test left aggressors running (killed now): {survivors}"

