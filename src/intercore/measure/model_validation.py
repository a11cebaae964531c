"""`model validate`: run the analysis' pairs on the host and say whether they behave as
predicted. A measurement of the model's predictions, so it lives in measure/ and reads the
model stage's types (the model stage itself never runs anything).

Each transaction of a host model becomes a micro-benchmark whose footprint lives where the
transaction is served: a pointer chase (loads) or a STREAM triad (stores) sized to half of an
L1 or L2, to the shared-cache victim size, or to twice the shared cache (DRAM); as aggressor,
the matching preset (BwRead(LLC), BwWrite(DRAM), ...) or a bandwidth sweep of that private
size. Every interference pair and a sample of interference-free pairs (negative controls)
run through the paired harness of the measurement core, and each gets a verdict from the
paired-bootstrap 95% CI of its slowdown Δ:

- an interference pair is *confirmed* when the CI lies at or above THRESHOLD, else
  *not observed* (the model may be pessimistic, or the channel needs a stronger aggressor);
- a free pair is *contradicted* when the CI lies at or above THRESHOLD (the model misses a
  channel and must be refined), else *confirmed*.

Each victim's trials run interleaved in blocks with the running canary probed between them
(measure/harness/paired.py), so every pair carries the host regime of its block. A pair that
reaches the shared cache or DRAM is decided on its pairs from `shared` blocks when it has
enough of them, since only there can cross-core cache interference show. Where it has too
few, on a host whose CPUs can share the cache (a VM whose vCPUs share the L3 only part of
the time), the absence of a slowdown proves nothing: such a verdict is *unobservable*
(provisional, run it again), never "not observed" or "confirmed". A slowdown seen in any
stratum still confirms an interference pair or contradicts a free one.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import __version__
from ..base.errors import InputError
from ..host.topology import Topology, default_placement
from ..model.channels import ChannelTable, Evidence
from ..model.platform import Platform, Transaction
from ..store import Store
from ..store.records import InvocationRecord, WorkloadRecord
from ..store.validation import ValidationAttachment, ValidationRecord, VerdictRecord
from .regime import canary as canary_mod
from .harness.paired import SHARED, Outcome, run
from .harness.comparison import Comparison, comparisons
from .harness.store import host_id, outcome_records, utc
from .aggressors.presets import Footprints
from ..base.sample import TOTAL_REGION, Sample
from .harness.session import Request, resolve, summary_canaries
from .harness.stats import PairedResult
from ..base.units import size_arg

# Δ's CI must lie at or above this for a slowdown to count. Negative controls (private-cache
# victim against private-cache aggressor, pairs the model calls free) measured on this
# development VM stay within about ±2 % with 10 pairs (docs/platform-model.md has the
# figures); 5 % keeps them clear of that noise while every shared-cache channel the canary
# sees (≥ 1.3×) passes easily. Certification may ask for a different materiality level:
# --threshold.
THRESHOLD = 1.05
# The DRAM pointer chase stops after this many loads, so one repetition stays near 0.2 s
# instead of walking twice through a footprint of twice the shared cache.
CHASE_ACCESSES = "1M"
MIN_RUNS = 3

INTERFERENCE, FREE = "interference", "free"
CONFIRMED, NOT_OBSERVED, CONTRADICTED = "confirmed", "not observed", "contradicted"
UNOBSERVABLE = "unobservable"
VERDICTS = (CONFIRMED, NOT_OBSERVED, CONTRADICTED, UNOBSERVABLE)
# Levels whose traffic goes through the shared cache: a pair reaching one of them depends on
# the host's sharing regime.
SHARED_LEVELS = frozenset({"LLC", "DRAM"})


@dataclass(frozen=True)
class Exercise:
    """How one transaction is driven on this host, as victim and as aggressor."""

    tx: str
    cpu: int
    level: str  # L1 | L2 | LLC | DRAM
    op: str
    footprint: int
    victim: str     # catalog grammar, e.g. ptrchase:size=24KiB,accesses=1M
    aggressor: str  # preset grammar, e.g. BwWrite(LLC) or bw:op=read,size=24KiB

    def to_dict(self) -> dict:
        return {"tx": self.tx, "cpu": self.cpu, "level": self.level, "op": self.op,
                "footprint": self.footprint, "victim": self.victim,
                "aggressor": self.aggressor}


@dataclass(frozen=True)
class Trial:
    expected: str  # interference | free
    channel: str | None
    services: tuple[str, ...]
    victim: Exercise
    aggressor: Exercise

    @property
    def aggressor_set(self) -> str:
        return f"{self.aggressor.aggressor}@{self.aggressor.cpu}"

    @property
    def key(self) -> frozenset[str]:
        return frozenset((self.victim.tx, self.aggressor.tx))


@dataclass(frozen=True)
class Verdict:
    """`result` is the estimate the verdict rests on, over the pairs of `regime` (a block
    regime, or the run's when it was decided on all pairs); `basis` says why those pairs."""

    trial: Trial
    verdict: str
    result: PairedResult
    region: str
    regime: str
    victim_index: int  # which measured victim (see Validation.outcomes)
    basis: str = ""

    def evidence(self, invocation_id: int | None) -> Evidence:
        return Evidence(self.verdict, self.result.delta,
                        (self.result.delta_ci[0], self.result.delta_ci[1]),
                        self.result.n, self.regime, self.trial.victim.tx,
                        self.trial.aggressor.tx, invocation_id)

    def to_dict(self) -> dict:
        lo, hi = (None if math.isnan(x) else x for x in self.result.delta_ci)
        t = self.trial
        return {"expected": t.expected, "channel": t.channel, "verdict": self.verdict,
                "victim": t.victim.to_dict(), "aggressor": t.aggressor.to_dict(),
                "aggressor_set": t.aggressor_set, "region": self.region, "n": self.result.n,
                "delta": self.result.delta, "delta_ci": [lo, hi],
                "paired_max": self.result.paired_max, "regime": self.regime,
                "basis": self.basis, "services": list(t.services)}


@dataclass
class Validation:
    verdicts: list[Verdict]
    skipped: list[dict]
    outcomes: list[Outcome]  # one per victim, in victim_index order
    victims: list[str]       # the transaction each outcome's victim exercised
    trials: list[Trial]
    regime: str
    canaries: list[dict]
    threshold: float
    started_at: float
    finished_at: float

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for v in self.verdicts:
            out[v.verdict] += 1
        return out

    def to_dict(self) -> dict:
        return {"regime": self.regime, "canary": self.canaries, "threshold": self.threshold,
                "counts": self.counts(), "verdicts": [v.to_dict() for v in self.verdicts],
                "skipped": self.skipped}


# ---- mapping transactions to micro-benchmarks ------------------------------------------------

def _level(platform: Platform, tx: Transaction) -> str | None:
    comp = platform.components[tx.target]
    if comp.role == "memory":
        return "DRAM"
    if comp.role != "cache" or comp.level is None:
        return None
    if comp.private_to is None:
        top = max((c.level or 0) for c in platform.components.values() if c.role == "cache")
        return "LLC" if comp.level == top else None
    return "L1" if comp.level == 1 else "L2"


def exercise(platform: Platform, tx: Transaction, topo: Topology) -> Exercise | str:
    """The micro-benchmark for `tx` on this host, or why there is none."""
    cpu = platform.components[tx.initiator].cpu
    if cpu is None:
        return f"{tx.initiator} names no host CPU (no cpu: attribute): nothing here drives it"
    if cpu not in topo.online_cpus:
        return f"CPU {cpu} of {tx.initiator} is not online on this host"
    level = _level(platform, tx)
    if level is None:
        return (f"no micro-benchmark is sized for {tx.target} "
                f"({platform.components[tx.target].role or 'no role'})")
    try:
        fp = Footprints.for_host(topo, cpu)
    except InputError:
        return "sysfs lists no caches on this host, so no footprint can be sized"
    if level in ("L1", "L2"):
        size = platform.components[tx.target].size
        if not size:
            return f"{tx.target} has no size to fit a benchmark into"
        footprint = size // 2
    else:
        footprint = fp.shared_victim if level == "LLC" else fp.dram
    if tx.op == "load":
        victim = f"ptrchase:size={size_arg(footprint)},accesses={CHASE_ACCESSES}"
    else:
        victim = f"stream:size={size_arg(footprint)}"
    if level in ("LLC", "DRAM"):
        aggressor = f"Bw{'Read' if tx.op == 'load' else 'Write'}({level})"
    else:
        aggressor = f"bw:op={'read' if tx.op == 'load' else 'write'},size={size_arg(footprint)}"
    return Exercise(tx.name, cpu, level, tx.op, footprint, victim, aggressor)


def exercises(platform: Platform, topo: Topology) -> tuple[dict[str, Exercise], dict[str, str]]:
    if not any(c.cpu is not None for c in platform.components.values()):
        raise InputError("no initiator names a host CPU (cpu: N): validation runs on the host "
                         "a model describes; write one with `intercore model detect`",
                         source=platform.source, field="components")
    found, why_not = {}, {}
    for tx in platform.transactions.values():
        ex = exercise(platform, tx, topo)
        if isinstance(ex, Exercise):
            found[tx.name] = ex
        else:
            why_not[tx.name] = ex
    return found, why_not


# ---- choosing the pairs ----------------------------------------------------------------------

# Closer to the core first: the victim of a pair is its transaction served nearest to the
# core, the one whose latency traffic at the other's (shared) level can raise.
LEVEL_ORDER = {"L1": 0, "L2": 1, "LLC": 2, "DRAM": 3}


def plan(table: ChannelTable, found: dict[str, Exercise], why_not: dict[str, str],
         topo: Topology, *, free_sample: int = 4, quick: bool = False, seed: int = 1
         ) -> tuple[list[Trial], list[dict]]:
    """Every 2-itf pair and `free_sample` free pairs (negative controls). In each pair the
    transaction served nearer the core is the victim; at equal levels, the one on the
    harness's victim CPU. `quick` keeps a short subset: no DRAM-sized workload, the cheapest
    pair of each kind of channel (at most two) and one negative control."""
    if table.k != 2:
        raise InputError("validation runs pairs: analyse with k = 2", field="--k")
    victim_cpu = default_placement(topo).victim
    skipped: list[dict] = []

    def trial(expected: str, txs: tuple[str, ...], channel=None, services=()) -> Trial | None:
        missing = [t for t in txs if t not in found]
        if missing:
            skipped.append({"transactions": list(txs), "expected": expected,
                            "reason": "; ".join(why_not[t] for t in missing)})
            return None
        a, b = sorted((found[t] for t in txs),
                      key=lambda e: (LEVEL_ORDER[e.level], e.cpu != victim_cpu, -e.cpu))
        if a.cpu == b.cpu:
            skipped.append({"transactions": list(txs), "expected": expected,
                            "reason": f"both run on CPU {a.cpu}"})
            return None
        return Trial(expected, channel, tuple(services), a, b)

    itf = [t for r in table.channels
           if (t := trial(INTERFERENCE, r.transactions, r.id, r.services)) is not None]
    rules = {r.id: r.rule for r in table.channels}
    free = [t for r in table.free if (t := trial(FREE, r.transactions)) is not None]
    if quick:
        def cost(t: Trial) -> tuple:
            # Small workloads first; a writing aggressor (the stronger one); the victim CPU.
            return (t.victim.footprint, t.aggressor.footprint, t.aggressor.op != "store",
                    t.victim.cpu != victim_cpu, t.victim.tx, t.aggressor.tx)

        small = [t for t in itf if "DRAM" not in (t.victim.level, t.aggressor.level)]
        by_rule: dict[str, Trial] = {}
        for t in sorted(small, key=cost):
            by_rule.setdefault(rules[t.channel], t)
        itf = list(by_rule.values())[:2]
        free = sorted((t for t in free if "DRAM" not in (t.victim.level, t.aggressor.level)),
                      key=cost)[:1]
    elif len(free) > free_sample:
        free = random.Random(seed).sample(free, free_sample)
    return itf + free, skipped


# ---- running ---------------------------------------------------------------------------------

def decide(expected: str, result: PairedResult, threshold: float = THRESHOLD) -> str:
    lo = result.delta_ci[0]
    slowed = not math.isnan(lo) and lo >= threshold
    if expected == INTERFERENCE:
        return CONFIRMED if slowed else NOT_OBSERVED
    return CONTRADICTED if slowed else CONFIRMED


def regime_verdict(trial: Trial, comparison: Comparison, *, threshold: float = THRESHOLD,
                   can_share: bool, run_regime: str) -> tuple[str, PairedResult, str, str]:
    """(verdict, the estimate it rests on, that estimate's regime, why) for one trial."""
    seen = CONFIRMED if trial.expected == INTERFERENCE else CONTRADICTED
    sensitive = can_share and bool({trial.victim.level, trial.aggressor.level} & SHARED_LEVELS)
    shared = comparison.by_regime.get(SHARED)
    if not sensitive:
        why = ("private caches only: the sharing regime does not matter" if can_share
               else "the topology says these CPUs share no cache")
        return decide(trial.expected, comparison.result, threshold), comparison.result, \
            run_regime, f"all {comparison.result.n} pairs ({why})"
    if shared is not None and shared.n >= MIN_RUNS:
        return decide(trial.expected, shared, threshold), shared, SHARED, \
            f"the {shared.n} pairs of shared blocks (of {comparison.result.n})"
    verdict = decide(trial.expected, comparison.result, threshold)
    have = 0 if shared is None else shared.n
    if verdict == seen:
        return verdict, comparison.result, run_regime, \
            f"all {comparison.result.n} pairs: seen although only {have} were in shared blocks"
    return UNOBSERVABLE, comparison.result, run_regime, \
        (f"only {have} of {comparison.result.n} pairs in shared blocks (need {MIN_RUNS}): "
         "the CPUs did not share their cache while it ran; provisional, run it again")


Phase = Callable[[str], None]
Rep = Callable[[int, int], None]


def validate(trials: list[Trial], topo: Topology, *, skipped: list[dict] | None = None,
             runs: int = 10, seed: int = 1, threshold: float = THRESHOLD, canary: bool = True,
             on_phase: Phase | None = None, on_rep: Rep | None = None) -> Validation:
    """Run the trials, grouped by victim (one victim process serves all its aggressors,
    interleaved in blocks), with the running canary between blocks when `canary` is set;
    its first and last probes of each group are the before/after summary."""
    if runs < MIN_RUNS:
        raise InputError(f"must be at least {MIN_RUNS} (a bootstrap CI needs pairs), got {runs}",
                         field="--runs")
    if not trials:
        raise InputError("no pair of this model can be exercised on this host (see skipped)")
    phase = on_phase or (lambda text: None)
    groups: dict[str, list[Trial]] = {}
    for t in trials:
        groups.setdefault(t.victim.tx, []).append(t)
    canaries: list[dict] = []
    started = time.time()
    measured: list[tuple[list[Trial], Outcome]] = []
    for n, (victim_tx, group) in enumerate(groups.items(), start=1):
        labels = tuple(dict.fromkeys(t.aggressor_set for t in group))
        victim = group[0].victim
        req = Request(victim.victim, aggressors=labels, runs=runs, victim_cpu=victim.cpu,
                      aggressor_cpus=tuple(sorted({t.aggressor.cpu for t in group})),
                      canary=canary, seed=seed)
        phase(f"{victim_tx} ({n}/{len(groups)}): {victim.victim} against "
              f"{len(labels)} aggressor(s), {runs} pairs each, interleaved"
              + (" with the running canary" if canary else ""))
        outcome = run(resolve(req, topo), on_rep)
        measured.append((group, outcome))
        canaries += [{**c, "when": f"{c['when']} {victim_tx}"} for c in summary_canaries(outcome)]
    blocks = {b.regime for _, o in measured for b in o.blocks} if canary else set()
    regime = blocks.pop() if len(blocks) == 1 else "mixed" if blocks else "unknown"
    verdicts = []
    for index, (group, outcome) in enumerate(measured):
        regions = {(c.aggressor_set, c.region_name): c
                   for c in comparisons(outcome.samples, seed=seed)}
        kernel = next(name for _, name in regions if name != TOTAL_REGION)
        for t in group:
            verdict, result, where, basis = regime_verdict(
                t, regions[(t.aggressor_set, kernel)], threshold=threshold,
                can_share=canary_mod.can_share(topo, t.victim.cpu, t.aggressor.cpu),
                run_regime=regime)
            verdicts.append(Verdict(t, verdict, result, kernel, where, index, basis))
    return Validation(verdicts, list(skipped or []), [o for _, o in measured],
                      [g[0].victim.tx for g, _ in measured], trials, regime, canaries,
                      threshold, started, time.time())


def _nan_to_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def save(db: Path, platform: Platform, validation: Validation, *, runs: int,
         argv: list[str], topo: Topology, params: dict) -> int:
    """Write the validation as one invocation: every victim it ran with its aggressors
    and raw samples, the model it checked and one verdict per exercised pair; returns its id."""
    from ..host.report import host_report  # every host feature is read only when storing

    report = host_report()
    workloads: list[WorkloadRecord] = []
    samples: list[Sample] = []
    victims: list[int] = []
    for outcome, tx in zip(validation.outcomes, validation.victims):
        victims.append(len(workloads))
        w, s = outcome_records(outcome, victim_index=len(workloads), regime=validation.regime,
                               victim_info={"transaction": tx})
        workloads.extend(w)
        samples.extend(s)
    header = ValidationRecord(platform.name, platform.hash, platform.source, platform.text,
                              runs, validation.threshold, validation.regime,
                              validation.canaries)
    verdicts = [VerdictRecord(
        victims[v.victim_index], v.trial.expected, v.trial.channel, v.trial.victim.tx,
        v.trial.aggressor.tx, v.trial.aggressor_set, v.region, v.verdict, v.result.n,
        v.result.delta, _nan_to_none(v.result.delta_ci[0]), _nan_to_none(v.result.delta_ci[1]),
        v.result.paired_max, v.regime, tuple(v.trial.services)) for v in validation.verdicts]
    with Store.open(db) as store:
        hid = host_id(store, topo, report.fingerprint(), report.to_dict())
        inv = InvocationRecord(
            hid, "model validate", tuple(argv), utc(validation.started_at),
            utc(validation.finished_at), __version__,
            params={"model": platform.name, "hash": platform.hash, "source": platform.source,
                    "runs": runs, **params},
            summary={"regime": validation.regime, "counts": validation.counts(),
                     "threshold": validation.threshold, "skipped": len(validation.skipped)})
        return store.record(inv, workloads, samples,
                            attachments=[ValidationAttachment(header, verdicts)])


def stored_evidence(db: Path, model_hash: str) -> dict[frozenset[str], Evidence]:
    """The channel table's evidence: the newest verdict stored by `model validate` for each pair
    validated against this exact model (by hash). The model stage takes it from its caller."""
    if not Path(db).exists():
        return {}
    with Store.open(db) as store:
        verdicts = store.validations.verdicts(model_hash)
    out: dict[frozenset[str], Evidence] = {}
    for invocation, v in verdicts:
        ci = (math.nan if v.ci_low is None else v.ci_low,
              math.nan if v.ci_high is None else v.ci_high)
        out[frozenset((v.victim_tx, v.aggressor_tx))] = Evidence(
            v.verdict, v.delta, ci, v.n, v.regime, v.victim_tx, v.aggressor_tx, invocation)
    return out
