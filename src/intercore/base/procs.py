"""Native tool processes: spawn, read their JSON lines, and never leave one behind.

Every child gets PR_SET_PDEATHSIG(SIGKILL), so a harness killed with SIGKILL takes its
aggressors and victim with it; a `ProcessGroup` stops the rest on any exit path.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import re
import select
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .errors import InputError, NativeError
from .native import tool
from .stopping import at_exit, raise_if_dropped

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

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

    # What the group's close sends it: SIGTERM lets a tool undo what it did (thaw, restore);
    # a tool with nothing to undo gets SIGKILL, so a stop does not wait for it to finish
    # work whose result is thrown away (ic-profile writes out every sample first: 2 s).
    stop_signal: int = signal.SIGTERM

    def __init__(self, name: str, argv: list[str], proc: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.argv = argv
        self.proc = proc
        self.lines: list[dict] = []
        self._buf = b""
        assert proc.stdout is not None  # started with stdout=PIPE
        self._fd = proc.stdout.fileno()

    @classmethod
    def start(cls, binary: str, args: list[str], *, name: str,
              stdin: bool = False, session: bool = False) -> "NativeProcess":
        """`binary`: an intercore tool by name, or a path to a program that speaks the same
        contract (a generated victim of `intercore learn dataset`). `session`: in a session
        (and process group) of its own, as a command of its own would be, e.g. for a drill
        that kills the whole group."""
        argv = [binary if "/" in binary else str(tool(binary)), *args]
        parent = os.getpid()
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            bufsize=0, start_new_session=session, preexec_fn=lambda: die_with_parent(parent))
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
            raise NativeError(
                f"{self.name} (pid {self.pid}) said nothing for {timeout:.1f}s") from None
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
            raise NativeError(
                f"{self.name} (pid {self.pid}) did not finish in {timeout:.0f}s") from None
        if self.proc.returncode != 0:
            raise NativeError(self._failure(f"exited with {self.proc.returncode}"))
        return self.lines

    def _failure(self, what: str) -> str:
        try:
            assert self.proc.stderr is not None  # started with stderr=PIPE
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


def optional_args(*options: tuple[str, object]) -> list[str]:
    """A native tool's options that are given only when set: `("--log", None)` and
    `("--mlock", False)` leave the option out, `("--mlock", True)` is the bare flag, anything
    else is `--option VALUE`."""
    args: list[str] = []
    for option, value in options:
        if value is True:
            args.append(option)
        elif value is not None and value is not False:
            args += [option, str(value)]
    return args


def from_event(cls: type[T], event: dict, tool: str) -> T:
    """A data class from one JSON line of a native tool; a missing field breaks the contract."""
    names = [f.name for f in dataclasses.fields(cls)]
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in event]
    if missing:
        raise NativeError(
            f"{tool}: {event.get('event')!r} line lacks {', '.join(missing)}: {event}")
    return cls(**{n: event[n] for n in names if n in event})


def one_event(lines: list[dict], event: str, tool: str) -> dict:
    """The one `event` line among a tool's output lines (its stats, its summary)."""
    found = [e for e in lines if e.get("event") == event]
    if len(found) != 1:
        raise NativeError(f"{tool}: expected one {event} line, got {len(found)}")
    return found[0]


def read_jsonl(path: str | Path, cls: type[T], tool: str, *, growing: bool = False
               ) -> list[T]:
    """Every line of a JSON-lines file a native tool wrote (a --log), in file order; of a
    log the tool is still writing (`growing`), the lines it has ended."""
    text = Path(path).read_text()
    if growing:
        text = text[:text.rfind("\n") + 1]
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise NativeError(f"{path}:{number}: not a JSON line: {line[:200]!r}") from None
        entries.append(from_event(cls, event, f"{tool} {path}:{number}"))
    return entries


class ReadyTool:
    """A native tool started for a spec (one with `argv()`), owned by a ProcessGroup and
    handed back once it has printed its ready line: the runner, the monitor, the regulator
    and the gang scheduler alike."""

    def __init__(self, spec, process: NativeProcess, ready: dict) -> None:
        self.spec = spec
        self.process = process
        self.ready = ready

    @classmethod
    def _launch(cls, spec, group: ProcessGroup, binary: str, args: list[str], *, name: str,
                ready_timeout: float, stdin: bool = False, session: bool = False,
                stop_signal: int = signal.SIGTERM):
        process = NativeProcess.start(binary, args, name=name, stdin=stdin, session=session)
        process.stop_signal = stop_signal  # before it is ready: a stop may come meanwhile
        group.add(process)
        return cls(spec, process, process.expect("ready", ready_timeout))

    @property
    def pid(self) -> int:
        return self.process.pid


RESEND_S = 0.2


class ProcessGroup:
    """Owns the children of one measurement; `close()` leaves none running."""

    def __init__(self) -> None:
        self.members: list[NativeProcess] = []
        self.sessions: list[subprocess.Popen] = []

    def add(self, p: NativeProcess) -> NativeProcess:
        self.members.append(p)
        raise_if_dropped()  # a stop that came while p was starting: p is ours to stop now
        return p

    def adopt(self, session_leader: subprocess.Popen) -> None:
        """A foreign command started in its own session: its whole group is ours to stop."""
        self.sessions.append(session_leader)
        raise_if_dropped()

    def close(self) -> None:
        for leader in self.sessions:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(leader.pid, sig)
                except ProcessLookupError:
                    pass
            leader.wait()
        start = time.monotonic()
        # Signalled twice: one that lands between a child's fork and its exec meets Python's
        # handler, copied into the child, which only notes it; the child would run on until
        # it is killed at the deadline (2 s late). The tools' own handlers take it again.
        for resend_at in (start, start + RESEND_S):
            for p in self.members:
                try:
                    p.proc.wait(timeout=max(0.0, resend_at - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            for p in self.members:
                if p.proc.poll() is None:
                    p.proc.send_signal(signal.SIGCONT)  # a stopped spinner must see it
                    p.proc.send_signal(p.stop_signal)
        for p in self.members:
            try:
                p.proc.wait(timeout=max(0.0, start + 2.0 - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            p.kill()

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---- shared-memory files -----------------------------------------------------------------------
#
# Control and notification blocks are files that a native tool creates and we map. Under a
# predictable name in a world-writable directory, anyone could plant a symbolic link there
# and have a root run overwrite what it points at. So each one gets a private directory of
# its own (mkdtemp: mode 0700, an unguessable name), the native tools create the file with
# O_CREAT|O_EXCL|O_NOFOLLOW, and we open it with O_NOFOLLOW. Unlinking the file (callers do
# as soon as both sides have it mapped) removes its directory too, so a process killed after
# that leaves nothing; one killed before leaves a directory that the next intercore process
# removes, and a normal exit removes whatever is left.

_PRIVATE = re.compile(r"^intercore-(\d+)-[a-z0-9_]{8}$")
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


def _shm_base() -> Path:
    return Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


def _remove_private(path: Path) -> None:
    """Remove a private directory and the files in it, following no link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        for entry in os.scandir(fd):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.name, dir_fd=fd)
        os.rmdir(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _sweep_stale(base: Path) -> None:
    """Private directories of intercore processes that died without removing theirs."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        match = _PRIVATE.match(entry.name)
        if not match or _alive(int(match.group(1))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and \
                stat.S_IMODE(st.st_mode) == 0o700:
            _remove_private(Path(entry.path))


_swept_by: int | None = None  # the pid that swept: once per process


class SharedFile(type(Path())):  # type: ignore[misc]  # PosixPath: Path itself cannot be subclassed on 3.11
    """The path of one shared block; unlink() also removes its private directory."""

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            super().unlink(missing_ok=missing_ok)
        finally:
            try:
                os.rmdir(self.parent)
            except OSError:
                pass


def shm_path(tag: str) -> SharedFile:
    """A fresh name for one shared block, alone in a private directory. The native tool
    creates the file; the caller unlinks it once both sides have it mapped."""
    global _swept_by
    if not _TAG.match(tag):
        raise ValueError(f"not a file name: {tag!r}")
    base = _shm_base()
    if _swept_by != os.getpid():
        _sweep_stale(base)
        _swept_by = os.getpid()
    directory = Path(tempfile.mkdtemp(prefix=f"intercore-{os.getpid()}-", dir=base))
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # a forked child leaves its parent's directory alone
            _remove_private(directory)
    at_exit(remove)
    return SharedFile(directory / tag)
