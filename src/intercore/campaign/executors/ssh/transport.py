"""The ssh transport: the campaign's `ssh:` section and one connection to the board.

Everything goes through the system OpenSSH client. One ControlMaster connection per executor
carries every command, so a command costs one multiplexed session, not a new TCP connection
and key exchange. Host keys are checked against known_hosts; an unknown key is refused unless
the campaign explicitly accepts a new key on first use, and a changed key is always refused.
Every ssh command line ends its options with `--`, and a host that ssh could still read as
an option (a leading `-`) is refused when the section is read.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ....base.errors import HostUnsupported, InputError, NativeError
from ....base.procs import die_with_parent

DEFAULT_WORKDIR = ".intercore"
CONNECT_TIMEOUT_S = 15
COMMAND_TIMEOUT_S = 120.0


def check_host(host: str) -> None:
    """ValueError unless `host` can only be read as a destination (a name, an address or an
    ssh_config alias): never as an option, never split into several words."""
    if not host:
        raise ValueError("the board's host name or address is required")
    if host.startswith("-"):
        raise ValueError(f"{host!r} begins with '-', which ssh would read as an option")
    if any(c.isspace() or not c.isprintable() for c in host):
        raise ValueError(f"{host!r} holds whitespace or control characters")


@dataclass(frozen=True)
class SshTarget:
    """The campaign file's `ssh:` section. Paths are local except `workdir`, which lives on
    the board (relative paths start in the remote user's home directory)."""

    host: str
    user: str | None = None
    port: int | None = None
    identity: Path | None = None
    workdir: str = DEFAULT_WORKDIR
    bin_dir: Path | None = None       # native tools built for the board; default: this host's
    known_hosts: Path | None = None   # default: ssh's own (~/.ssh/known_hosts)
    accept_new_host_key: bool = False  # trust an unknown key on first use (never a changed one)
    config: Path | None = None        # an ssh_config file instead of ~/.ssh/config

    @classmethod
    def from_mapping(cls, section: Mapping[str, Any]) -> SshTarget:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(known))})", field="ssh")
        try:
            check_host(str(section.get("host") or ""))
        except ValueError as exc:
            raise InputError(str(exc), field="ssh.host") from None
        values = dict(section)
        for key in ("identity", "bin_dir", "known_hosts", "config"):
            if values.get(key) is not None:
                values[key] = Path(values[key]).expanduser()
        if values.get("port") is not None:
            port = values["port"]
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise InputError(f"must be a TCP port number, got {port!r}", field="ssh.port")
        if not isinstance(values.get("accept_new_host_key", False), bool):
            raise InputError("must be true or false", field="ssh.accept_new_host_key")
        workdir = str(values.get("workdir") or DEFAULT_WORKDIR)
        values["workdir"] = _remote_path(workdir)
        return cls(**values)

    @property
    def label(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def _remote_path(path: str) -> str:
    """A workdir the remote shell can take quoted: `~/x` becomes `x` (ssh starts in home)."""
    if path in ("~", "~/"):
        return "."
    return path.removeprefix("~/")


def quoted(args: list[str]) -> str:
    """One command line for the remote shell, each argument taken literally."""
    return " ".join(shlex.quote(a) for a in args)


def _failure(target: SshTarget, stderr: str) -> Exception:
    """What an ssh exit status 255 means, from the client's stderr."""
    text = stderr.strip()
    if "Host key verification failed" in text or "host key is known" in text \
            or "IDENTIFICATION HAS CHANGED" in text:
        port = f"-p {target.port} " if target.port else ""
        return InputError(
            f"{target.label}: host key not trusted ({text.splitlines()[-1] if text else ''}). "
            f"Check the board's key fingerprint, then add it to known_hosts "
            f"(`ssh-keyscan {port}{target.host} >> ~/.ssh/known_hosts`), or set "
            "`accept_new_host_key: true` in the campaign's ssh section to trust an unknown "
            "key on first use (a changed key is always refused)", field="ssh")
    if "Permission denied" in text:
        return InputError(f"{target.label}: authentication refused ({text}); give the key with "
                          "`identity:` and add its .pub to the board's authorized_keys",
                          field="ssh")
    return NativeError(f"ssh to {target.label} failed: {text or 'no message'}")


def _unreachable(target: SshTarget, stderr: str) -> Exception:
    """Why the first connection failed: a name that resolves to nothing is the campaign's
    error (exit 2, at its host), a board that does not answer is one this host cannot use
    now (exit 3); neither is a failing tool (exit 1)."""
    failure = _failure(target, stderr)
    if not isinstance(failure, NativeError):
        return failure
    text = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
    if "Could not resolve hostname" in text:
        return InputError(f"{target.label}: no such host ({text})", field="executor.host")
    return HostUnsupported(f"the board {target.label} cannot be reached over ssh ({text})")


class Connection:
    """One ControlMaster connection; every command runs as a session multiplexed over it."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._dir = Path(tempfile.mkdtemp(prefix="ic-ssh-"))
        self._master: subprocess.Popen | None = None

    def _options(self) -> list[str]:
        t = self.target
        opts = ["-o", "BatchMode=yes",
                "-o", f"StrictHostKeyChecking={'accept-new' if t.accept_new_host_key else 'yes'}",
                "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
                "-o", f"ControlPath={self._dir / 'master'}", "-o", "LogLevel=ERROR"]
        if t.config is not None:
            opts += ["-F", str(t.config)]
        if t.known_hosts is not None:
            opts += ["-o", f'UserKnownHostsFile="{t.known_hosts}"']
        if t.identity is not None:
            opts += ["-i", str(t.identity), "-o", "IdentitiesOnly=yes"]
        if t.port is not None:
            opts += ["-p", str(t.port)]
        if t.user:
            opts += ["-l", t.user]
        return opts

    def _ssh(self, *options: str, command: str | None = None) -> list[str]:
        """The ssh argv: options, `--`, the destination, then the remote command if any."""
        tail = [] if command is None else [command]
        return ["ssh", *self._options(), *options, "--", self.target.host, *tail]

    def open(self) -> None:
        if shutil.which("ssh") is None:
            raise HostUnsupported("the ssh executor needs the OpenSSH client (`ssh`) on this "
                                  "host: install openssh-client")
        parent = os.getpid()
        # PR_SET_PDEATHSIG follows the thread that forks: open the connection from the
        # thread that outlives the runs (the runner's), so the master dies with the process.
        self._master = subprocess.Popen(
            self._ssh("-M", "-N", "-o", "ControlPersist=no"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=lambda: die_with_parent(parent))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 30
        while not (self._dir / "master").exists():
            if self._master.poll() is not None:
                assert self._master.stderr is not None  # started with stderr=PIPE
                err = self._master.stderr.read().decode(errors="replace")
                self._master = None
                raise _unreachable(self.target, err)
            if time.monotonic() > deadline:
                self.close()
                raise NativeError(f"ssh to {self.target.label}: no connection after "
                                  f"{CONNECT_TIMEOUT_S + 30}s")
            time.sleep(0.02)

    def argv(self, command: str) -> list[str]:
        """The ssh command line that runs `command` (one string for the remote shell) in a
        session over the master connection."""
        return self._ssh("-o", "ControlMaster=no", command=command)

    def run(self, command: str, *, stdin: bytes | None = None,
            timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(self.argv(command), input=stdin, capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise NativeError(f"ssh to {self.target.label}: `{command[:80]}` did not finish "
                              f"in {timeout:.0f}s") from None

    def check(self, command: str, what: str, **kw) -> str:
        done = self.run(command, **kw)
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip()
            if done.returncode == 255:
                raise _failure(self.target, err)
            raise NativeError(f"{self.target.label}: {what} failed "
                              f"(exit {done.returncode}): {err}")
        return done.stdout.decode(errors="replace")

    def session(self, command: str) -> subprocess.Popen:
        """`command` running on the board with its stdin, stdout and stderr piped here; the
        ssh client dies with this process, and the board sees its session end."""
        parent = os.getpid()
        return subprocess.Popen(self.argv(command), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                preexec_fn=lambda: die_with_parent(parent))

    def close(self) -> None:
        if self._master is not None and self._master.poll() is None:
            self._master.terminate()
            try:
                self._master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._master.kill()
                self._master.wait()
        self._master = None
        shutil.rmtree(self._dir, ignore_errors=True)
