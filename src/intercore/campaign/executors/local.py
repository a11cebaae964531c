"""The `local` executor: runs on this host through the measurement core.

An interference run is exactly an `intercore measure run` of the critical workload under the
contention engine (one aggressor set): `session.resolve` checks and places it, the paired
harness runs it. A solo baseline has no engine; the harness then runs its victim against an
aggressor set with no members, so solo and interfered runs share the victim process, pinning,
priority and timing code. Every repetition of a solo run is isolated and is stored as 'iso',
each its own pair.
"""

from __future__ import annotations

import math
import platform
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...base.artefact import file_sha256
from ...host.report import fingerprint, host_report
from ...host.sysfs import kernel_release
from ...host.topology import Topology, default_placement, read_topology, validate_cpu
from ...measure.harness import paired as harness
from ...measure.harness.store import outcome_records
from ...measure.aggressors.presets import AggressorSet, Footprints
from ...measure.harness.session import Request, resolve, rt_permitted, victim_spec
from ...base.native import tool
from ...measure.regime import canary as canary_mod
from .base import GroupRequest, RunOutput, RunRequest

# The binaries a run executes; their content is part of every setup's hash.
BINARIES = ("ic-victim", "ic-aggr")
_NO_AGGRESSORS = AggressorSet("none", ())


class LocalExecutor:
    name = "local"

    def __init__(self, topo: Topology | None = None) -> None:
        self.topo = topo or read_topology()

    def describe(self) -> dict[str, Any]:
        kernel = kernel_release(Path("/"))
        return {
            "executor": self.name,
            "fingerprint": fingerprint(self.topo, kernel),  # the host row `measure` files under
            "hostname": socket.gethostname(),
            "kernel": kernel or platform.release(),
            "cpu_model": self.topo.model_name or "unknown",
            "ncpus": len(self.topo.online_cpus),
            "binaries": {name: file_sha256(tool(name)) for name in BINARIES},
        }

    def environment(self) -> dict[str, Any]:
        """What `intercore doctor` knows about this host (it drifts: never hashed)."""
        report = host_report()
        return {**report.to_dict(), "warnings": report.warnings}

    def plan(self, request: RunRequest) -> harness.Plan:
        """The harness plan of a request, checked against this host (InputError if not)."""
        if request.engine:
            return resolve(Request(request.victim, request.victim_params,
                                   aggressors=("+".join(request.engine),), runs=request.reps,
                                   victim_cpu=request.victim_cpu,
                                   aggressor_cpus=request.engine_cpus, canary=False,
                                   seed=request.seed, args=request.victim_args), self.topo)
        vcpu = default_placement(self.topo).victim if request.victim_cpu is None else \
            validate_cpu(self.topo, request.victim_cpu, "victim_cpu")
        victim = victim_spec(Request(request.victim, request.victim_params,
                                     args=request.victim_args),
                             Footprints.for_host(self.topo, vcpu))
        # Each harness pair is two repetitions; both are isolated here.
        return harness.Plan(victim, (_NO_AGGRESSORS,), math.ceil(request.reps / 2), vcpu,
                            1 if rt_permitted() else 0, 0, request.seed)

    def group_plan(self, group: GroupRequest) -> harness.Plan:
        """One harness plan for a group: every request's set in the rotation, each with its
        own number of pairs, and the running canary when the group asks for it."""
        return merged_plan(group, [self.plan(r) for r in group.requests],
                           self.topo if group.canary else None)

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        plan = self.plan(request)
        outcome = harness.run(plan, on_start=on_start)
        return to_output(outcome, solo=not request.engine)

    def run_group(self, group: GroupRequest, *, on_start: Any = None) -> dict[str, RunOutput]:
        plan = self.group_plan(group)
        return split_outcome(harness.run(plan, on_start=on_start), group)

    def close(self) -> None:
        pass


def to_output(outcome: harness.Outcome, *, solo: bool) -> RunOutput:
    """The harness outcome as store records: workload 0 is the victim."""
    workloads, samples = outcome_records(outcome)
    if solo:
        samples = [replace(s, condition="iso", aggressor_set="", pair=s.rep,
                           counters={k: v for k, v in s.counters.items()
                                     if k != "aggressor_bytes"})
                   for s in samples]
    return RunOutput(workloads, samples, outcome.started_at, outcome.finished_at)


def _labels(group: GroupRequest, plans: list[harness.Plan]) -> list[str]:
    """A set is labelled as `measure` labels it (its engine spec), a solo set by its setup;
    by setup names when two setups of the group would share a label."""
    labels = [p.sets[0].label if p.sets[0].members else name
              for name, p in zip(group.names, plans)]
    return labels if len(set(labels)) == len(labels) else list(group.names)


def merged_plan(group: GroupRequest, plans: list[harness.Plan], topo: Topology | None
                ) -> harness.Plan:
    """The group's plan from its requests' own (LocalExecutor.plan, on this host or a
    board's topology); with `topo`, the running canary on the first aggressor CPU."""
    sets = tuple(replace(p.sets[0], label=label) for p, label in zip(plans, _labels(group,
                                                                                   plans)))
    first = plans[0]
    canary = None
    if topo is not None:
        cpus = [m.cpu for s in sets for m in s.members] or default_placement(topo).aggressors
        others = [c for c in cpus if c != first.victim_cpu]
        canary = canary_mod.running_plan(topo, first.victim_cpu, others[0] if others else None)
    return replace(first, sets=sets, runs=max(p.runs for p in plans), seed=group.seed,
                   block_pairs=group.block_pairs, canary=canary,
                   set_runs=tuple(p.runs for p in plans))


def split_outcome(outcome: harness.Outcome, group: GroupRequest) -> dict[str, RunOutput]:
    """One output per setup of the group: its set's samples (by the block they were measured
    in), its aggressors, and the design it shared with the others."""
    plan = outcome.plan
    set_of_block: dict[int | None, str] = {b.index: b.aggressor_set for b in outcome.blocks}
    out = {}
    for name, request, aset in zip(group.names, group.requests, plan.sets):
        blocks = [b for b in outcome.blocks if b.aggressor_set == aset.label]
        part = replace(outcome, plan=replace(plan, sets=(aset,), set_runs=None),
                       samples=[s for s in outcome.samples
                                if set_of_block.get(s.block) == aset.label],
                       aggressor_stats={aset.label: outcome.aggressor_stats.get(aset.label,
                                                                                [])},
                       blocks=blocks)
        output = to_output(part, solo=not request.engine)
        output.design = {
            "interleaved": list(group.names), "seed": group.seed,
            "block_pairs": outcome.block_size.to_dict() if outcome.block_size else None,
            "blocks": [b.to_dict() for b in blocks],
            "regime_blocks": {r: sum(b.regime == r for b in blocks) for r in harness.REGIMES},
            "probes": [p.to_dict() for p in outcome.probes],
            "canary": outcome.canary_info or None}
        out[name] = output
    return out
