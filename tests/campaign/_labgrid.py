"""A real labgrid lab on 127.0.0.1 for the labgrid executor's tests: a coordinator, an
exporter that exports NetworkServices, and places made with `labgrid-client` as a lab's
admin would. Everything runs in the test's tmp_path and is stopped when the test ends."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import yaml


def labgrid_tool(name: str) -> str | None:
    """The labgrid command installed beside this Python (the venv), or on PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Lab:
    address: str
    log: Path

    def client(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([labgrid_tool("labgrid-client"), *args],
                              env={**os.environ, "LG_COORDINATOR": self.address},
                              capture_output=True, text=True, timeout=60, check=check)


def _wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"labgrid: {what} within {timeout:.0f}s")
        time.sleep(0.1)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def loopback_lab(tmp: Path, services: Mapping[str, Mapping[str, object]],
                 tags: Mapping[str, str]) -> Iterator[Lab]:
    """A coordinator, an exporter of one NetworkService per entry of `services` (group name
    -> NetworkService arguments), and a place per group with the same name and `tags`."""
    d = tmp / "lab"
    d.mkdir()
    port = _free_port()
    address = f"127.0.0.1:{port}"
    log = d / "lab.log"
    (d / "exporter.yaml").write_text(yaml.safe_dump(
        {group: {"NetworkService": dict(args)} for group, args in services.items()}))
    with open(log, "wb") as logf:
        coordinator = subprocess.Popen([labgrid_tool("labgrid-coordinator"), "-l", address],
                                       cwd=d, stdin=subprocess.DEVNULL, stdout=logf,
                                       stderr=logf)
        exporter = None
        try:
            _wait_for(lambda: _listening(port), "the coordinator did not listen")
            exporter = subprocess.Popen(
                [labgrid_tool("labgrid-exporter"), "-c", address, "-n", "lab",
                 "--hostname", "127.0.0.1", str(d / "exporter.yaml")],
                cwd=d, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
            lab = Lab(address, log)
            _wait_for(lambda: all(f"lab/{g}/NetworkService" in lab.client("resources").stdout
                                  for g in services), "the exporter's resources did not appear")
            for group in services:
                lab.client("-p", group, "create")
                lab.client("-p", group, "add-match", f"lab/{group}/NetworkService")
                lab.client("-p", group, "set-tags", *(f"{k}={v}" for k, v in tags.items()))
            yield lab
        finally:
            if exporter is not None:
                _stop(exporter)
            _stop(coordinator)
