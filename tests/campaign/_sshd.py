"""A real OpenSSH server on 127.0.0.1 for the ssh executor's tests.

Throwaway host and client keys, an authorized_keys and an sshd_config, all under the test's
tmp_path; `sshd -D -e` runs in the foreground and is stopped with every process it forked
(per-connection servers and their sessions) when the test ends. The remote side of the
executor is therefore this same machine, reached through the same protocol as a board.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


def sshd_binary() -> str | None:
    found = shutil.which("sshd")
    return found or next((p for p in SSHD_CANDIDATES if os.access(p, os.X_OK)), None)


@dataclass(frozen=True)
class Sshd:
    port: int
    user: str
    client_key: Path
    known_hosts: Path      # trusts this server's host key
    empty_config: Path     # keeps the user's ~/.ssh/config out of the tests
    log: Path
    shm: Path              # the board's /dev/shm, as seen from here

    def target(self, tmp: Path, **overrides: Any) -> dict[str, Any]:
        """A campaign `ssh:` section for this server, remote workdir under `tmp`."""
        return {"host": "127.0.0.1", "port": self.port, "user": self.user,
                "identity": str(self.client_key), "known_hosts": str(self.known_hosts),
                "config": str(self.empty_config), "workdir": str(tmp / "board"),
                **overrides}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "intercore-test",
                    "-f", str(path)], check=True, stdin=subprocess.DEVNULL)
    return (path.with_suffix(".pub")).read_text().strip()


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _wait_listening(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on port {port}: {log.read_text()}")


PRIVATE_SHM = Path(__file__).with_name("_private_shm.sh")


def _private_shm_usable() -> bool:
    return os.geteuid() == 0 and shutil.which("unshare") is not None


@contextmanager
def loopback_sshd(tmp: Path, sshd: str, extra_config: tuple[str, ...] = (),
                  private_shm: bool = False) -> Iterator[Sshd]:
    """`extra_config`: more sshd_config lines (e.g. `SetEnv PATH=...` to give the sessions
    another userland). `private_shm`: the sessions get a /dev/shm of their own (as root; the
    host's otherwise), so what the board leaves there is this test's alone to count."""
    d = tmp / "sshd"
    d.mkdir()
    d.chmod(0o700)
    _keygen(d / "host_ed25519")
    client_pub = _keygen(d / "client_ed25519")
    (d / "authorized_keys").write_text(client_pub + "\n")
    user = pwd.getpwuid(os.getuid()).pw_name
    port = _free_port()
    host_pub = (d / "host_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    (d / "ssh_config").write_text("")
    config = d / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {d / 'host_ed25519'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PidFile none", "StrictModes no",
        "PubkeyAuthentication yes", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", f"AllowUsers {user}",
        "PermitRootLogin prohibit-password", "PrintMotd no", "PrintLastLog no",
        "MaxSessions 50", "LogLevel VERBOSE", *extra_config, "",
    ]))
    if os.geteuid() == 0:
        # sshd refuses to start as root without its privilege-separation directory, which
        # the distribution's service unit would create at boot.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = d / "sshd.log"
    argv = [sshd, "-D", "-e", "-f", str(config)]
    private = private_shm and _private_shm_usable()
    if private:
        argv = ["unshare", "--mount", "--propagation", "private", "sh", str(PRIVATE_SHM), *argv]
    with open(log, "wb") as logf:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                start_new_session=True)
    try:
        _wait_listening(port, proc, log)
        # unshare and sh exec into sshd, so its pid is proc's: its root shows its mounts.
        shm = Path(f"/proc/{proc.pid}/root/dev/shm") if private else Path("/dev/shm")
        yield Sshd(port, user, d / "client_ed25519", d / "known_hosts", d / "ssh_config", log,
                   shm)
    finally:
        for pid in [*_descendants(proc.pid), proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)
