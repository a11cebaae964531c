"""Statistics for timing samples and for the paired isolation/interference design.

Pure functions on sequences of numbers (numpy only). Nothing here drops outliers: in
real-time work the tail is the signal, so summaries keep min/max and report tail percentiles
only when there are enough samples to mean something.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

ArrayLike = Sequence[float] | np.ndarray

# Bounds the memory of one bootstrap batch (resamples x n indices) to a few tens of MB.
_BOOTSTRAP_BATCH_CELLS = 2_000_000


def _as_array(values: ArrayLike, what: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional")
    if arr.size == 0:
        raise ValueError(f"{what} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or infinity")
    return arr


def percentile(values: ArrayLike, q: float) -> float:
    """The q-th percentile (q in [0, 100]) with linear interpolation between order statistics."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    return float(np.percentile(_as_array(values), q, method="linear"))


def min_n_for(q: float) -> int:
    """Smallest n for which the q-th percentile is reported: ceil(1 / (1 - q/100)).

    Below it fewer than one sample is expected above the percentile, so the "p99" of a
    handful of runs would only be an interpolation towards the maximum. The fraction
    arithmetic keeps p90 -> 10 and p99.9 -> 1000 exact, where floats would round up.
    """
    if not 0 <= q < 100:
        raise ValueError(f"tail percentile q must be in [0, 100), got {q}")
    return math.ceil(1 / (1 - Fraction(str(q)) / 100))


def _tail(arr: np.ndarray, q: float) -> float | None:
    return float(np.percentile(arr, q)) if arr.size >= min_n_for(q) else None


@dataclass(frozen=True)
class Summary:
    """Distribution of one sample set. None means "insufficient n" (std: n < 2; pXX: see
    min_n_for; cv: no std, or a zero mean)."""

    n: int
    min: float
    median: float
    mean: float
    std: float | None
    cv: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(values: ArrayLike) -> Summary:
    arr = _as_array(values)
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if arr.size >= 2 else None
    cv = std / mean if std is not None and mean != 0 else None
    return Summary(
        n=int(arr.size),
        min=float(arr.min()),
        median=float(np.median(arr)),
        mean=mean,
        std=std,
        cv=cv,
        p90=_tail(arr, 90),
        p99=_tail(arr, 99),
        p999=_tail(arr, 99.9),
        max=float(arr.max()),
    )


def _pairs(iso: ArrayLike, intf: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate a paired sample: element i of both arrays was measured as one pair."""
    a, b = _as_array(iso, "iso"), _as_array(intf, "int")
    if a.size != b.size:
        raise ValueError(f"paired samples differ in length: iso has {a.size}, int has {b.size}")
    if np.any(a <= 0):
        raise ValueError("iso times must be positive (they are ratio denominators)")
    return a, b


def paired_ratios(iso: ArrayLike, intf: ArrayLike) -> np.ndarray:
    """Per-pair slowdown T_int / T_iso."""
    a, b = _pairs(iso, intf)
    return b / a


def delta(iso: ArrayLike, intf: ArrayLike) -> float:
    """Slowdown Δ = median(T_int) / median(T_iso)."""
    a, b = _pairs(iso, intf)
    return float(np.median(b) / np.median(a))


def bootstrap_delta_ci(iso: ArrayLike, intf: ArrayLike, *, confidence: float = 0.95,
                       n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile confidence interval of Δ from a paired bootstrap.

    Each resample draws pair indices with replacement and takes both members of a pair
    together, so drift shared by the two halves of a pair (frequency, neighbours, thermal
    state) cancels in the ratio instead of widening the interval.

    With fewer than 2 pairs every resample equals the sample, which would produce a
    zero-width interval claiming certainty; (nan, nan) is returned instead.
    Deterministic for a given seed and n.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    a, b = _pairs(iso, intf)
    n = a.size
    if n < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    batch = max(1, _BOOTSTRAP_BATCH_CELLS // n)
    deltas = np.empty(n_boot)
    for start in range(0, n_boot, batch):
        stop = min(start + batch, n_boot)
        idx = rng.integers(0, n, size=(stop - start, n))
        deltas[start:stop] = np.median(b[idx], axis=1) / np.median(a[idx], axis=1)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(deltas, [tail, 100 - tail])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class PairedResult:
    """Slowdown of one victim under one aggressor set, from n pairs."""

    n: int
    delta: float
    delta_ci: tuple[float, float]
    paired_median: float
    paired_max: float
    iso: Summary
    int: Summary

    def to_dict(self) -> dict[str, Any]:
        # JSON has no NaN: an interval that could not be computed becomes [null, null].
        lo, hi = (None if math.isnan(x) else x for x in self.delta_ci)
        return {
            "n": self.n,
            "delta": self.delta,
            "delta_ci": [lo, hi],
            "paired_median": self.paired_median,
            "paired_max": self.paired_max,
            "iso": self.iso.to_dict(),
            "int": self.int.to_dict(),
        }


def compare(iso: ArrayLike, intf: ArrayLike, *, confidence: float = 0.95, n_boot: int = 2000,
            seed: int = 0) -> PairedResult:
    ratios = paired_ratios(iso, intf)
    return PairedResult(
        n=int(ratios.size),
        delta=delta(iso, intf),
        delta_ci=bootstrap_delta_ci(iso, intf, confidence=confidence, n_boot=n_boot, seed=seed),
        paired_median=float(np.median(ratios)),
        paired_max=float(ratios.max()),
        iso=summarize(iso),
        int=summarize(intf),
    )


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (e.g. a deadline-miss ratio).

    Unlike the normal approximation it stays inside [0, 1] and is informative at 0 or n
    successes: 0 misses in n jobs gives [0, z²/(n + z²)], the honest "at most about 3.8/n at
    95%" instead of a zero-width claim of perfection.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from scipy.stats import norm  # scipy is slow to import; only this function needs it

    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # The exact ends are 0 and 1 at 0 and n successes; rounding must not move them.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)
