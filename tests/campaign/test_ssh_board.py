"""Probing the board: ELF machines, what a board executes, its topology from a snapshot."""

from __future__ import annotations

import platform

import pytest

from intercore.campaign.executors.ssh.board import BoardSnapshot, elf_machine, runs_on
from intercore.base.native import tool


def test_elf_machine_of_this_hosts_tools_runs_here():
    with open(tool("ic-victim"), "rb") as f:
        machine, bits = elf_machine(f.read(20))
    assert runs_on(platform.machine(), machine, bits) is True


def test_elf_machine_rejects_non_elf():
    with pytest.raises(ValueError):
        elf_machine(b"#!/bin/sh\necho not an executable\n")


@pytest.mark.parametrize("machine, e_machine, bits, expected", [
    ("aarch64", 183, 64, True), ("aarch64", 40, 32, True), ("armv7l", 40, 32, True),
    ("armv7l", 183, 64, False), ("x86_64", 183, 64, False), ("aarch64", 62, 64, False),
    ("x86_64", 62, 64, True), ("riscv64", 243, 64, True), ("riscv64", 243, 32, False),
    ("ppc64le", 21, 64, True), ("some-new-isa", 62, 64, None),
])
def test_runs_on(machine, e_machine, bits, expected):
    assert runs_on(machine, e_machine, bits) is expected


def test_snapshot_of_an_arm_board_gives_its_topology():
    text = "\n".join([
        "==uname", "Linux", "rpi4", "6.1.0-rpi7", "aarch64", "#1 SMP PREEMPT", "==files",
        "/sys/devices/system/cpu/online:0-3",
        *(f"/sys/devices/system/cpu/cpu{c}/topology/core_id:{c}" for c in range(4)),
        *(f"/sys/devices/system/cpu/cpu{c}/cache/index0/{k}:{v}" for c in range(4)
          for k, v in (("level", 1), ("type", "Data"), ("size", "32K"),
                       ("shared_cpu_list", c))),
        *(f"/sys/devices/system/cpu/cpu{c}/cache/index1/{k}:{v}" for c in range(4)
          for k, v in (("level", 2), ("type", "Unified"), ("size", "1024K"),
                       ("shared_cpu_list", "0-3"))),
        "/proc/cpuinfo:processor\t: 0", "/proc/cpuinfo:CPU implementer\t: 0x41",
        "/proc/cpuinfo:CPU part\t: 0xd08", "/proc/cpuinfo:",
        "/etc/shadow:must be ignored", "",
    ])
    board = BoardSnapshot.parse(text)
    assert (board.hostname, board.kernel, board.machine) == ("rpi4", "6.1.0-rpi7", "aarch64")
    assert "/etc/shadow" not in board.files
    topo = board.topology()
    assert topo.online_cpus == (0, 1, 2, 3)
    assert topo.vendor == "ARM" and topo.model_name == "Arm CPU part 0xd08"
    l2 = [c for c in topo.caches() if c.level == 2]
    assert len(l2) == 1 and l2[0].size == 1 << 20 and l2[0].shared_cpus == (0, 1, 2, 3)
