"""The victim as its own witness (issue 24, item 5).

A cache-sensitive victim's isolated time says which state the shared cache is in: issue 24's
8 MiB chase ran at L3 speed alone (< 80 ns per access) in some blocks, where an LLC-sized
writer on the other vCPU slowed it 2-3x, and at DRAM speed (> 110 ns) in others, where the
same writer slowed it 1.0-1.1x. When a victim's isolated times fall into two clearly separate
states, Δ is reported per state from its own pairs (beside the canary's `by_regime`); when the
two states' Δ differ beyond their CIs, the state with the larger Δ witnesses the cache shared
and the other not shared, and a block whose pairs all lie in one state while the canary said
the opposite regime is flagged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..harness.paired import NOT_SHARED, SHARED, UNKNOWN
from ..harness.stats import PairedResult, compare

FAST, SLOW = "fast", "slow"
# A mixture is clear when each state holds at least this many pairs and this share of them,
# the states' log times are separated by Ashman's D >= SEPARATION_D (2: two modes with little
# overlap), the slow state's median is at least MIN_GAP times the fast one's (issue 24: 35-80
# against 110-140 ns; a settled chase's own spread is 3-8 %), and the valley between them
# (the fast state's p95 to the slow one's p5, in log time) is at least as wide as either
# state's interquartile range: D alone also splits a continuum (halves of a uniform spread
# read D 3.5), which is a drifting host, not two states.
MIN_PER_STATE = 5
MIN_SHARE = 0.1
SEPARATION_D = 2.0
MIN_GAP = 1.3


@dataclass(frozen=True)
class Split:
    """Two states of isolated times: below `threshold` (ns) fast, at or above it slow."""

    threshold: float
    fast_median: float
    slow_median: float
    n_fast: int
    n_slow: int
    separation: float  # Ashman's D of the two states' log times

    def state(self, iso_ns: float) -> str:
        return FAST if iso_ns < self.threshold else SLOW

    def to_dict(self) -> dict:
        return {"threshold_ns": self.threshold, "fast_median_ns": self.fast_median,
                "slow_median_ns": self.slow_median, "n_fast": self.n_fast,
                "n_slow": self.n_slow, "separation_d": self.separation}


def split_states(iso_ns: Sequence[float]) -> Split | None:
    """The two states of a victim's isolated times, or None when they show no clear
    two-state mixture. The cut is the one that best separates the log times (Otsu: the
    largest between-state variance); a cut that leaves a state fewer than its least share
    is no mixture (a tail of disturbed repetitions)."""
    x = np.sort(np.log(np.asarray([t for t in iso_ns if t > 0], dtype=float)))
    n = x.size
    least = max(MIN_PER_STATE, math.ceil(MIN_SHARE * n))
    if n < 2 * least:
        return None
    cuts = np.arange(1, n)
    csum = np.cumsum(x)
    lo_mean = csum[cuts - 1] / cuts
    hi_mean = (csum[-1] - csum[cuts - 1]) / (n - cuts)
    k = int(cuts[np.argmax(cuts * (n - cuts) * (hi_mean - lo_mean) ** 2)])
    if min(k, n - k) < least:
        return None
    lo, hi = x[:k], x[k:]
    spread = math.sqrt((lo.var() + hi.var()) / 2)
    d = math.inf if spread == 0 else (hi.mean() - lo.mean()) / spread
    valley = np.percentile(hi, 5) - np.percentile(lo, 95)
    widest = max(np.subtract(*np.percentile(s, [75, 25])) for s in (lo, hi))
    fast, slow = math.exp(float(np.median(lo))), math.exp(float(np.median(hi)))
    if d < SEPARATION_D or slow < MIN_GAP * fast or valley < widest:
        return None
    return Split(math.exp((lo[-1] + hi[0]) / 2), fast, slow, int(lo.size), int(hi.size), d)


def per_state(pairs: Sequence[tuple[float, float]], split: Split, seed: int = 0
              ) -> dict[str, PairedResult]:
    """Δ of the (isolated, interfered) pairs in each state, by the pair's isolated time."""
    by: dict[str, list[tuple[float, float]]] = {FAST: [], SLOW: []}
    for iso, intf in pairs:
        by[split.state(iso)].append((iso, intf))
    return {state: compare([a for a, _ in ps], [b for _, b in ps], seed=seed)
            for state, ps in by.items() if len(ps) >= 2}


def witnessed_regimes(by_state: dict[str, PairedResult]) -> dict[str, str] | None:
    """The cache regime each victim state witnesses: the state whose Δ CI lies wholly above
    the other's saw the cache shared, the other not; None when the CIs overlap (the states
    differ in speed, not in what the aggressors do to them)."""
    if FAST not in by_state or SLOW not in by_state:
        return None
    fast, slow = by_state[FAST].delta_ci, by_state[SLOW].delta_ci
    if any(math.isnan(v) for v in (*fast, *slow)):
        return None
    if fast[0] > slow[1]:
        return {FAST: SHARED, SLOW: NOT_SHARED}
    if slow[0] > fast[1]:
        return {SLOW: SHARED, FAST: NOT_SHARED}
    return None


def block_witness(iso_ns: Sequence[float], split: Split, regimes: dict[str, str]) -> str:
    """What a block's own pairs witness: the regime of their state when all lie in one."""
    states = {split.state(t) for t in iso_ns}
    return regimes[states.pop()] if len(states) == 1 else UNKNOWN


@dataclass(frozen=True)
class Disagreement:
    block: int
    canary: str
    victim: str
    pairs: int

    def to_dict(self) -> dict:
        return {"block": self.block, "canary": self.canary, "victim": self.victim,
                "pairs": self.pairs}


def disagreements(blocks: Mapping[int, tuple[str, Sequence[float]]], split: Split,
                  regimes: dict[str, str]) -> list[Disagreement]:
    """Blocks (block -> (canary regime, its pairs' isolated times)) where the victim's own
    state witnessed one regime and the canary decided the other."""
    out = []
    for block, (canary, iso) in sorted(blocks.items()):
        seen = block_witness(iso, split, regimes)
        if UNKNOWN not in (seen, canary) and seen != canary:
            out.append(Disagreement(block, canary, seen, len(iso)))
    return out


@dataclass(frozen=True)
class Witness:
    split: Split
    by_state: dict[str, PairedResult]
    regimes: dict[str, str] | None
    disagreements: list[Disagreement]

    def to_dict(self) -> dict:
        return {"split": self.split.to_dict(),
                "by_state": {s: {"n": r.n, "delta": r.delta, "delta_ci": list(r.delta_ci)}
                             for s, r in self.by_state.items()},
                "regimes": self.regimes,
                "disagreements": [d.to_dict() for d in self.disagreements]}


def witness(pairs: Sequence[tuple[float, float, int, str | None]], seed: int = 0
            ) -> Witness | None:
    """The victim's own witness from its pairs (isolated ns, interfered ns, block, the
    canary's regime for that block, None without a canary); None without a clear two-state
    mixture in the isolated times."""
    split = split_states([iso for iso, *_ in pairs])
    if split is None:
        return None
    by_state = per_state([(iso, intf) for iso, intf, *_ in pairs], split, seed)
    regimes = witnessed_regimes(by_state)
    flagged: list[Disagreement] = []
    if regimes is not None:
        blocks: dict[int, tuple[str, list[float]]] = {}
        for iso, _, block, regime in pairs:
            if regime is not None:
                blocks.setdefault(block, (regime, []))[1].append(iso)
        flagged = disagreements(blocks, split, regimes)
    return Witness(split, by_state, regimes, flagged)
