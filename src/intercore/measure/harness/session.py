"""One `measure` session: resolve the host and the specs, run canary + paired harness, save.

Kept apart from the CLI so `demo` and later stages (model validation, campaigns) run the same
measurement without going through typer.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ...base.errors import InputError
from ...host.topology import Topology, default_placement, read_topology, validate_cpu
from ..regime import canary as canary_mod
from ..regime import core as core_mod
from ..aggressors import store as named_sets
from ..aggressors.catalog import parse_victim
from .paired import CORE_STATES, REGIMES, SAME_CORE, Outcome, Plan, run
from .comparison import Comparison, comparisons
from .store import save
from ..program import KIND as PROGRAM, is_program, parse_program
from ..aggressors.presets import AggressorSet, Footprints, parse_set, place


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
    block_pairs: int | None = None  # None: from the measured switch cost
    clock: str = "cpu"
    until_ci: float | None = None
    max_runs: int | None = None
    regime: str | None = None       # restrict the estimates (and --until-ci) to one regime
    until_pairs: int | None = None  # add pairs until each set has this many (in `regime`)
    args: tuple[str, ...] = ()      # a user's program's own arguments (`victim` is its path)


CLOCKS = ("cpu", "wall", "auto")


@dataclass
class Result:
    plan: Plan
    regions: list[Comparison]
    regime: str
    canaries: list[dict]
    warnings: list[str] = field(default_factory=list)
    invocation_id: int | None = None
    outcome: Outcome | None = None

    def regime_counts(self) -> dict[str, int]:
        """Blocks per regime the running canary saw."""
        blocks = self.outcome.blocks if self.outcome else []
        return {r: sum(b.regime == r for b in blocks) for r in REGIMES}

    def core_counts(self) -> dict[str, int]:
        """Blocks per core state the core probe saw (empty where none ran)."""
        if self.outcome is None or not self.outcome.core_probes:
            return {}
        return {c: sum(b.core == c for b in self.outcome.blocks) for c in CORE_STATES}

    def to_dict(self) -> dict:
        o = self.outcome
        return {
            "victim": self.plan.victim.to_dict(),
            "aggressors": [s.to_dict() for s in self.plan.sets],
            "regime": self.regime,
            "runs": self.plan.runs,
            "victim_cpu": self.plan.victim_cpu,
            "regions": [r.to_dict() for r in self.regions],
            "canary": self.canaries,
            "design": {
                "interleaved": True,
                "block_pairs": o.block_size.to_dict() if o and o.block_size else None,
                "blocks": [b.to_dict() for b in o.blocks] if o else [],
                "probes": [p.to_dict() for p in o.probes] if o else [],
                "regime_blocks": self.regime_counts(),
                "core_probes": [p.to_dict() for p in o.core_probes] if o else [],
                "core_blocks": self.core_counts(),
                "regime_filter": self.plan.stop_regime,
                "clock": clock_info(o) if o else None,
                "stopped": dict(o.stopped) if o else {},
            },
            "warnings": self.warnings,
            "invocation_id": self.invocation_id,
        }


# Two repetitions a pair, and ic-victim runs at most a million repetitions.
MAX_RUNS = 500_000
# Pairs per set of a measurement nobody sized (`measure run --runs`).
DEFAULT_RUNS = 100


def clock_info(outcome: Outcome) -> dict:
    ready = outcome.victim_info.get("ready", {})
    return {"clock": ready.get("clock", "cpu"), "why": ready.get("clock_why", ""),
            "cputime_mode": ready.get("cputime_mode")}


def rt_permitted() -> bool:
    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] > 0


Named = Callable[[str], str]


def parse_aggressor_set(text: str, fp: Footprints, topo: Topology, named: Named | None
                        ) -> AggressorSet:
    """One --aggressor value; `@NAME` is a saved set (`@worst:VICTIM`, saved by --search)."""
    if not text.startswith(named_sets.PREFIX):
        return parse_set(text, fp, topo)
    name = text[len(named_sets.PREFIX):].strip()
    if name.startswith("worst:"):
        target = name[len("worst:"):]
        if is_program(target):  # the binary at that path now: its hash names its winner
            name = named_sets.worst_name(parse_program(target))
        elif not target.startswith(f"{PROGRAM}:"):  # else already the saved name
            name = named_sets.worst_name(parse_victim(target, [], fp))
    if named is None:
        raise InputError(f"{text}: named sets live in the results store; drop --no-store",
                         field="--aggressor")
    spec = named(name)
    return replace(parse_set(spec, fp, topo), label=f"{text.strip()} = {spec}")


def victim_spec(req: Request, fp: Footprints):
    """The request's victim: a built-in with its parameters, or a program (a path) with its
    own arguments."""
    if is_program(req.victim):
        if req.params:
            raise InputError("a program takes its own arguments after --, not -p",
                             field="--param")
        return parse_program(req.victim, req.args)
    if req.args:
        raise InputError(f"{req.victim} is a built-in victim: give its parameters with -p "
                         "key=value (a program of your own is named by a path: ./prog)",
                         field="VICTIM")
    return parse_victim(req.victim, list(req.params), fp)


def resolve(req: Request, topo: Topology, named: Named | None = None) -> Plan:
    """The plan of a request on this host; `named` looks up `-a @NAME` sets."""
    if not 1 <= req.runs <= MAX_RUNS:
        raise InputError(f"must be 1 .. {MAX_RUNS}, got {req.runs}", field="--runs")
    if not 0 <= req.seed < 2**63:
        raise InputError(f"must be 0 .. 2^63-1, got {req.seed}", field="--seed")
    if req.block_pairs is not None and req.block_pairs < 1:
        raise InputError(f"must be at least 1, got {req.block_pairs}", field="--block-pairs")
    if req.clock not in CLOCKS:
        raise InputError(f"choose {', '.join(CLOCKS)}", field="--clock")
    if req.regime is not None and req.regime not in REGIMES:
        raise InputError(f"choose {', '.join(REGIMES)}", field="--regime")
    if req.until_ci is not None and not 0 < req.until_ci < 1:
        raise InputError(f"a fraction of Δ in (0, 1), e.g. 0.02; got {req.until_ci}",
                         field="--until-ci")
    if req.until_pairs is not None and not 1 <= req.until_pairs <= MAX_RUNS:
        raise InputError(f"must be 1 .. {MAX_RUNS}, got {req.until_pairs}",
                         field="--until-pairs")
    adaptive = req.until_ci is not None or req.until_pairs is not None
    if req.max_runs is not None:
        if not adaptive:
            raise InputError("only with --until-ci or --until-pairs", field="--max-runs")
        if not req.runs <= req.max_runs <= MAX_RUNS:
            raise InputError(f"must be --runs ({req.runs}) .. {MAX_RUNS}, got {req.max_runs}",
                             field="--max-runs")
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
    victim = victim_spec(req, fp)
    if not req.aggressors:
        raise InputError("give at least one", field="--aggressor")
    sets = tuple(place(parse_aggressor_set(a, fp, topo, named), acpus) for a in req.aggressors)
    labels = [s.label for s in sets]
    if len(set(labels)) != len(labels):
        raise InputError("the same aggressor set is given twice", field="--aggressor")
    vprio = req.victim_priority if req.victim_priority is not None else \
        (1 if rt_permitted() else 0)
    probe_cpu = sets[0].members[0].cpu if sets[0].members else acpus[0]
    canary = canary_mod.running_plan(topo, vcpu, probe_cpu) if req.canary else None
    core = core_mod.core_plan(probe_cpu) if req.canary else None
    max_runs = (req.max_runs or 10 * req.runs) if adaptive else None
    return Plan(victim, sets, req.runs, vcpu, vprio, req.aggressor_priority, req.seed,
                req.block_pairs, canary, core, req.clock, req.until_ci, max_runs, req.regime,
                until_pairs=req.until_pairs)


def _warnings(plan: Plan, regions: list[Comparison], result_blocks: dict[str, int],
              core_blocks: dict[str, int] | None = None, topo: Topology | None = None
              ) -> list[str]:
    out = []
    if topo is not None:
        # The running core probe sees what sysfs hides; sysfs is read here for a run without
        # one (--no-canary), where the warning is the only sign.
        for cpu in sorted({m.cpu for s in plan.sets for m in s.members if m.cpu is not None}):
            note = core_mod.core_warning(topo, cpu, [plan.victim_cpu],
                                         "a paused aggressor (a register-only spinner)", None)
            if note:
                out.append(note)
    if core_blocks and core_blocks[SAME_CORE]:
        total = sum(core_blocks.values())
        out.append(f"the victim's CPU {plan.victim_cpu} shared a physical core with the "
                   f"aggressor CPU in {core_blocks[SAME_CORE]} of {total} blocks (the core "
                   "probe: a register-only spinner slowed register-only work): a paused "
                   "aggressor slows the victim through the core there, in both halves of a "
                   "pair; blocks and samples carry the core state (`core`)")
    if plan.canary is not None:
        total = sum(result_blocks.values())
        if total and not result_blocks["shared"]:
            out.append(f"the canary saw cross-core cache interference in none of {total} "
                       f"blocks ({result_blocks['not-shared']} not shared, "
                       f"{result_blocks['unknown']} undecided): a slowdown near 1x here says "
                       "nothing about the platform")
        elif result_blocks["shared"] and result_blocks["shared"] < total:
            out.append(f"the host regime changed during the run: {result_blocks['shared']} of "
                       f"{total} blocks shared the cache, {result_blocks['not-shared']} did "
                       f"not, {result_blocks['unknown']} undecided; read the per-regime rows "
                       "(by_regime) or restrict with --regime shared")
    for r in regions:
        if r.witness and r.witness.disagreements:
            out.append(f"{r.region_name} under {r.aggressor_set}: in "
                       f"{len(r.witness.disagreements)} block(s) the victim's own isolated "
                       "state witnessed the opposite of the canary's regime (`witness` in the "
                       "JSON): read Δ per victim state beside by_regime")
        stray = sorted({c for cpus in r.cpus.values() for c in cpus} - {plan.victim_cpu})
        if stray:
            out.append(f"{r.region_name} under {r.aggressor_set}: the victim ran on CPU(s) "
                       f"{stray}, not only {plan.victim_cpu}")
        worst = max(r.max_nivcsw.values())
        if worst > 0 and r.clock == "cpu":
            out.append(f"{r.region_name} under {r.aggressor_set}: up to {worst} involuntary "
                       "context switches in one repetition; CPU time is the metric, wall time "
                       "is inflated")
        if r.discarded:
            out.append(f"{r.region_name} under {r.aggressor_set}: {r.discarded} pair(s) "
                       "discarded, a half descheduled under the wall clock")
    return sorted(set(out))


def summary_canaries(outcome: Outcome) -> list[dict]:
    """The first and last running probes, as the before/after summary of the run."""
    if not outcome.probes:
        return []
    cores = outcome.core_probes
    summary = []
    for when, i in (("before", 0), ("after", -1)):
        p = outcome.probes[i]
        entry = {"when": when, "regime": p.regime, "ratios": list(p.ratios), "at_ns": p.at_ns,
                 "reason": _probe_reason(p)}
        if cores:
            entry.update(core=cores[i].regime, core_ratios=list(cores[i].ratios))
        summary.append(entry)
    return summary


def _probe_reason(p) -> str:
    med = sorted(p.ratios)[len(p.ratios) // 2] if p.ratios else float("nan")
    return {"shared": f"the thrasher slowed the canary chase {med:.2f}x",
            "not-shared": f"no canary slowdown ({med:.2f}x): the CPUs did not share a cache",
            "unknown": f"canary slowdown {med:.2f}x: partly shared or noisy"}[p.regime]


def run_regime(outcome: Outcome) -> str:
    regimes = {b.regime for b in outcome.blocks}
    return regimes.pop() if len(regimes) == 1 else "mixed" if regimes else "unknown"


def named_lookup(db: Path | None, topo: Topology) -> Named | None:
    """Looks up `-a @NAME` sets saved in `db` for this host (None without a store)."""
    if db is None:
        return None
    from ...host.report import fingerprint
    from ...host.sysfs import kernel_release
    host = fingerprint(topo, kernel_release(Path("/")))
    return lambda name: named_sets.lookup(db, host, name)


def measure(req: Request, *, db: Path | None, argv: list[str], command: str = "measure",
            on_rep: Callable[[int, int], None] | None = None,
            on_phase: Callable[[str], None] | None = None,
            topo: Topology | None = None) -> Result:
    topo = topo or read_topology()
    plan = resolve(req, topo, named=named_lookup(db, topo))
    if on_phase:
        on_phase(f"{plan.victim.label}: {plan.runs} pairs x {len(plan.sets)} aggressor set(s), "
                 "interleaved in blocks")
    outcome = run(plan, on_rep)
    regions = comparisons(outcome.samples, seed=req.seed, regime=req.regime)
    canaries = summary_canaries(outcome)
    regime = run_regime(outcome) if plan.canary is not None else "unknown"
    result = Result(plan, regions, regime, canaries, outcome=outcome)
    result.warnings = _warnings(plan, regions, result.regime_counts(), result.core_counts(),
                                topo)
    if db is not None:
        from ...host.report import host_report  # reading every host feature is only needed here
        report = host_report()
        result.invocation_id = save(
            db, outcome, command=command, argv=argv, topo=topo,
            fingerprint=report.fingerprint(), host_info=report.to_dict(), regime=regime,
            summary={k: v for k, v in result.to_dict().items() if k != "invocation_id"})
    return result
