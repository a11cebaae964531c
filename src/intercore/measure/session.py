"""One `measure` session: resolve the host and the specs, run canary + paired harness, save.

Kept apart from the CLI so `demo` and later stages (model validation, campaigns) run the same
measurement without going through typer.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import InputError
from ..host.topology import Topology, default_placement, read_topology, validate_cpu
from . import canary as canary_mod
from .catalog import parse_victim
from .harness import Plan, run
from .paired_comparison import Comparison, comparisons
from .persist import save
from .presets import Footprints, parse_set, place


@dataclass(frozen=True)
class Request:
    victim: str
    params: tuple[str, ...] = ()
    aggressors: tuple[str, ...] = ("BwWrite(LLC)",)
    runs: int = 100
    victim_cpu: int | None = None
    aggressor_cpus: tuple[int, ...] | None = None
    victim_priority: int | None = None  # None: SCHED_FIFO 1 where permitted
    aggressor_priority: int = 0
    canary: bool = True
    seed: int = 1


@dataclass
class Result:
    plan: Plan
    regions: list[Comparison]
    regime: str
    canaries: list[dict]
    warnings: list[str] = field(default_factory=list)
    invocation_id: int | None = None

    def to_dict(self) -> dict:
        return {
            "victim": self.plan.victim.to_dict(),
            "aggressors": [s.to_dict() for s in self.plan.sets],
            "regime": self.regime,
            "runs": self.plan.runs,
            "victim_cpu": self.plan.victim_cpu,
            "regions": [r.to_dict() for r in self.regions],
            "canary": self.canaries,
            "warnings": self.warnings,
            "invocation_id": self.invocation_id,
        }


# Two repetitions a pair, and ic-victim runs at most a million repetitions.
MAX_RUNS = 500_000


def rt_permitted() -> bool:
    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] > 0


def resolve(req: Request, topo: Topology) -> Plan:
    if not 1 <= req.runs <= MAX_RUNS:
        raise InputError(f"must be 1 .. {MAX_RUNS}, got {req.runs}", field="--runs")
    if not 0 <= req.seed < 2**63:
        raise InputError(f"must be 0 .. 2^63-1, got {req.seed}", field="--seed")
    dv, da = default_placement(topo)
    vcpu = validate_cpu(topo, req.victim_cpu, "--victim-cpu") if req.victim_cpu is not None else dv
    acpus = [validate_cpu(topo, c, "--aggressor-cpus") for c in req.aggressor_cpus] \
        if req.aggressor_cpus else [c for c in da if c != vcpu]
    if vcpu in acpus:
        raise InputError(f"CPU {vcpu} is the victim's; aggressors need other CPUs",
                         field="--aggressor-cpus")
    if not acpus:
        raise InputError("no CPU left for aggressors on this host", field="--aggressor-cpus")
    fp = Footprints.for_host(topo, vcpu)
    victim = parse_victim(req.victim, list(req.params), fp)
    if not req.aggressors:
        raise InputError("give at least one", field="--aggressor")
    sets = tuple(place(parse_set(a, fp, topo), acpus) for a in req.aggressors)
    labels = [s.label for s in sets]
    if len(set(labels)) != len(labels):
        raise InputError("the same aggressor set is given twice", field="--aggressor")
    vprio = req.victim_priority if req.victim_priority is not None else \
        (1 if rt_permitted() else 0)
    return Plan(victim, sets, req.runs, vcpu, vprio, req.aggressor_priority, req.seed)


def combine_regimes(canaries: list[dict]) -> str:
    regimes = {c["regime"] for c in canaries}
    if len(regimes) == 1:
        return regimes.pop()
    return "unknown"


def _warnings(plan: Plan, regions: list[Comparison], regime: str, canaries: list[dict]) -> list[str]:
    out = []
    if regime == "not-shared":
        out.append("the canary saw no cross-core cache interference: the CPUs do not share a "
                   "cache right now, so a slowdown near 1x says nothing about the platform")
    elif len({c["regime"] for c in canaries}) > 1:
        out.append("the canary regime changed during the run (host placement moved): "
                   f"{' then '.join(c['regime'] for c in canaries)}")
    for r in regions:
        stray = sorted({c for cpus in r.cpus.values() for c in cpus} - {plan.victim_cpu})
        if stray:
            out.append(f"{r.region_name} under {r.aggressor_set}: the victim ran on CPU(s) "
                       f"{stray}, not only {plan.victim_cpu}")
        worst = max(r.max_nivcsw.values())
        if worst > 0:
            out.append(f"{r.region_name} under {r.aggressor_set}: up to {worst} involuntary "
                       "context switches in one repetition; CPU time is the metric, wall time "
                       "is inflated")
    return sorted(set(out))


def measure(req: Request, *, db: Path | None, argv: list[str], command: str = "measure",
            on_rep: Callable[[int, int], None] | None = None,
            on_phase: Callable[[str], None] | None = None,
            topo: Topology | None = None) -> Result:
    topo = topo or read_topology()
    plan = resolve(req, topo)
    canaries = []

    def probe(when: str) -> None:
        if on_phase:
            on_phase(f"canary ({when})")
        acpu = plan.sets[0].members[0].cpu
        c = canary_mod.run_canary(topo, victim_cpu=plan.victim_cpu, aggressor_cpu=acpu)
        canaries.append({"when": when, **c.to_dict()})

    if req.canary:
        probe("before")
    if on_phase:
        on_phase(f"{plan.victim.label}: {plan.runs} pairs x {len(plan.sets)} aggressor set(s)")
    outcome = run(plan, on_rep)
    if req.canary:
        probe("after")
    regime = combine_regimes(canaries) if canaries else "unknown"
    regions = comparisons(outcome.samples, seed=req.seed)
    result = Result(plan, regions, regime, canaries, _warnings(plan, regions, regime, canaries))
    if db is not None:
        from ..host.report import host_report  # reading every host feature is only needed here
        report = host_report()
        result.invocation_id = save(
            db, outcome, command=command, argv=argv, topo=topo,
            fingerprint=report.fingerprint(), host_info=report.to_dict(), regime=regime,
            summary={k: v for k, v in result.to_dict().items() if k != "invocation_id"})
    return result
