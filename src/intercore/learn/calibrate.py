"""Split-conformal calibration of the safe prediction.

On calibration regions (programs no model was trained on), the score of each is
s = log Δ_safe - log q̂, how far the raw quantile prediction fell short. The offset is the
⌈(n + 1)(1 - α)⌉-th smallest score; Δ̂_safe = max(1, q̂ · exp(offset)). If calibration and
new regions are exchangeable, P(Δ_safe <= Δ̂_safe) >= 1 - α (Vovk et al.; Angelopoulos &
Bates, "A gentle introduction to conformal prediction", 2021). With fewer than
1/α - 1 calibration regions that order statistic does not exist: the offset is then the
largest score and the stated confidence is only n / (n + 1), which the result says.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Calibration:
    alpha: float
    offset: float  # added to log q̂
    n: int
    confidence: float  # what the offset guarantees under exchangeability: min(1 - α, n/(n+1))

    def apply(self, q: np.ndarray) -> np.ndarray:
        return np.maximum(1.0, np.asarray(q, float) * math.exp(self.offset))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        return cls(float(d["alpha"]), float(d["offset"]), int(d["n"]), float(d["confidence"]))


def calibrate(q_pred: np.ndarray, safe_true: np.ndarray, alpha: float) -> Calibration:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    scores = np.sort(np.log(np.asarray(safe_true, float)) - np.log(np.asarray(q_pred, float)))
    n = len(scores)
    if n == 0:
        raise ValueError("no calibration regions")
    k = math.ceil((n + 1) * (1 - alpha))
    if k > n:
        return Calibration(alpha, float(scores[-1]), n, n / (n + 1))
    return Calibration(alpha, float(scores[k - 1]), n, 1 - alpha)
