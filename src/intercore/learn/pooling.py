"""Labels pooled over the attempts at measuring a program, and when to stop measuring it.

An attempt measures a program once with the paired harness: one victim process, every region
timed in every repetition, the host regime of each block known from the canary probes around
it. On a host whose CPUs share the last-level cache only part of the time, an attempt yields
however many shared-regime pairs the host allowed; a program is measured again, later, until
every region has `target` pairs of the label regime or the bound on attempts is reached. The
attempts' pairs are pooled: a pair never mixes halves of two attempts, and every attempt is a
new process, so the pool also spans several physical placements of the program's pages.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..base.sample import INT, ISO, Sample
from .dataset import Label, make_label

MIXED = "mixed"  # the two halves of a pair ran in blocks of different regimes

# One complete pair of one region: thread CPU time alone, under the aggressor, and the
# regime of the pair.
Pair = tuple[float, float, str]


def region_pairs(samples: Iterable[Sample], region_ids: Sequence[int]
                 ) -> dict[int, list[Pair]]:
    """The complete pairs of each region in the samples of one attempt, in pair order."""
    halves: dict[int, dict[int, dict[str, Sample]]] = {r: {} for r in region_ids}
    for s in samples:
        if s.region in halves:
            halves[s.region].setdefault(s.pair, {})[s.condition] = s
    out: dict[int, list[Pair]] = {}
    for rid, by_pair in halves.items():
        rows = []
        for _, h in sorted(by_pair.items()):
            if ISO in h and INT in h:
                a, b = h[ISO], h[INT]
                regime = (a.regime or "unknown") if a.regime == b.regime else MIXED
                rows.append((float(a.cpu_ns), float(b.cpu_ns), regime))
        out[rid] = rows
    return out


def pool(attempts: Iterable[dict[int, list[Pair]]]) -> dict[int, list[Pair]]:
    """Every attempt's pairs, region by region."""
    out: dict[int, list[Pair]] = {}
    for pairs in attempts:
        for rid, rows in pairs.items():
            out.setdefault(rid, []).extend(rows)
    return out


def regimes(pairs: Sequence[Pair]) -> dict[str, int]:
    return dict(Counter(regime for _, _, regime in pairs))


def kept(pooled: dict[int, list[Pair]], regime: str) -> dict[int, int]:
    """Pairs per region that a label in `regime` may use ("any": all of them)."""
    return {rid: sum(1 for p in rows if regime == "any" or p[2] == regime)
            for rid, rows in pooled.items()}


def labels(pooled: dict[int, list[Pair]], min_pairs: int, regime: str, seed: int = 0
           ) -> dict[int, Label]:
    """A label per region with at least `min_pairs` pairs in `regime`, from those pairs only;
    each label also counts every pair it had per regime, kept or not."""
    out = {}
    for rid, rows in pooled.items():
        use = [p for p in rows if regime == "any" or p[2] == regime]
        if len(use) >= min_pairs:
            out[rid] = make_label([p[0] for p in use], [p[1] for p in use], regime,
                                  regimes(rows), seed=seed)
    return out


@dataclass(frozen=True)
class StopRule:
    """A program is closed once every region has `target` pairs of `regime`, or after
    `max_attempts` attempts, whichever comes first."""

    target: int
    max_attempts: int
    regime: str

    def verdict(self, counts: dict[int, int], attempts: int) -> dict | None:
        """Why to stop now (None: measure again), from the pairs kept per region."""
        fewest = min(counts.values(), default=0)
        if fewest >= self.target:
            return {"reason": "target", "attempts": attempts, "fewest": fewest,
                    "text": f"every region has >= {self.target} {self.regime} pairs after "
                            f"{attempts} attempt(s)"}
        if attempts >= self.max_attempts:
            return {"reason": "bound", "attempts": attempts, "fewest": fewest,
                    "text": f"bound of {self.max_attempts} attempts reached with {fewest} "
                            f"{self.regime} pairs in the poorest region (target "
                            f"{self.target})"}
        return None

    def next_pairs(self, counts: dict[int, int], rate: float, cap: int, floor: int) -> int:
        """Pairs for the next attempt: what the poorest region lacks at `rate` (the recent
        share of pairs in the regime), with a quarter more, within [floor, cap]."""
        missing = max(0, self.target - min(counts.values(), default=0))
        want = math.ceil(1.25 * missing / max(rate, 0.05))
        return max(floor, min(cap, want))


def kept_rate(summaries: Sequence[dict], regime: str, floor: float = 0.05) -> float:
    """The share of pairs in `regime` over recent attempts (their `pairs` by regime)."""
    got = total = 0
    for s in summaries:
        pairs = s.get("pairs", {})
        got += pairs.get(regime, 0) if regime != "any" else sum(pairs.values())
        total += sum(pairs.values())
    return max(floor, got / total) if total else 1.0
