"""Split-conformal calibration of the safe prediction.

On calibration regions (programs no model was trained on), the score of each is
s = log Δ_safe - log q̂, how far the raw quantile prediction fell short. The offset is the
⌈(n + 1)(1 - α)⌉-th smallest score; Δ̂_safe = max(1, q̂ · exp(offset)). If calibration and
new regions are exchangeable, P(Δ_safe <= Δ̂_safe) >= 1 - α (Vovk et al.; Angelopoulos &
Bates, "A gentle introduction to conformal prediction", 2021). With fewer than
1/α - 1 calibration regions that order statistic does not exist: the offset is then the
largest score and the stated confidence is only n / (n + 1), which the result says.

That guarantee is for regions exchangeable with the calibration ones: programs of the families
the model trained on. A program of an unseen family (every user's) is not: the model errs
more there. For those, the scores come from regions of families a model did not train on
(evaluate.py fits on some training families and scores the others), and the offset is the
largest of the per-family conformal offsets: a new family is covered at 1 - α as long as it
is no harder than the hardest family seen, which with F exchangeable families holds with
probability F / (F + 1) at least. Regions of a family the model did train on get that
family's own offset, from its calibration programs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np


@dataclass(frozen=True)
class Calibration:
    alpha: float
    offset: float  # added to log q̂
    n: int
    confidence: float  # what the offset guarantees under exchangeability: min(1 - α, n/(n+1))
    # "programs": offset from programs of the training families (saved before families were
    # calibrated); "families": offset from families no model saw, for unseen families
    basis: str = "programs"
    families: Mapping[str, float] = field(default_factory=dict)  # seen family -> its offset

    def offset_for(self, family: str | None) -> float:
        return self.families.get(family, self.offset) if family is not None else self.offset

    def apply(self, q: np.ndarray, family: str | None = None) -> np.ndarray:
        return np.maximum(1.0, np.asarray(q, float) * math.exp(self.offset_for(family)))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "families": dict(self.families)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        return cls(float(d["alpha"]), float(d["offset"]), int(d["n"]), float(d["confidence"]),
                   str(d.get("basis", "programs")),
                   {str(k): float(v) for k, v in d.get("families", {}).items()})


def scores(q_pred: np.ndarray, safe_true: np.ndarray) -> np.ndarray:
    """How far each raw quantile prediction fell short, in log."""
    return np.log(np.asarray(safe_true, float)) - np.log(np.asarray(q_pred, float))


def calibrate(q_pred: np.ndarray, safe_true: np.ndarray, alpha: float) -> Calibration:
    return _conformal(scores(q_pred, safe_true), alpha)


def _conformal(scores_: np.ndarray, alpha: float) -> Calibration:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    scores = np.sort(np.asarray(scores_, float))
    n = len(scores)
    if n == 0:
        raise ValueError("no calibration regions")
    k = math.ceil((n + 1) * (1 - alpha))
    if k > n:
        return Calibration(alpha, float(scores[-1]), n, n / (n + 1))
    return Calibration(alpha, float(scores[k - 1]), n, 1 - alpha)


def calibrate_families(unseen: Mapping[str, np.ndarray], seen: Mapping[str, np.ndarray],
                       alpha: float) -> Calibration:
    """Calibration for unseen families from `unseen` (family -> scores of its regions by a
    model that never saw the family), and per seen family from `seen` (family -> scores of
    its calibration regions by the model that trained on it)."""
    per_family = {f: _conformal(s, alpha) for f, s in unseen.items() if len(s)}
    if not per_family:
        raise ValueError("no family to calibrate on")
    hardest = max(per_family.values(), key=lambda c: c.offset)
    own = {f: _conformal(s, alpha).offset for f, s in seen.items() if len(s)}
    return Calibration(alpha, hardest.offset, sum(c.n for c in per_family.values()),
                       min(c.confidence for c in per_family.values()), "families", own)
