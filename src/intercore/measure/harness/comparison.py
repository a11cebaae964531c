"""Paired comparisons from raw samples: the one place where samples become Δ.

`measure` summarises the samples it just took and `results show` the samples it reads back
from the store, through this same function, so both always report the same numbers.
The metric is thread CPU time: even SCHED_FIFO victims are descheduled on a shared host, and
wall time would count that as interference. Wall time is compared alongside.

A pair's metric is thread CPU time, or wall time for samples taken with the wall-clock
markers (`clock` "wall"), whose descheduled repetitions are discarded with their pair.
Results are stratified by the host regime each pair's block was measured in (`by_regime`);
`regime=` restricts the headline estimate to one regime. Where the victim's isolated times
fall into two clear states, `witness` gives Δ per state from the victim's own pairs and the
blocks where its state witnessed the opposite of the canary's regime (measure/regime/witness.py).

A pair is (victim, region, pair number): at most one iso sample and, per aggressor set, at most
one int sample. An iso sample may therefore serve as the baseline of several aggressor sets
measured in the same pair. Int samples whose pair has no iso sample cannot be compared and
are counted as `unpaired`, never silently mixed in; a group with no complete pair at all
yields no comparison (there is nothing to compare).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ...base.errors import InputError
from ...base.sample import Sample
from .stats import PairedResult, compare, summarize
from ..regime.witness import Witness, witness


@dataclass(frozen=True)
class Comparison:
    """One victim region under one aggressor set; times in ns. The dicts are keyed by
    condition ('iso', 'int'): preemptions or migrations seen only under interference point at
    the scheduler rather than at the shared cache or memory. `result` compares thread CPU
    time, `wall` wall-clock time."""

    victim_id: int
    victim: str
    aggressor_set: str
    region: int
    region_name: str
    result: PairedResult
    wall: PairedResult
    max_nivcsw: dict[str, int]
    cpus: dict[str, tuple[int, ...]]
    unpaired: int
    by_regime: dict[str, PairedResult] = field(default_factory=dict)
    regime: str | None = None  # the regime the headline estimate is restricted to
    clock: str = "cpu"
    discarded: int = 0         # pairs dropped because a half was descheduled (wall clock)
    flag: str | None = None    # why Δ cannot be read as it stands (CI below 1)
    witness: Witness | None = None  # Δ per state of the victim's own isolated times

    @property
    def metric(self) -> str:
        return "wall clock (descheduled repetitions discarded)" if self.clock == "wall" \
            else "thread CPU time"

    def to_dict(self) -> dict[str, Any]:
        return {
            "victim_id": self.victim_id,
            "victim": self.victim,
            "aggressor_set": self.aggressor_set,
            "region": self.region,
            "name": self.region_name,
            **self.result.to_dict(),
            "metric": self.metric,
            "clock": self.clock,
            "regime": self.regime,
            "by_regime": {k: _regime_row(v) for k, v in self.by_regime.items()},
            "flag": self.flag,
            "witness": self.witness.to_dict() if self.witness else None,
            "discarded": self.discarded,
            "wall": self.wall.to_dict(),
            "max_nivcsw": self.max_nivcsw,
            "cpus": {cond: list(cpus) for cond, cpus in self.cpus.items()},
            "unpaired": self.unpaired,
        }


def _regime_row(r: PairedResult) -> dict[str, Any]:
    d = r.to_dict()
    return {k: d[k] for k in ("n", "delta", "delta_ci", "paired_median", "paired_max")}


def below_one_cause(iso: Sequence[Sample], intf: Sequence[Sample],
                    result: PairedResult) -> str | None:
    """None unless Δ's whole CI lies below 1 (the interfered half *faster*); then the most
    likely cause, read from the samples. Aggressors do not speed a victim up: such a Δ is
    host noise that landed on the isolated halves, and must not be read as a slowdown < 1."""
    hi = result.delta_ci[1]
    if math.isnan(hi) or hi >= 1:
        return None
    head = f"Δ {result.delta:.3f} with its CI below 1: the isolated half ran slower"
    sw = {c: sum(s.nivcsw > 0 for s in ss) for c, ss in (("iso", iso), ("int", intf))}
    if sw["iso"] > sw["int"]:
        return (f"{head}; {sw['iso']} isolated vs {sw['int']} interfered repetitions were "
                "preempted (nivcsw): host noise in the isolated half")
    regimes = {s.regime for s in iso} | {s.regime for s in intf}
    if len(regimes - {None}) > 1:
        return (f"{head}; the pairs span regimes {sorted(r for r in regimes if r)}: compare "
                "within one regime (--regime)")
    cv = {c: summarize([_metric(s) for s in ss]).cv for c, ss in (("iso", iso), ("int", intf))}
    if cv["iso"] and cv["int"] and cv["iso"] > 1.5 * cv["int"]:
        return (f"{head}; the isolated times vary {cv['iso']:.1%} against {cv['int']:.1%}: "
                "host noise in the isolated half")
    return (f"{head}; likely host noise in the isolated half (other tenants, frequency), or "
            "an aggressor that helps the victim (prefetch, frequency boost): not a slowdown")


def _index(samples: Sequence[Sample]
           ) -> tuple[dict[tuple, Sample], dict[tuple, dict[int, Sample]]]:
    """iso samples by (victim, region, pair); int samples by (victim, set, region) -> pair."""
    iso: dict[tuple, Sample] = {}
    intf: dict[tuple, dict[int, Sample]] = defaultdict(dict)
    for s in samples:
        if s.condition == "iso":
            key: tuple | int = (s.victim, s.region, s.pair)
            slot: dict = iso
        else:
            key, slot = s.pair, intf[(s.victim, s.aggressor_set, s.region)]
        if key in slot:
            raise InputError(f"two {s.condition} samples for "
                             f"victim {s.victim}, region {s.region}, pair {s.pair}"
                             + (f", aggressor set {s.aggressor_set}" if s.aggressor_set else ""))
        slot[key] = s
    return iso, intf


Of = Callable[[list[Sample]], Any]


def _per_condition(iso: list[Sample], intf: list[Sample], fn: Of) -> dict[str, Any]:
    return {"iso": fn(iso), "int": fn(intf)}


def _metric(s: Sample) -> int:
    return s.wall_ns if s.clock == "wall" else s.cpu_ns


def _compare(pairs: list[tuple[Sample, Sample]], seed: int) -> PairedResult:
    return compare([_metric(a) for a, _ in pairs], [_metric(b) for _, b in pairs], seed=seed)


def comparisons(samples: Sequence[Sample], names: dict[int, str] | None = None, *,
                seed: int = 0, regime: str | None = None) -> list[Comparison]:
    """One comparison per (victim, aggressor set, region); `names` maps victim ids to labels.
    With `regime`, the headline result uses only pairs measured in that regime (by_regime
    always has them all); a group with no such pair yields no comparison."""
    names = names or {}
    iso, intf = _index(samples)
    # A wall-clock repetition that was descheduled (seen on region 0) is discarded whole.
    gone = {(s.victim, s.rep) for s in samples if s.descheduled}
    out = []
    for (victim_id, agg_set, region), by_pair in sorted(intf.items()):
        complete = [(iso[(victim_id, region, p)], s) for p, s in sorted(by_pair.items())
                    if (victim_id, region, p) in iso]
        pairs = [(a, b) for a, b in complete
                 if not gone or ((victim_id, a.rep) not in gone
                                 and (victim_id, b.rep) not in gone)]
        strata: dict[str, list[tuple[Sample, Sample]]] = defaultdict(list)
        for a, b in pairs:
            if b.regime is not None:
                strata[b.regime].append((a, b))
        chosen = strata.get(regime, []) if regime is not None else pairs
        if not chosen:
            continue
        iso_s = [a for a, _ in chosen]
        int_s = [b for _, b in chosen]
        result = _compare(chosen, seed)
        out.append(Comparison(
            victim_id=victim_id,
            victim=names.get(victim_id, str(victim_id)),
            aggressor_set=agg_set,
            region=region,
            region_name=int_s[0].region_name,
            result=result,
            wall=compare([s.wall_ns for s in iso_s], [s.wall_ns for s in int_s], seed=seed),
            max_nivcsw=_per_condition(iso_s, int_s, lambda ss: max(s.nivcsw for s in ss)),
            cpus=_per_condition(iso_s, int_s, lambda ss: tuple(sorted({s.cpu for s in ss}))),
            unpaired=len(by_pair) - len(complete),
            by_regime={k: _compare(v, seed) for k, v in sorted(strata.items())},
            regime=regime,
            clock=int_s[0].clock,
            discarded=len(complete) - len(pairs),
            flag=below_one_cause(iso_s, int_s, result),
            witness=witness([(_metric(a), _metric(b), b.block, b.regime) for a, b in pairs],
                            seed),
        ))
    return out
