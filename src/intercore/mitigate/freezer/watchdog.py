"""A Python client of ic-watchdog (docs/native-contract.md, "Watchdog").

A process that creates cgroups for its own lifetime (the protection experiment) starts a
watchdog first and tells it, before each root exists, which trees it owns. If the process
is killed in any phase, SIGKILL included, the watchdog (a process of its own, in its own
session, outranking it) sees its end of the channel close, thaws and empties those trees and
removes them. A clean exit says `quit` first, and the watchdog leaves everything as it is.

    with Watchdog.start("experiment") as wd:
        applied = Cgroups().apply(plan, "intercore", owner=wd)
        try:
            ...
        finally:
            Cgroups().teardown(applied)

The native monitor speaks the same protocol through native/watchdog/client.h.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
from pathlib import Path

from ...base.errors import NativeError
from ...base.native import tool

REPLY_TIMEOUT_S = 5.0
_MSG_MAX = 4200


class Watchdog:
    """A running ic-watchdog whose client is this process."""

    def __init__(self, proc: subprocess.Popen, channel: socket.socket, ready: dict) -> None:
        self.proc = proc
        self._channel = channel
        self.ready = ready

    @classmethod
    def start(cls, name: str, *, avoid_cpus: tuple[int, ...] = (),
              log_fd: int | None = None) -> Watchdog:
        """Start the watchdog and wait until it is armed. `avoid_cpus`: the CPUs this
        process's dangerous work runs on (the watchdog runs elsewhere when it can)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [str(tool("ic-watchdog")), "--channel", str(theirs.fileno())]
        keep = [theirs.fileno()]
        if avoid_cpus:
            argv += ["--avoid-cpu", ",".join(map(str, avoid_cpus))]
        if log_fd is not None:
            argv += ["--log-fd", str(log_fd)]
            keep.append(log_fd)
        try:
            # Its own session: a Ctrl-C or `kill -PGID` aimed at us does not reach it. No
            # parent-death signal: it must outlive us, that is its whole point.
            proc = subprocess.Popen(argv, pass_fds=keep, start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
        finally:
            theirs.close()  # only the child may hold its end, or its death would go unseen
        wd = cls(proc, ours, {})
        try:
            first = wd._receive()
            words = first.split()
            if not words or words[0] != "ready":
                raise NativeError(f"ic-watchdog said {first!r} instead of its ready line")
            wd.ready = {"pid": int(words[1]),
                        **{k: int(v) for k, v in (w.split("=", 1) for w in words[2:])}}
            wd._call(f"name {name}")
        except BaseException:
            wd.stop()
            raise
        return wd

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _receive(self) -> str:
        ready, _, _ = select.select([self._channel], [], [], REPLY_TIMEOUT_S)
        if not ready:
            raise NativeError(f"ic-watchdog (pid {self.pid}) did not answer within "
                              f"{REPLY_TIMEOUT_S:.0f} s")
        data = self._channel.recv(_MSG_MAX)
        if not data:
            self.proc.wait(timeout=5)
            err = self.proc.stderr.read().decode(errors="replace").strip() if self.proc.stderr \
                else ""
            raise NativeError(f"ic-watchdog (pid {self.pid}) exited with "
                              f"{self.proc.returncode}: {err}")
        return data.decode(errors="replace")

    def _call(self, message: str) -> None:
        self._channel.send(message.encode())
        answer = self._receive()
        if not answer.startswith("ok"):
            raise NativeError(f"ic-watchdog refused {message!r}: {answer.removeprefix('error ')}")

    def guard(self, directory: str | os.PathLike[str]) -> None:
        """Thaw this cgroup if we die."""
        self._call(f"guard {directory}")

    def own(self, root: Path, token: str) -> None:
        """Remove this cgroup tree if we die: every directory in it that carries `token`."""
        self._call(f"own {root} {token}")

    def disown(self, root: Path) -> None:
        self._call(f"disown {root}")

    def scratch(self, directory: Path) -> None:
        """Remove this private directory (mode 0700, ours) and its files if we die."""
        self._call(f"scratch {directory}")

    def stop(self) -> None:
        """Clean exit: the watchdog leaves everything as it is and ends."""
        if self.proc.poll() is None:
            try:
                self._call("quit")
            except (NativeError, OSError):
                pass
        self._channel.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def __enter__(self) -> Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
