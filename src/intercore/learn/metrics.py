"""How predictions are scored (docs/learn.md defines each metric).

Δ̂ is the median prediction, Δ̂_safe the calibrated safe one; Δ and Δ_safe are the labels.
A heatmap's job is to order a program's regions, so the ranking metrics lead:

  rho within      median over programs (>= 3 regions, measured Δ not all equal) of the
                  Spearman correlation of Δ̂ and Δ among the program's regions
  rho across      Spearman of Δ̂ and Δ over every region
  top-k recall    mean over programs with more than k regions (measured Δ not all equal) of
                  |predicted top k ∩ measured top k| / k; the measured top k holds every region
                  tied with the k-th largest Δ, and ties in Δ̂ are broken against the truth
  acc@τ           share of regions with |Δ̂ - Δ| / Δ <= τ (τ = 5 %, 10 %)
  MAPE            mean |Δ̂ - Δ| / Δ
  exceedance      share of regions whose safe bound is exceeded: Δ̂_safe < Δ_safe
  overhead acc@τ  share with |Δ̂ - Δ| <= τ · max(Δ - 1, 0.1)
  worst miss      max over regions of (Δ_safe - Δ̂_safe) / Δ_safe (0 when none is missed)
  pessimism       mean of Δ̂_safe / Δ_safe - 1
  safe acc@10     share with 0 <= (Δ̂_safe - Δ_safe) / Δ_safe <= 10 %
  log MAE         mean |log Δ̂ - log Δ|

A predictor that gives every region of a program the same Δ̂ claims no order: its ρ there is
0 and its top-k the worst the ties allow, never an undefined value that would drop it from
the comparison.

Spread: 95 % bootstrap intervals resampling whole programs (regions of a program are not
independent); two learners are compared by a paired bootstrap of the difference, both scored
on the same resampled programs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

MIN_RHO_REGIONS = 3
TOP_K = (1, 3)
CI_LEVEL = 0.95
# The metrics with a bootstrap interval, and which way is better.
HIGHER_IS_BETTER = {"rho_within": True, "rho_across": True, "top1": True, "top3": True,
                    "acc@10": True, "mape": False, "exceedance": False}


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def spearman(pred: Sequence[float], true: Sequence[float]) -> float | None:
    """Rank correlation (average ranks for ties); None where the truth has no order to
    recover (fewer than two regions or all Δ equal), 0 where the prediction claims none."""
    p, t = np.asarray(pred, float), np.asarray(true, float)
    if len(t) < 2 or np.ptp(t) == 0:
        return None
    if np.ptp(p) == 0:
        return 0.0
    return float(np.corrcoef(_ranks(p), _ranks(t))[0, 1])


def top_k_recall(pred: Sequence[float], true: Sequence[float], k: int) -> float | None:
    """Share of the k regions predicted most sensitive that are among the measured most
    sensitive; None where every choice of k would be right (k or fewer regions, or all Δ
    equal)."""
    p, t = np.asarray(pred, float), np.asarray(true, float)
    if len(t) <= k or np.ptp(t) == 0:
        return None
    relevant = t >= np.sort(t)[::-1][k - 1]
    chosen = np.lexsort((t, -p))[:k]  # by Δ̂ descending; among equal Δ̂, smallest Δ first
    return float(relevant[chosen].sum() / k)


def _top_k_of(pred: np.ndarray, true: np.ndarray, k: int, group: np.ndarray) -> float | None:
    return top_k_recall(pred[group], true[group], k)


def program_groups(programs: Sequence[str]) -> list[np.ndarray]:
    """Region indices of each program, programs in order of first appearance."""
    index: dict[str, list[int]] = {}
    for i, p in enumerate(programs):
        index.setdefault(p, []).append(i)
    return [np.asarray(v) for v in index.values()]


@dataclass
class Scored:
    """One learner's predictions on the test regions, cut into the quantities the bootstrap
    recombines: per-program values and per-program sums of per-region indicators."""

    med: np.ndarray
    true: np.ndarray
    groups: list[np.ndarray]
    per_program: dict[str, np.ndarray]  # NaN where a program has no value
    sums: dict[str, np.ndarray]         # per program, of the per-region quantity
    counts: np.ndarray

    @classmethod
    def of(cls, med, safe, true, safe_true, programs: Sequence[str]) -> Scored:
        med, safe = np.asarray(med, float), np.asarray(safe, float)
        true, safe_true = np.asarray(true, float), np.asarray(safe_true, float)
        groups = program_groups(programs)

        def each(fn: Callable[[np.ndarray], float | None]) -> np.ndarray:
            return np.array([np.nan if (v := fn(g)) is None else v for g in groups])

        per_program = {
            "rho_within": each(lambda g: spearman(med[g], true[g])
                               if len(g) >= MIN_RHO_REGIONS else None),
            **{f"top{k}": each(functools.partial(_top_k_of, med, true, k)) for k in TOP_K}}
        ape = np.abs(med - true) / true
        region = {"acc@10": ape <= 0.10, "mape": ape, "exceedance": safe < safe_true}
        sums = {name: np.array([v[g].sum() for g in groups], float) for name, v in region.items()}
        return cls(med, true, groups, per_program, sums, np.array([len(g) for g in groups]))

    def value(self, name: str, pick: np.ndarray | None = None) -> float | None:
        """The metric over the programs `pick` (indices into the groups, repeats allowed;
        None: every program once)."""
        pick = np.arange(len(self.groups)) if pick is None else pick
        if name in self.per_program:
            vals = self.per_program[name][pick]
            vals = vals[~np.isnan(vals)]
            if not len(vals):
                return None
            return float(np.median(vals) if name == "rho_within" else np.mean(vals))
        if name == "rho_across":
            idx = np.concatenate([self.groups[j] for j in pick])
            return spearman(self.med[idx], self.true[idx])
        return float(self.sums[name][pick].sum() / self.counts[pick].sum())

    def programs_with(self, name: str) -> int:
        return int(np.sum(~np.isnan(self.per_program[name])))


def _picks(n_programs: int, seed: int, boot: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_programs, (boot, n_programs))


def _interval(samples: list[float | None]) -> list[float] | None:
    got = [s for s in samples if s is not None]
    if len(got) < len(samples) / 2:  # the metric is undefined on most resamples
        return None
    tail = 100 * (1 - CI_LEVEL) / 2
    return [float(np.percentile(got, tail)), float(np.percentile(got, 100 - tail))]


def intervals(s: Scored, *, seed: int = 0, boot: int = 1000) -> dict[str, list[float] | None]:
    picks = _picks(len(s.groups), seed, boot)
    return {name: _interval([s.value(name, p) for p in picks]) for name in HIGHER_IS_BETTER}


def paired_difference(a: Scored, b: Scored, name: str, *, seed: int = 0, boot: int = 1000
                      ) -> dict[str, Any]:
    """a's metric minus b's, with the bootstrap interval of the difference over programs (the
    same resampled programs for both: the two learners were scored on the same regions)."""
    if len(a.groups) != len(b.groups) or not all(
            np.array_equal(x, y) for x, y in zip(a.groups, b.groups)):
        raise ValueError("paired comparison of learners scored on different regions")
    va, vb = a.value(name), b.value(name)
    diffs = [None if (x := a.value(name, p)) is None or (y := b.value(name, p)) is None
             else x - y for p in _picks(len(a.groups), seed, boot)]
    return {"metric": name, "difference": None if va is None or vb is None else va - vb,
            "ci": _interval(diffs)}


def score(pred: ArrayLike, safe_pred: ArrayLike, true: ArrayLike, safe_true: ArrayLike,
          programs: Sequence[str], *, seed: int = 0, boot: int = 1000) -> dict[str, Any]:
    pred, safe_pred = np.asarray(pred, float), np.asarray(safe_pred, float)
    true, safe_true = np.asarray(true, float), np.asarray(safe_true, float)
    n = len(true)
    if n == 0:
        return {"n": 0}
    s = Scored.of(pred, safe_pred, true, safe_true, programs)
    safe_rel = (safe_pred - safe_true) / safe_true
    miss = safe_pred < safe_true
    return {
        "n": n,
        "programs": len(s.groups),
        **{name: s.value(name) for name in HIGHER_IS_BETTER},
        "rho_within_programs": s.programs_with("rho_within"),
        **{f"top{k}_programs": s.programs_with(f"top{k}") for k in TOP_K},
        "ci": intervals(s, seed=seed, boot=boot),
        "acc@5": float(np.mean(np.abs(pred - true) / true <= 0.05)),
        "overhead_acc@10": float(np.mean(np.abs(pred - true)
                                         <= 0.10 * np.maximum(true - 1.0, 0.1))),
        "log_mae": float(np.mean(np.abs(np.log(pred) - np.log(true)))),
        "exceeded": int(miss.sum()),
        "worst_miss": float(max(0.0, -safe_rel.min())),
        "pessimism": float(np.mean(safe_pred / safe_true - 1.0)),
        "safe_acc@10": float(np.mean((safe_rel >= 0) & (safe_rel <= 0.10))),
        "delta_range": [float(true.min()), float(np.median(true)), float(true.max())],
    }
