"""Campaign statistics: per setup and task, from the raw samples of every run of the setup.

Pure functions. A task is one region of the setup's critical workload (its `total` and each
marked loop nest). A setup's *measured* samples are its interfered samples when it has a
contention engine and its isolated samples otherwise (a solo baseline), pooled over its rounds.
The metric is thread CPU time, as in `intercore measure run`.

Two slowdowns are reported, because they answer different questions:
- `slowdown`: median(setup) / median(baseline setup), the figure of paper 001 (Figs 3, 5, 6).
  Its bootstrap resamples both setups independently (they are different sets of
  repetitions), so drift widens it; a round's setups run interleaved in blocks of one run
  (runner.run_groups), which keeps drift from aligning with a setup.
- `paired`: the measurement core's Δ from the setup's own iso/int pairs (paired bootstrap),
  which cancels drift shared by the two halves of a pair. A cache-coloured setup's `slowdown`
  includes the cost of the colouring itself; its `paired` Δ does not.

Both are also given per host regime (`by_regime`): the running canary tags every sample with
the regime of its block, and an interleaved group puts a setup and its solo baseline in the
same stretch of time, so both meet the same regimes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..measure.harness.comparison import comparisons
from ..base.sample import TOTAL_REGION, Sample
from ..measure.harness.stats import PairedResult, Summary, summarize, wilson_interval

CONFIDENCE = 0.95
N_BOOT = 2000
SEED = 0

# Bounds the memory of one bootstrap batch (resamples x n indices) to a few tens of MB.
_BOOTSTRAP_BATCH_CELLS = 2_000_000

Interval = tuple[float, float]
NAN_INTERVAL: Interval = (math.nan, math.nan)


# --- bootstrap ------------------------------------------------------------------------------

def _resampled_medians(values: Sequence[float], n_boot: int, rng: np.random.Generator
                       ) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    out = np.empty(n_boot)
    batch = max(1, _BOOTSTRAP_BATCH_CELLS // arr.size)
    for start in range(0, n_boot, batch):
        stop = min(start + batch, n_boot)
        idx = rng.integers(0, arr.size, size=(stop - start, arr.size))
        out[start:stop] = np.median(arr[idx], axis=1)
    return out


def bootstrap_ci(groups: Sequence[Sequence[float]], statistic: Callable[..., Any], *,
                 confidence: float = CONFIDENCE, n_boot: int = N_BOOT, seed: int = SEED
                 ) -> Interval:
    """Percentile CI of `statistic(*medians)`, each group resampled independently.

    Groups with fewer than 2 values make every resample equal to the sample, a zero-width
    interval claiming certainty: (nan, nan) is returned instead. Deterministic for a seed.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if any(len(g) < 2 for g in groups):
        return NAN_INTERVAL
    rng = np.random.default_rng(seed)
    resampled = statistic(*(_resampled_medians(g, n_boot, rng) for g in groups))
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(resampled, [tail, 100 - tail])
    return (float(lo), float(hi))


def median_ci(values: Sequence[float], **kw: Any) -> Interval:
    return bootstrap_ci([values], lambda m: m, **kw)


def ratio_ci(num: Sequence[float], den: Sequence[float], **kw: Any) -> Interval:
    return bootstrap_ci([num, den], lambda a, b: a / b, **kw)


# --- result types ---------------------------------------------------------------------------

def _interval(ci: Interval) -> list[float | None]:
    # JSON has no NaN: an interval that could not be computed becomes [null, null].
    return [None if math.isnan(x) else x for x in ci]


@dataclass(frozen=True)
class Slowdown:
    """median(setup) / median(baseline) with its CI; `max_ratio` compares the maxima (a point
    value only: a bootstrap of a maximum is biased low and would understate the tail)."""

    baseline: str
    value: float
    ci: Interval
    max_ratio: float

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "value": self.value, "ci": _interval(self.ci),
                "max_ratio": self.max_ratio}


@dataclass(frozen=True)
class MissRatio:
    """Deadline misses of a periodic task among n jobs, with a Wilson interval."""

    deadline_ns: float
    misses: int
    n: int
    ci: Interval

    @property
    def ratio(self) -> float:
        return self.misses / self.n

    def to_dict(self) -> dict[str, Any]:
        return {"deadline_ns": self.deadline_ns, "misses": self.misses, "n": self.n,
                "ratio": self.ratio, "ci": list(self.ci)}


def miss_ratio(times_ns: Sequence[float], deadline_ns: float, *,
               confidence: float = CONFIDENCE) -> MissRatio:
    """A job misses when it takes longer than the deadline (equal still meets it)."""
    if not times_ns:
        raise ValueError("no jobs to count misses in")
    misses = sum(1 for t in times_ns if t > deadline_ns)
    return MissRatio(deadline_ns, misses, len(times_ns),
                     wilson_interval(misses, len(times_ns), confidence=confidence))


@dataclass(frozen=True)
class RegimeStats:
    """One task of one setup over the samples measured in one host regime (the running
    canary's verdict on their block): `n` measured samples, the paired Δ of the setup's own
    pairs in that regime, and the slowdown against the baseline's samples of the same
    regime (interleaved runs put the solo baseline in the same blocks' regimes)."""

    n: int
    paired: PairedResult | None
    slowdown: Slowdown | None

    def to_dict(self) -> dict[str, Any]:
        p = self.paired
        return {"n": self.n,
                "paired": None if p is None else {"n": p.n, "delta": p.delta,
                                                  "delta_ci": _interval(p.delta_ci),
                                                  "paired_max": p.paired_max},
                "slowdown": None if self.slowdown is None else self.slowdown.to_dict()}


@dataclass(frozen=True)
class TaskStats:
    """One task of one setup. `condition` says which samples were measured ('int' under the
    contention engine, 'iso' for a solo baseline); times in ns of thread CPU time.
    `by_regime`: the same per host regime (samples without one are left out of it)."""

    setup: str
    victim: str
    region: str
    condition: str
    runs: int
    summary: Summary
    median_ci: Interval
    slowdown: Slowdown | None
    paired: PairedResult | None
    misses: MissRatio | None
    counters: Mapping[str, float] = field(default_factory=dict)
    by_regime: Mapping[str, RegimeStats] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "setup": self.setup, "victim": self.victim, "region": self.region,
            "condition": self.condition, "runs": self.runs, "metric": "thread CPU time (ns)",
            **self.summary.to_dict(),
            "median_ci": _interval(self.median_ci),
            "slowdown": None if self.slowdown is None else self.slowdown.to_dict(),
            "paired": None if self.paired is None else self.paired.to_dict(),
            "deadline": None if self.misses is None else self.misses.to_dict(),
            "counters": dict(self.counters),
            "by_regime": {k: v.to_dict() for k, v in self.by_regime.items()},
        }


# --- from runs to statistics ----------------------------------------------------------------

@dataclass(frozen=True)
class RunSamples:
    """The raw samples of one finished run (one setup, one round); `victim` labels them."""

    setup: str
    round: int
    victim: str
    samples: Sequence[Sample]


@dataclass(frozen=True)
class SetupInfo:
    """What the statistics need to know about a setup beyond its samples."""

    name: str
    baseline: str | None
    deadline_ns: float | None = None


def setup_infos(plan: Mapping[str, Any]) -> list[SetupInfo]:
    """The setups of a stored plan (CampaignPlan.to_dict()), in plan order. A setup whose
    critical task is periodic carries its `deadline_ns`."""
    return [SetupInfo(s["name"], s.get("baseline"), s.get("deadline_ns"))
            for s in plan["setups"]]


def _pooled(runs: Iterable[RunSamples]) -> list[Sample]:
    """Every run's samples as one victim's, with pair numbers made unique across runs, so the
    measurement core's pairing (pairs never cross a run) applies to the pooled rounds
    unchanged."""
    out: list[Sample] = []
    offset = 0
    for run in sorted(runs, key=lambda r: r.round):
        top = max((s.pair for s in run.samples), default=-1) + 1
        out += [replace(s, victim=0, pair=offset + s.pair) for s in run.samples]
        offset += top
    return out


def _measured(samples: Sequence[Sample], region: str) -> tuple[str, list[Sample]]:
    intf = [s for s in samples if s.region_name == region and s.condition == "int"]
    if intf:
        return "int", intf
    return "iso", [s for s in samples if s.region_name == region and s.condition == "iso"]


def _counter_medians(samples: Sequence[Sample]) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        for name, value in s.counters.items():
            values[name].append(value)
    return {name: float(np.median(v)) for name, v in sorted(values.items())}


def _slowdown(times: list[float], base: list[float] | None, baseline: str | None,
              seed: int) -> Slowdown | None:
    if baseline is None or not base or not times or min(base) <= 0:
        return None
    return Slowdown(baseline, float(np.median(times) / np.median(base)),
                    ratio_ci(times, base, seed=seed), max(times) / max(base))


def campaign_stats(setups: Sequence[SetupInfo], runs: Iterable[RunSamples], *,
                   seed: int = SEED) -> list[TaskStats]:
    """Statistics of every (setup, task) that has samples, in the order of `setups`."""
    by_setup: dict[str, list[RunSamples]] = defaultdict(list)
    for run in runs:
        by_setup[run.setup].append(run)
    pooled = {name: _pooled(rs) for name, rs in by_setup.items()}
    victims = {name: rs[0].victim for name, rs in by_setup.items()}

    def times(setup: str, region: str, regime: str | None = None) -> list[float]:
        return [float(s.cpu_ns) for s in _measured(pooled.get(setup, []), region)[1]
                if regime is None or s.regime == regime]

    out = []
    for info in setups:
        samples = pooled.get(info.name)
        if not samples:
            continue
        compared = {c.region_name: c for c in comparisons(samples, seed=seed)}
        regions = sorted({s.region_name for s in samples},
                         key=lambda r: (r != TOTAL_REGION, r))
        for region in regions:
            condition, measured = _measured(samples, region)
            t = [float(s.cpu_ns) for s in measured]
            base = times(info.baseline, region) if info.baseline else None
            c = compared.get(region)
            by_regime = {}
            for regime in sorted({s.regime for s in measured if s.regime is not None}):
                tr = times(info.name, region, regime)
                br = times(info.baseline, region, regime) if info.baseline else None
                by_regime[regime] = RegimeStats(
                    len(tr), c.by_regime.get(regime) if c else None,
                    _slowdown(tr, br, info.baseline, seed))
            out.append(TaskStats(
                setup=info.name, victim=victims[info.name], region=region,
                condition=condition, runs=len(by_setup[info.name]),
                summary=summarize(t), median_ci=median_ci(t, seed=seed),
                slowdown=_slowdown(t, base, info.baseline, seed),
                paired=c.result if c else None,
                misses=None if info.deadline_ns is None or region != TOTAL_REGION
                else miss_ratio(t, info.deadline_ns),
                counters=_counter_medians(measured), by_regime=by_regime))
    return out


# --- comparing two campaigns ----------------------------------------------------------------

@dataclass(frozen=True)
class SetupComparison:
    """One task of a setup both campaigns ran. `difference` = slowdown(B) - slowdown(A) with
    a bootstrap CI over all four sample sets; the verdict holds only when the CI excludes 0."""

    setup: str
    region: str
    median_a: float
    median_b: float
    slowdown_a: float | None
    slowdown_b: float | None
    difference: float | None
    difference_ci: Interval
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {"setup": self.setup, "region": self.region, "median_a": self.median_a,
                "median_b": self.median_b, "slowdown_a": self.slowdown_a,
                "slowdown_b": self.slowdown_b, "difference": self.difference,
                "difference_ci": _interval(self.difference_ci), "verdict": self.verdict}


def verdict(ci: Interval) -> str:
    lo, hi = ci
    if math.isnan(lo):
        return "insufficient n"
    if lo > 0:
        return "B slower"
    if hi < 0:
        return "B faster"
    return "no significant difference"


def compare_campaigns(a: Mapping[str, Sequence[RunSamples]], b: Mapping[str, Sequence[RunSamples]],
                      baselines: Mapping[str, str | None], *, seed: int = SEED
                      ) -> list[SetupComparison]:
    """Compare the setups present in both `a` and `b` (setup name -> its runs). Solo setups
    (no baseline) compare their medians: difference = median(B)/median(A) - 1."""
    pa = {name: _pooled(rs) for name, rs in a.items()}
    pb = {name: _pooled(rs) for name, rs in b.items()}

    def times(pooled: dict[str, list[Sample]], setup: str | None, region: str
              ) -> list[float]:
        if setup is None:
            return []
        return [float(s.cpu_ns) for s in _measured(pooled.get(setup, []), region)[1]]

    out = []
    for setup in sorted(set(pa) & set(pb)):
        regions = sorted({s.region_name for s in pa[setup]} & {s.region_name for s in pb[setup]},
                         key=lambda r: (r != TOTAL_REGION, r))
        base = baselines.get(setup)
        for region in regions:
            ta, tb = times(pa, setup, region), times(pb, setup, region)
            if not ta or not tb:
                continue
            ba, bb = times(pa, base, region), times(pb, base, region)
            ma, mb = float(np.median(ta)), float(np.median(tb))
            sa: float | None
            sb: float | None
            if base is not None and ba and bb:
                sa, sb = ma / float(np.median(ba)), mb / float(np.median(bb))
                diff = sb - sa
                ci = bootstrap_ci([ta, ba, tb, bb], lambda x, y, u, v: u / v - x / y, seed=seed)
            else:
                sa = sb = None
                diff = mb / ma - 1
                ci = bootstrap_ci([ta, tb], lambda x, u: u / x - 1, seed=seed)
            out.append(SetupComparison(setup, region, ma, mb, sa, sb, diff, ci, verdict(ci)))
    return out
