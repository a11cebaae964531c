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
from pathlib import Path

from ..errors import InputError, NativeError
from ..native import tool

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int) -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


class NativeProcess:
    """A running ic-aggr / ic-victim with line-oriented JSON on stdout.

    stdout is read from the raw descriptor into our own buffer: a buffered text wrapper
    would hide complete lines from select() and from communicate()."""

    def __init__(self, name: str, argv: list[str], proc: subprocess.Popen) -> None:
        self.name = name
        self.argv = argv
        self.proc = proc
        self.lines: list[dict] = []
        self._buf = b""
        self._fd = proc.stdout.fileno()

    @classmethod
    def start(cls, binary: str, args: list[str], *, name: str,
              stdin: bool = False) -> "NativeProcess":
        """`binary`: an intercore tool by name, or a path to a program that speaks the same
        contract (a generated victim of `intercore learn dataset`)."""
        argv = [binary if "/" in binary else str(tool(binary)), *args]
        parent = os.getpid()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            bufsize=0, preexec_fn=lambda: die_with_parent(parent))
        return cls(name, argv, proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _next_line(self, deadline: float | None) -> bytes | None:
        """One complete line, or None at end of file."""
        while b"\n" not in self._buf:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._fd], [], [], timeout)
            if not ready:
                continue
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _parse(self, line: bytes) -> dict:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise NativeError(f"{self.name} printed a non-JSON line: {line[:200]!r}") from None
        self.lines.append(event)
        return event

    def read_event(self, timeout: float) -> dict:
        """Next JSON line from stdout; a dead child or a stray line is a NativeError."""
        try:
            line = self._next_line(time.monotonic() + timeout)
        except TimeoutError:
            raise NativeError(f"{self.name} (pid {self.pid}) said nothing for {timeout:.1f}s") from None
        if line is None:
            self.proc.wait(timeout=5)
            raise NativeError(self._failure("exited early"))
        return self._parse(line)

    def expect(self, event: str, timeout: float) -> dict:
        got = self.read_event(timeout)
        if got.get("event") != event:
            raise NativeError(f"{self.name}: expected a {event!r} line, got {got}")
        return got

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())

    def finish(self, timeout: float = 30.0) -> list[dict]:
        """Wait for exit and return every JSON line; a non-zero exit raises."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        deadline = time.monotonic() + timeout
        try:
            while (line := self._next_line(deadline)) is not None:
                if line.strip():
                    self._parse(line)
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except (TimeoutError, subprocess.TimeoutExpired):
            raise NativeError(f"{self.name} (pid {self.pid}) did not finish in {timeout:.0f}s") from None
        if self.proc.returncode != 0:
            raise NativeError(self._failure(f"exited with {self.proc.returncode}"))
        return self.lines

    def _failure(self, what: str) -> str:
        try:
            err = self.proc.stderr.read().decode(errors="replace").strip()
        except (ValueError, OSError):
            err = ""
        msg = f"{self.name} (pid {self.pid}) {what}"
        if self.proc.returncode == 2:  # the native tool rejected its arguments: the user's input
            raise InputError(err or msg)
        return f"{msg}: {err}" if err else msg

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
