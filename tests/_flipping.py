"""A host whose interference comes and goes on a timer: a test aggressor switched on and off.

The real host moves its two vCPUs between a shared and separate caches every few tens of
seconds, out of anyone's control; tests need the same behaviour on a timer, with effects
strong enough to see in a few seconds and independent of what the real host does meanwhile.

The test aggressor is `ic-periodic ... aggr bw` on the victim's own CPU at a SCHED_FIFO
priority above the victim's: every quarter millisecond it preempts the victim and writes a few
MiB, so a victim sized to its private cache refills it after every job (about 1.7x here).
It is used where the code under test expects an aggressor (a `cmd:` member of an aggressor
set, the canary's thrasher, a task set's noise task); the harness pauses and resumes it with
SIGSTOP/SIGCONT as it does any external stressor. The timer switches it off by freezing its
cgroup (cgroup v2 `cgroup.freeze`), which is independent of those signals: off, no block sees
interference ("not-shared"); on, every interfered repetition does ("shared").

A periodic task must run its jobs to end its block, so for task sets (`move_to`) the timer
moves the test aggressor to another CPU instead, where its writes stay out of the victim's
private cache (a few per cent through the shared cache remain) - which is what the real host
does when it separates the vCPUs.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from intercore.base.native import tool

ON, OFF = "on", "off"
MARK = "flipping-host"
def _cgroup2_root() -> Path | None:
    """Where cgroup v2 is mounted (the whole tree, or `unified` on a hybrid host)."""
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    except OSError:
        pass
    return None


CGROUP_ROOT = _cgroup2_root()
_SIGTERM_BIT = 1 << (15 - 1)


def aggressor_argv(cpu: int, size: int, period: str = "250us", name: str = MARK
                   ) -> tuple[str, ...]:
    """The test aggressor's command line (its --name marks it for the timer)."""
    return (str(tool("ic-periodic")), "--name", name, "--period", period, "--work",
            "passes:1", "--jobs", "10000000", "--rt-priority", "2", "--cpu", str(cpu),
            "aggr", "bw", "--op", "write", "--size", str(size))


def usable() -> str | None:
    """Why the simulation cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (SCHED_FIFO and a cgroup of its own)"
    if CGROUP_ROOT is None or not (CGROUP_ROOT / "cgroup.procs").exists():
        return "needs a cgroup v2 hierarchy (cgroup.freeze)"
    return None


def _marked_descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.startswith(MARK.encode()) for a in argv):
                out.append(child)
    return out


def _terminating(pid: int) -> bool:
    """A SIGTERM is pending: whoever owns the aggressor is stopping it; a frozen process
    would hold that stop until the next thaw."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & _SIGTERM_BIT:
                return True
    except OSError:
        pass
    return False


class FlippingHost:
    """The timer and its log: `flips` holds (time.time(), state) at each switch. With
    `period_s` None the state never changes (a run made entirely in one state)."""

    def __init__(self, period_s: float | None, start: str = ON, *,
                 move_to: tuple[int, int] | None = None) -> None:
        """`move_to` = (on CPU, off CPU): switch by moving, not by freezing."""
        self.period_s = period_s
        self.move_to = move_to
        self.state = start
        self.flips: list[tuple[float, str]] = []
        self.cgroup = (CGROUP_ROOT or Path("/nonexistent")) / \
            f"intercore-test-flip-{os.getpid()}-{id(self)}"
        self._done = threading.Event()
        self._adopted: set[int] = set()

    def _freeze(self, on: bool) -> None:
        if self.move_to is None:
            (self.cgroup / "cgroup.freeze").write_text("1" if on else "0")
            return
        cpu = self.move_to[1 if on else 0]
        for pid in list(self._adopted):
            try:
                os.sched_setaffinity(pid, {cpu})
            except OSError:
                self._adopted.discard(pid)  # exited

    def _adopt(self) -> None:
        for pid in _marked_descendants(os.getpid()):
            if pid not in self._adopted:
                try:
                    if self.move_to is None:
                        (self.cgroup / "cgroup.procs").write_text(str(pid))
                    else:
                        os.sched_setaffinity(pid, {self.move_to[self.state == OFF]})
                except OSError:
                    continue  # exited meanwhile
                self._adopted.add(pid)

    def _loop(self) -> None:
        next_flip = time.monotonic() + (self.period_s or float("inf"))
        while not self._done.wait(0.005):
            self._adopt()
            if self.move_to is None and self.state == OFF and \
                    any(_terminating(p) for p in self._adopted):
                self._flip(ON)  # let it take its SIGTERM now
            elif time.monotonic() >= next_flip:
                self._flip(OFF if self.state == ON else ON)
            if self.period_s is not None:
                while next_flip <= time.monotonic():
                    next_flip += self.period_s

    def set(self, state: str) -> None:
        """Switch now (a test that keeps its own time: per round of a schedule)."""
        if state != self.state:
            self._flip(state)

    def _flip(self, state: str) -> None:
        self.state = state
        self._freeze(state == OFF)
        self.flips.append((time.time(), state))

    def state_over(self, start: float, end: float) -> str | None:
        """The state throughout [start, end] (time.time()), or None if it flipped within."""
        state = None
        for t, s in self.flips:
            if t <= start:
                state = s
            elif t < end:
                return None
        return state

    @contextmanager
    def running(self) -> Iterator["FlippingHost"]:
        if self.move_to is not None:
            with self._timer():
                yield self
            return
        self.cgroup.mkdir()
        with self._timer():
            yield self
        deadline = time.monotonic() + 10
        while (self.cgroup / "cgroup.procs").read_text().strip() and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        self.cgroup.rmdir()

    @contextmanager
    def _timer(self) -> Iterator[None]:
        self.flips.append((time.time(), self.state))
        self._freeze(self.state == OFF)
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._done.set()
            thread.join()
            self._freeze(False)
