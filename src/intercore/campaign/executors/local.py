"""The `local` executor: runs on this host through the measurement core.

An interference run is exactly an `intercore measure` of the critical workload under the
contention engine (one aggressor set): `session.resolve` checks and places it, the paired
harness runs it. A solo baseline has no engine; the harness then runs its victim against an
aggressor set with no members, so solo and interfered runs share the victim process, pinning,
priority and timing code. Every repetition of a solo run is isolated and is stored as 'iso',
each its own pair.
"""

from __future__ import annotations

import hashlib
import math
import platform
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...host.report import fingerprint, host_report
from ...host.sysfs import kernel_release
from ...host.topology import Topology, default_placement, read_topology, validate_cpu
from ...measure import harness
from ...measure.catalog import parse_victim
from ...measure.persist import outcome_records
from ...measure.presets import AggressorSet, Footprints
from ...measure.session import Request, resolve, rt_permitted
from ...native import tool
from .base import RunOutput, RunRequest

# The binaries a run executes; their content is part of every setup's hash.
BINARIES = ("ic-victim", "ic-aggr")
_NO_AGGRESSORS = AggressorSet("none", ())


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
                                   seed=request.seed), self.topo)
        vcpu = default_placement(self.topo).victim if request.victim_cpu is None else \
            validate_cpu(self.topo, request.victim_cpu, "victim_cpu")
        victim = parse_victim(request.victim, list(request.victim_params),
                              Footprints.for_host(self.topo, vcpu))
        # Each harness pair is two repetitions; both are isolated here.
        return harness.Plan(victim, (_NO_AGGRESSORS,), math.ceil(request.reps / 2), vcpu,
                            1 if rt_permitted() else 0, 0, request.seed)

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        plan = self.plan(request)
        outcome = harness.run(plan, on_start=on_start)
        return to_output(outcome, solo=not request.engine)

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
