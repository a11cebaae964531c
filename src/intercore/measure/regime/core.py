"""Core sharing: are two CPUs hardware threads of one physical core right now?

A register-only spinner beside a victim (a paused aggressor, the profiler's busy-wait
sampler, a regulator or monitor polling) moves no memory, so the paired design takes it as
harmless; on SMT siblings it takes the core's issue slots and half its buffers (issue 24: the
profiler's 10 µs sampler slowed a compute-bound matmul 1.6x). sysfs names the siblings
(topology/thread_siblings_list) where the hardware shows them; under a hypervisor every vCPU
may look like a core of its own while two of them run on one core's threads, so the core
probe measures it: register-only work timed alone and beside a register-only spinner on the
other CPU (harness.CorePlan; docs/canary.md, "Core sharing").
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from ...host.topology import Topology, core_siblings
from ..harness.paired import CORE_RULE, SAME_CORE, CorePlan, Probe, RunningCoreProbe, VictimSpec
from ..aggressors.presets import AggressorSpec
from ...base.procs import ProcessGroup

# Multiply-adds per chain in one walk of the probe's victim (ic-victim spin: four chains):
# about 0.5 ms of CPU time, long against a scheduler tick's jitter and short enough that a
# probe of up to five pairs of three-walk halves stays within a few tens of ms.
SPIN_ITERS = 400_000
# The spinner: an aggressor left paused spins on registers; 4 KiB is the least it allocates.
SPINNER_BYTES = 4096


def core_plan(aggressor_cpu: int) -> CorePlan:
    """The core probe beside a victim, with its spinner on `aggressor_cpu`."""
    victim = VictimSpec("spin", (("iters", str(SPIN_ITERS)),), name="core probe")
    spinner = AggressorSpec("bw", "read", SPINNER_BYTES, "core probe spinner",
                            cpu=aggressor_cpu)
    return CorePlan(victim, spinner)


def run_core_probe(victim_cpu: int, other_cpu: int, *, priority: int = 0,
                   seed: int = 1) -> Probe:
    """One probe, processes started and ended here (a command's start-up check)."""
    with ProcessGroup() as group:
        probe = RunningCoreProbe(core_plan(other_cpu), group, victim_cpu=victim_cpu,
                                 victim_priority=priority, aggressor_priority=priority,
                                 seed=seed, probes=1)
        try:
            seen = probe.probe(time.monotonic())
            probe.stop()
        finally:
            probe.close()
    return seen


def median_ratio(probe: Probe) -> float:
    ratios = sorted(probe.ratios)
    return ratios[len(ratios) // 2] if ratios else float("nan")


Prober = Callable[[int, int], Probe]


def core_warning(topo: Topology, own_cpu: int, victim_cpus: Iterable[int], what: str,
                 prober: Prober | None = run_core_probe) -> str | None:
    """One warning when `what` (running on `own_cpu`) shares a physical core with a victim's
    CPU: named by sysfs, or, where sysfs shows separate cores under a hypervisor, seen by the
    core probe (`prober`; None: sysfs only). None when it shares none."""
    for victim in sorted(set(victim_cpus) - {own_cpu}):
        if own_cpu in core_siblings(topo, victim):
            how = "sysfs names them hardware threads of one core (thread_siblings)"
        elif topo.hypervisor and prober is not None:
            seen = prober(victim, own_cpu)
            if seen.regime != SAME_CORE:
                continue
            how = (f"sysfs shows separate cores, but under {topo.hypervisor} a register-only "
                   f"spinner on CPU {own_cpu} slowed register-only work on CPU {victim} "
                   f"{median_ratio(seen):.2f}x (at least {CORE_RULE.at}x: one core's "
                   "threads)")
        else:
            continue
        return (f"{what} on CPU {own_cpu} shares a physical core with the victim's CPU "
                f"{victim}: {how}; its own work slows the victim through the core, not only "
                "through memory. Choose a CPU on another core")
    return None
