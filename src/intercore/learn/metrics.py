"""How predictions are scored (docs/learn.md defines each metric).

Δ̂ is the median prediction, Δ̂_safe the calibrated safe one; Δ and Δ_safe are the labels.

  acc@τ           share of regions with |Δ̂ - Δ| / Δ <= τ (τ = 5 %, 10 %)
  overhead acc@τ  share with |Δ̂ - Δ| <= τ · max(Δ - 1, 0.1): the same on the slowdown's
                  excess, which is harder wherever Δ is well above 1
  UR              underestimation rate: share with Δ̂_safe < Δ_safe
  worst miss      max over regions of (Δ_safe - Δ̂_safe) / Δ_safe (0 when none is missed)
  pessimism       mean of Δ̂_safe / Δ_safe - 1
  safe acc@10     share with 0 <= (Δ̂_safe - Δ_safe) / Δ_safe <= 10 %
  spearman        mean over programs with >= 3 regions of the rank correlation of Δ̂ and Δ
                  (programs whose measured Δ are all equal are left out)
  log MAE         mean |log Δ̂ - log Δ|

Spread: a 95 % bootstrap interval of acc@10 resampling whole programs (regions of a
program are not independent).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(a) < 3 or np.ptp(b) == 0 or np.ptp(a) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def _acc(pred: np.ndarray, true: np.ndarray, tol: float) -> np.ndarray:
    return np.abs(pred - true) / true <= tol


def score(pred: ArrayLike, safe_pred: ArrayLike, true: ArrayLike, safe_true: ArrayLike,
          programs: Sequence[str], *, seed: int = 0, boot: int = 1000) -> dict[str, Any]:
    pred, safe_pred = np.asarray(pred, float), np.asarray(safe_pred, float)
    true, safe_true = np.asarray(true, float), np.asarray(safe_true, float)
    n = len(true)
    if n == 0:
        return {"n": 0}
    hit10 = _acc(pred, true, 0.10)
    miss = safe_pred < safe_true
    over = np.abs(pred - true) <= 0.10 * np.maximum(true - 1.0, 0.1)
    safe_rel = (safe_pred - safe_true) / safe_true
    by_prog: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(programs):
        by_prog[p].append(i)
    rhos = [r for idx in by_prog.values()
            if (r := _spearman(pred[idx], true[idx])) is not None]
    # cluster bootstrap of acc@10 over programs
    rng = np.random.default_rng(seed)
    groups = [np.asarray(v) for v in by_prog.values()]
    accs = []
    for _ in range(boot):
        pick = rng.integers(0, len(groups), len(groups))
        idx = np.concatenate([groups[j] for j in pick])
        accs.append(hit10[idx].mean())
    return {
        "n": n,
        "programs": len(by_prog),
        "acc@5": float(_acc(pred, true, 0.05).mean()),
        "acc@10": float(hit10.mean()),
        "acc@10_ci": [float(np.percentile(accs, 2.5)), float(np.percentile(accs, 97.5))],
        "overhead_acc@10": float(over.mean()),
        "log_mae": float(np.mean(np.abs(np.log(pred) - np.log(true)))),
        "underestimation_rate": float(miss.mean()),
        "underestimated": int(miss.sum()),
        "worst_miss": float(max(0.0, -safe_rel.min())),
        "pessimism": float(np.mean(safe_pred / safe_true - 1.0)),
        "safe_acc@10": float(np.mean((safe_rel >= 0) & (safe_rel <= 0.10))),
        "spearman": float(np.mean(rhos)) if rhos else None,
        "spearman_programs": len(rhos),
        "delta_range": [float(true.min()), float(np.median(true)), float(true.max())],
    }
