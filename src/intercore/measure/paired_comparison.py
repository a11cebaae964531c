"""Paired comparisons from raw samples: the one place where samples become Δ.

`measure` summarises the samples it just took and `results show` the samples it reads back
from the store, through this same function, so both always report the same numbers.
The metric is thread CPU time: even SCHED_FIFO victims are descheduled on a shared host, and
wall time would count that as interference. Wall time is compared alongside.

A pair is (victim, region, pair number): at most one iso sample and, per aggressor set, at most
one int sample. An iso sample may therefore serve as the baseline of several aggressor sets
measured in the same pair. Int samples whose pair has no iso sample cannot be compared and
are counted as `unpaired`, never silently mixed in; a group with no complete pair at all
yields no comparison (there is nothing to compare).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import InputError
from .sample import Sample
from .stats import PairedResult, compare


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "victim_id": self.victim_id,
            "victim": self.victim,
            "aggressor_set": self.aggressor_set,
            "region": self.region,
            "name": self.region_name,
            **self.result.to_dict(),
            "metric": "thread CPU time",
            "wall": self.wall.to_dict(),
            "max_nivcsw": self.max_nivcsw,
            "cpus": {cond: list(cpus) for cond, cpus in self.cpus.items()},
            "unpaired": self.unpaired,
        }


def _index(samples: Sequence[Sample]
           ) -> tuple[dict[tuple, Sample], dict[tuple, dict[int, Sample]]]:
    """iso samples by (victim, region, pair); int samples by (victim, set, region) -> pair."""
    iso: dict[tuple, Sample] = {}
    intf: dict[tuple, dict[int, Sample]] = defaultdict(dict)
    for s in samples:
        if s.condition == "iso":
            key = (s.victim, s.region, s.pair)
            slot = iso
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


def comparisons(samples: Sequence[Sample], names: dict[int, str] | None = None, *,
                seed: int = 0) -> list[Comparison]:
    """One comparison per (victim, aggressor set, region); `names` maps victim ids to labels."""
    names = names or {}
    iso, intf = _index(samples)
    out = []
    for (victim_id, agg_set, region), by_pair in sorted(intf.items()):
        pairs = [(iso[(victim_id, region, p)], s) for p, s in sorted(by_pair.items())
                 if (victim_id, region, p) in iso]
        if not pairs:
            continue
        iso_s = [a for a, _ in pairs]
        int_s = [b for _, b in pairs]
        out.append(Comparison(
            victim_id=victim_id,
            victim=names.get(victim_id, str(victim_id)),
            aggressor_set=agg_set,
            region=region,
            region_name=int_s[0].region_name,
            result=compare([s.cpu_ns for s in iso_s], [s.cpu_ns for s in int_s], seed=seed),
            wall=compare([s.wall_ns for s in iso_s], [s.wall_ns for s in int_s], seed=seed),
            max_nivcsw=_per_condition(iso_s, int_s, lambda ss: max(s.nivcsw for s in ss)),
            cpus=_per_condition(iso_s, int_s, lambda ss: tuple(sorted({s.cpu for s in ss}))),
            unpaired=len(by_pair) - len(pairs),
        ))
    return out
