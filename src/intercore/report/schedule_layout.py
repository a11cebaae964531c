"""Where the samples of an interleaved measurement sit in time, for the timeline.

The harness (measure/harness/paired.py) stores, per sample, its block and the block's start
(ns since the run started), and per block its aggressor set, start, end and regime (the invocation's
summary, `design.blocks`). It does not store when each repetition started, only how long it
took, nor where a region began within its repetition. So repetitions are laid out in rep
order from their block's start with the block's idle time (toggling and parking aggressors
between repetitions) spread evenly before each, and a repetition's regions end to end from
its start in region order, cut at the repetition's end. Both are marked as placed, not
measured, wherever they are shown. Pure functions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from ..base.sample import INT, Sample

TOTAL_REGION = 0  # region 0 is the whole repetition


@dataclass(frozen=True)
class BlockSpan:
    """One block of the schedule: the aggressor set whose turn it was. `end_ns` is None when
    the store holds no block record (the block then ends where its repetitions do)."""

    index: int
    aggressor_set: str
    start_ns: int
    end_ns: int | None
    regime: str | None
    round: int | None = None
    pairs: int | None = None
    bytes_moved: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RegionSpan:
    sample: Sample
    start_ns: float
    dur_ns: float


@dataclass(frozen=True)
class RepSpan:
    """One repetition of a victim, placed (see the module's docstring)."""

    total: Sample
    start_ns: float
    dur_ns: float
    regions: tuple[RegionSpan, ...]

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.dur_ns


def blocks(samples: Iterable[Sample], records: Sequence[Mapping[str, Any]] = ()
           ) -> list[BlockSpan]:
    """The blocks in schedule order: from the harness's block records when the invocation
    kept them, else from the samples (a block's set is that of its interfered samples)."""
    if records:
        return [BlockSpan(int(b["index"]), str(b["aggressor_set"]), int(b["start_ns"]),
                          int(b["end_ns"]), b.get("regime"), b.get("round"), b.get("pairs"),
                          dict(b.get("bytes_moved") or {}))
                for b in sorted(records, key=lambda b: b["start_ns"])]
    found: dict[int, dict[str, Any]] = {}
    for s in samples:
        if s.block is None or s.block_start_ns is None:
            continue
        b = found.setdefault(s.block, {"start": s.block_start_ns, "set": "", "regime": s.regime})
        if s.condition == INT:
            b["set"] = s.aggressor_set
    return [BlockSpan(index, b["set"], b["start"], None, b["regime"])
            for index, b in sorted(found.items(), key=lambda kv: kv[1]["start"])]


def repetitions(samples: Iterable[Sample], spans: Sequence[BlockSpan]) -> list[RepSpan]:
    """Every repetition of every victim with its regions, placed in its block."""
    by_rep: dict[tuple[int, int], list[Sample]] = defaultdict(list)
    for s in samples:
        if s.block is not None and s.block_start_ns is not None:
            by_rep[(s.victim, s.rep)].append(s)
    in_block: dict[tuple[int, int | None], list[list[Sample]]] = defaultdict(list)
    for (victim, _rep), found in sorted(by_rep.items()):
        if any(s.region == TOTAL_REGION for s in found):
            in_block[(victim, found[0].block)].append(found)
    ends: dict[int | None, int | None] = {b.index: b.end_ns for b in spans}
    out = []
    for (_, block), reps in in_block.items():
        totals = [next(s for s in rep if s.region == TOTAL_REGION) for rep in reps]
        start = totals[0].block_start_ns
        assert start is not None  # only samples with a block start are kept above
        busy = sum(t.wall_ns for t in totals)
        end = ends.get(block)
        gap = max(0.0, (end - start - busy) / len(reps)) if end is not None else 0.0
        at = float(start)
        for rep, total in zip(reps, totals):
            at += gap
            out.append(RepSpan(total, at, float(total.wall_ns),
                               _regions(rep, at, at + total.wall_ns)))
            at += total.wall_ns
    return sorted(out, key=lambda r: r.start_ns)


def _regions(rep: Sequence[Sample], start: float, end: float) -> tuple[RegionSpan, ...]:
    out = []
    at = start
    for s in sorted((s for s in rep if s.region != TOTAL_REGION), key=lambda s: s.region):
        if at >= end:
            break
        dur = min(float(s.wall_ns), end - at)
        out.append(RegionSpan(s, at, dur))
        at += dur
    return tuple(out)


def closed(spans: Sequence[BlockSpan], reps: Sequence[RepSpan]) -> list[BlockSpan]:
    """The blocks with an end each: a block without a record ends with its last
    repetition."""
    last: dict[int | None, float] = {}
    for r in reps:
        block = r.total.block
        last[block] = max(last.get(block, r.end_ns), r.end_ns)
    return [b if b.end_ns is not None else
            replace(b, end_ns=int(last.get(b.index, b.start_ns))) for b in spans]


def regime_runs(spans: Sequence[BlockSpan]) -> list[tuple[str, int, int, int]]:
    """Consecutive blocks of one regime as (regime, start, end, blocks); `spans` closed."""
    out: list[tuple[str, int, int, int]] = []
    for b in spans:
        regime = b.regime or "unknown"
        end = b.end_ns if b.end_ns is not None else b.start_ns
        if out and out[-1][0] == regime:
            out[-1] = (regime, out[-1][1], end, out[-1][3] + 1)
        else:
            out.append((regime, b.start_ns, end, 1))
    return out
