"""Native tool processes: spawn, read their JSON lines, and never leave one behind.

Every child gets PR_SET_PDEATHSIG(SIGKILL), so a harness killed with SIGKILL takes its
aggressors and victim with it; a `ProcessGroup` stops the rest on any exit path.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, NativeError
from ..native import tool

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int) -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


@dataclass
class NativeProcess:
    """A running ic-aggr / ic-victim with line-oriented JSON on stdout."""

    name: str
    argv: list[str]
    proc: subprocess.Popen
    lines: list[dict] = field(default_factory=list)

    @classmethod
    def start(cls, binary: str, args: list[str], *, name: str,
              stdin: bool = False) -> "NativeProcess":
        argv = [str(tool(binary)), *args]
        parent = os.getpid()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            text=True, bufsize=1, preexec_fn=lambda: die_with_parent(parent))
        return cls(name, argv, proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read_event(self, timeout: float) -> dict:
        """Next JSON line from stdout; a dead child or a stray line is a NativeError."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise NativeError(f"{self.name} (pid {self.pid}) said nothing for {timeout:.1f}s")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait(timeout=5)
                raise NativeError(self._failure("exited early"))
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                raise NativeError(f"{self.name} printed a non-JSON line: {line.strip()!r}") from None
            self.lines.append(event)
            return event

    def expect(self, event: str, timeout: float) -> dict:
        got = self.read_event(timeout)
        if got.get("event") != event:
            raise NativeError(f"{self.name}: expected a {event!r} line, got {got}")
        return got

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 30.0) -> list[dict]:
        """Wait for exit and return the remaining JSON lines; non-zero exit raises."""
        out, err = self.proc.communicate(timeout=timeout)
        for line in out.splitlines():
            if line.strip():
                self.lines.append(json.loads(line))
        if self.proc.returncode != 0:
            raise NativeError(self._failure(f"exited with {self.proc.returncode}", err))
        return self.lines

    def _failure(self, what: str, err: str | None = None) -> str:
        if err is None and self.proc.stderr is not None:
            try:
                err = self.proc.stderr.read()
            except ValueError:
                err = ""
        msg = f"{self.name} (pid {self.pid}) {what}"
        code = self.proc.returncode
        detail = (err or "").strip()
        if code == 2:  # the native tool rejected its arguments: the user's input
            raise InputError(detail or msg)
        return f"{msg}: {detail}" if detail else msg

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.communicate(timeout=5)
        except (subprocess.TimeoutExpired, ValueError):
            pass


class ProcessGroup:
    """Owns the children of one measurement; `close()` leaves none running."""

    def __init__(self) -> None:
        self.members: list[NativeProcess] = []
        self.sessions: list[subprocess.Popen] = []

    def add(self, p: NativeProcess) -> NativeProcess:
        self.members.append(p)
        return p

    def adopt(self, session_leader: subprocess.Popen) -> None:
        """A foreign command started in its own session: its whole group is ours to stop."""
        self.sessions.append(session_leader)

    def close(self) -> None:
        for leader in self.sessions:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(leader.pid, sig)
                except ProcessLookupError:
                    pass
            leader.wait()
        for p in self.members:
            if p.proc.poll() is None:
                p.proc.send_signal(signal.SIGCONT)  # a stopped spinner must see its SIGTERM
                p.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        for p in self.members:
            try:
                p.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            p.kill()

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def shm_path(tag: str) -> Path:
    """A control-block file name unique to this process."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    return base / f"intercore-{os.getpid()}-{tag}"
