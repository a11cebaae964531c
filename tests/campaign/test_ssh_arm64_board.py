"""The ssh executor against an emulated 64-bit Arm board: a real sshd on 127.0.0.1 whose every
session runs where aarch64 binaries execute through qemu-user (native/cross/emulated.sh) and
`uname -m` says aarch64. The arm64 build (`make native-test-arm64`, build/arm64/bin) must pass
the executor's architecture check, be pushed, prove it runs, and measure; this host's own
build must be refused before anything is pushed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from _sshd import loopback_sshd, sshd_binary

from intercore.campaign.executors.base import RunRequest
from intercore.campaign.executors.local import BINARIES, file_sha256
from intercore.campaign.executors.ssh import SshExecutor, SshTarget
from intercore.campaign.executors.ssh.board import elf_machine
from intercore.campaign.executors.ssh.executor import board_schedule
from intercore.base.errors import HostUnsupported
from intercore.base.native import bin_dir

ROOT = Path(__file__).resolve().parents[2]
EMULATED = ROOT / "native" / "cross" / "emulated.sh"
ARM64_BIN = Path(os.environ.get("INTERCORE_ARM64_BIN_DIR", ROOT / "build" / "arm64" / "bin"))
EM_AARCH64 = 183


def _emulation_missing() -> str | None:
    if sshd_binary() is None:
        return "sshd is not installed (apt-get install openssh-server)"
    if not all(os.access(ARM64_BIN / name, os.X_OK) for name in BINARIES):
        return f"no arm64 build in {ARM64_BIN}: run `make native-test-arm64` first"
    probe = subprocess.run([str(EMULATED), "aarch64", str(ARM64_BIN / "ic-victim"), "--list"],
                           capture_output=True, text=True, check=False)
    if probe.returncode == 3 and "cannot emulate" in probe.stderr:
        return probe.stderr.strip()
    assert probe.returncode == 0, probe.stderr
    return None


@pytest.fixture(scope="module")
def arm64_build() -> Path:
    missing = _emulation_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must exercise the emulated arm64 board: {missing}")
        pytest.skip(missing)
    return ARM64_BIN


@pytest.fixture
def board(tmp_path, arm64_build):
    """The sshd of an aarch64 board: `uname -m` from a shim ahead of the real tools."""
    shims = tmp_path / "shims"
    shims.mkdir()
    real = shutil.which("uname")
    (shims / "uname").write_text(
        f'#!/bin/sh\n[ "$1" = -m ] && {{ echo aarch64; exit 0; }}\nexec {real} "$@"\n')
    (shims / "uname").chmod(0o755)
    config = (f"SetEnv PATH={shims}:/usr/local/bin:/usr/bin:/bin",
              f'ForceCommand exec {EMULATED} aarch64 /bin/sh -c "$SSH_ORIGINAL_COMMAND"')
    with loopback_sshd(tmp_path, sshd_binary(), config) as server:
        yield server


def board_processes(tmp_path: Path) -> list[int]:
    """Processes running a binary of the board's copy (qemu runs them: their exe is qemu's,
    the binary is in their command line)."""
    needle = str((tmp_path / "board" / "bin").resolve()).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_arm64_build_is_aarch64():
    if not ARM64_BIN.is_dir():
        pytest.skip(f"no arm64 build in {ARM64_BIN}")
    for name in BINARIES:
        with open(ARM64_BIN / name, "rb") as f:
            assert elf_machine(f.read(20)) == (EM_AARCH64, 64)


@pytest.mark.slow
def test_an_emulated_arm64_board_takes_the_arm64_build_and_measures(board, tmp_path,
                                                                    arm64_build):
    target = SshTarget.from_mapping(board.target(tmp_path, bin_dir=str(arm64_build)))
    ex = SshExecutor(target)
    try:
        desc = ex.describe()
        assert desc["info"]["machine"] == "aarch64"
        assert desc["binaries"] == {n: file_sha256(arm64_build / n) for n in BINARIES}
        request = RunRequest("ptrchase", ("size=64K",), engine=("bw:op=write,size=256K",),
                             reps=3, seed=4)
        out = ex.run(request)
        schedule = [(r.pair, r.condition) for r in board_schedule(ex.plan(request))]
        assert sorted(ex.pushed) == sorted(BINARIES)
    finally:
        ex.close()
    for name in BINARIES:  # the board holds the arm64 build, byte for byte
        pushed = tmp_path / "board" / "bin" / name
        assert file_sha256(pushed) == desc["binaries"][name]
        with open(pushed, "rb") as f:
            assert elf_machine(f.read(20))[0] == EM_AARCH64
    total = sorted((s for s in out.samples if s.region == 0), key=lambda s: s.rep)
    assert [(s.pair, s.condition) for s in total] == schedule
    assert all(s.wall_ns > 0 for s in total)
    victim, aggressor = out.workloads
    assert victim.stats["event"] == "end" and aggressor.stats["event"] == "stats"
    assert board_processes(tmp_path) == []


def test_this_hosts_build_is_refused_by_the_arm64_board_before_pushing(board, tmp_path):
    with open(bin_dir() / "ic-victim", "rb") as f:
        if elf_machine(f.read(20))[0] == EM_AARCH64:
            pytest.skip("this host's build is itself aarch64")
    ex = SshExecutor(SshTarget.from_mapping(board.target(tmp_path)))
    try:
        with pytest.raises(HostUnsupported, match=r"runs aarch64, but .*ic-(victim|aggr) is a "
                                                  r"64-bit x86-64 binary.*bin_dir"):
            ex.run(RunRequest("ptrchase", ("size=64K",), reps=1))
    finally:
        ex.close()
    assert not (tmp_path / "board").exists()
