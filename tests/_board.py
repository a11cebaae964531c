"""A made-up machine for the host-dependent checks of task sets: tests that resolve a task
set against CPUs and caches they choose, not the host's."""

from __future__ import annotations

from intercore.host.topology import Cache, Cpu, Topology

KIB, MIB = 1 << 10, 1 << 20


def board(cpus: int = 4, offline: tuple[int, ...] = ()) -> Topology:
    """Private 32K L1d + 512K L2 per CPU, a 4 MiB L3 shared by all."""
    l3 = Cache(3, "Unified", 4 * MIB, 16, 4096, 64, tuple(range(cpus)))
    return Topology(cpus=tuple(
        Cpu(i, i not in offline, i, 0, () if i in offline else (
            Cache(1, "Data", 32 * KIB, 8, 64, 64, (i,)),
            Cache(2, "Unified", 512 * KIB, 8, 1024, 64, (i,)), l3))
        for i in range(cpus)), model_name="made-up", vendor=None, hypervisor=None)
