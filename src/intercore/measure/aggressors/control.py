"""Reader/writer of an aggressor's shared control block (docs/native-contract.md, "Control block").

`ic-aggr ... --control PATH` creates a 4 KiB file holding `struct ic_ctl`
(native/common/ic_ctl.h). A controller writes the command word and waits for the state word
to follow; a monitor reads the live counters. No signals are involved, so this also works
for an aggressor whose signal disposition a supervisor changed.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
import time
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from ...base.errors import NativeError

MAGIC = 0x31435449  # "ITC1" read as a little-endian u32
VERSION = 2
SIZE = 4096


class Cmd(IntEnum):
    """Values of the command word (enum ic_ctl_cmd)."""

    RUN = 0
    PAUSE = 1
    STOP = 2


class State(IntEnum):
    """Values of the state word (enum ic_ctl_state)."""

    INIT = 0
    RUNNING = 1
    PAUSED = 2
    STOPPED = 3


# Field -> (offset, struct format). Every field is naturally aligned, and CPython's struct
# reads a little-endian field of native size on a little-endian host with one memcpy of
# that size, i.e. a single load: a counter is never seen half-updated.
_FIELDS = {
    "magic": (0, "<I"),
    "version": (4, "<I"),
    "cmd": (8, "<I"),
    "state": (12, "<I"),
    "accesses": (16, "<Q"),
    "bytes": (24, "<Q"),
    "heartbeat_ns": (32, "<Q"),
    "pid": (40, "<i"),
    "cpu": (44, "<i"),
    "stop": (48, "<I"),
}

# How often a waiting controller re-reads the state word. The aggressor reacts within one
# chunk (well under a millisecond), so this sets the latency of pause()/resume()/stop().
_POLL_S = 0.0005


@dataclass(frozen=True)
class Snapshot:
    """One reading of the block. heartbeat_ns is CLOCK_MONOTONIC (time.monotonic_ns())."""

    state: State
    cmd: Cmd
    accesses: int
    bytes: int
    heartbeat_ns: int
    pid: int
    cpu: int


class ControlBlock:
    """The control block at `path`, mapped shared, read-write.

    The aggressor initialises the block before it prints its ready line; opening it earlier
    fails with NativeError (wrong magic), as does any file that is not a control block. A
    symbolic link at `path` is never followed, and only a regular file of our own is mapped.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise NativeError(f"{self.path}: cannot open the control block: "
                              f"{exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                raise NativeError(f"{self.path}: not a control block of ours (not a regular "
                                  "file owned by this user)")
            if st.st_size < SIZE:
                raise NativeError(f"{self.path}: not an aggressor control block (too small)")
            self._map = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        magic, version = self._get("magic"), self._get("version")
        if magic != MAGIC or version != VERSION:
            self.close()
            raise NativeError(f"{self.path}: not an initialised control block "
                              f"(magic {magic:#x}, version {version}; "
                              f"want {MAGIC:#x}, {VERSION})")

    def close(self) -> None:
        self._map.close()

    def __enter__(self) -> ControlBlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, name: str) -> int:
        offset, fmt = _FIELDS[name]
        return struct.unpack_from(fmt, self._map, offset)[0]

    @property
    def state(self) -> State:
        return State(self._get("state"))

    @property
    def cmd(self) -> Cmd:
        """The command in force: STOP once the sticky stop word is set."""
        return Cmd.STOP if self._get("stop") else Cmd(self._get("cmd"))

    @property
    def accesses(self) -> int:
        return self._get("accesses")

    @property
    def bytes(self) -> int:
        return self._get("bytes")

    @property
    def heartbeat_ns(self) -> int:
        return self._get("heartbeat_ns")

    @property
    def pid(self) -> int:
        return self._get("pid")

    @property
    def cpu(self) -> int:
        return self._get("cpu")

    def snapshot(self) -> Snapshot:
        # Heartbeat first: the aggressor publishes it last (release), so the counters read
        # after it are at least as fresh as the heartbeat says.
        heartbeat = self._get("heartbeat_ns")
        return Snapshot(state=self.state, cmd=self.cmd, accesses=self._get("accesses"),
                        bytes=self._get("bytes"), heartbeat_ns=heartbeat,
                        pid=self._get("pid"), cpu=self._get("cpu"))

    def command(self, cmd: Cmd) -> None:
        """Writes the command without waiting. Python cannot compare-and-swap the command
        word, so a stop goes to the sticky stop word (which the aggressor honours whatever the
        command word says) before the command word: a later run or pause, ours or a racing
        one, can no longer undo it."""
        if cmd == Cmd.STOP:
            offset, fmt = _FIELDS["stop"]
            struct.pack_into(fmt, self._map, offset, 1)
        offset, fmt = _FIELDS["cmd"]
        struct.pack_into(fmt, self._map, offset, int(cmd))

    def pause(self, timeout: float = 1.0) -> None:
        """Pauses the aggressor (it keeps spinning on its CPU, without memory traffic)."""
        self._command_and_wait(Cmd.PAUSE, State.PAUSED, timeout)

    def resume(self, timeout: float = 1.0) -> None:
        self._command_and_wait(Cmd.RUN, State.RUNNING, timeout)

    def stop(self, timeout: float = 1.0) -> None:
        """Stops the aggressor; it then prints its stats line and exits."""
        self._command_and_wait(Cmd.STOP, State.STOPPED, timeout)

    def _command_and_wait(self, cmd: Cmd, want: State, timeout: float) -> None:
        self.command(cmd)
        deadline = time.monotonic() + timeout
        while (state := self.state) != want:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"aggressor pid {self.pid} did not reach state "
                                   f"{want.name} within {timeout} s after cmd {cmd.name} "
                                   f"(state {state.name}; control block {self.path})")
            time.sleep(_POLL_S)
