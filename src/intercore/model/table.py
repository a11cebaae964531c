"""The channel table for any k (2 to 10): every set while they are few, patterns beyond.

Up to SETS_LIMIT non-exclusive k-sets the calculus enumerates them and the table has one row
per set (what validation plans from, and what a certifier reads for k = 2). Beyond, the
counts come from the symmetry quotient (counting.py) and the rows are patterns, each standing
for the sets that are the same up to swapping interchangeable initiators. The streaming
writers (stream.py) write every pattern without holding the table in memory.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterator

from .calculus import Problem, build, classify
from .channels import ChannelTable, EvidenceMap, build_pattern_table, build_table
from .counting import Counts, check_k, count
from .platform import Platform

SETS_LIMIT = 100_000


def counts_by_k(problem: Problem, kmax: int) -> Counts:
    check_k(kmax, "--max-k")
    return count(problem, kmax)


def channel_table(platform: Platform, k: int, evidence: EvidenceMap | None = None, *,
                  problem: Problem | None = None, counted: Counts | None = None,
                  patterns: bool | None = None, rows: int = 200,
                  date: datetime | None = None) -> ChannelTable:
    """`patterns`: None chooses (sets while at most SETS_LIMIT), True or False forces."""
    check_k(k)
    problem = problem or build(platform)
    counted = counted if counted is not None and counted.kmax >= k else count(problem, k)
    if patterns is None:
        patterns = counted.at(k)["k_sets"] > SETS_LIMIT
    if not patterns:
        return build_table(classify(problem, k), platform, evidence, date=date)
    return build_pattern_table(problem, platform, counted, k, evidence, rows=rows, date=date)


def iter_rows(platform: Platform, k: int, evidence: EvidenceMap | None = None, *,
              problem: Problem | None = None, counted: Counts | None = None,
              patterns: bool | None = None) -> Iterator[dict]:
    """Every row of the table as a dict with its `kind` (interference, free, redundant),
    built one at a time: what --jsonl and --parquet write."""
    from .channels import ChannelRow, FreeRow, _channel_row, _free_row, pattern_rows

    check_k(k)
    evidence = evidence or {}
    problem = problem or build(platform)
    counted = counted if counted is not None and counted.kmax >= k else count(problem, k)
    if patterns is None:
        patterns = counted.at(k)["k_sets"] > SETS_LIMIT
    if patterns:
        for row in pattern_rows(problem, platform, counted, k, evidence):
            if isinstance(row, ChannelRow):
                yield {"kind": "interference", **row.to_dict()}
            elif isinstance(row, FreeRow):
                yield {"kind": "free", **row.to_dict()}
            else:
                yield {"kind": "redundant", **row}
        return
    analysis = classify(problem, k)
    for n, (members, channel) in enumerate(analysis.interference, start=1):
        row = _channel_row(problem, platform, members, channel, f"C{n}", evidence)
        yield {"kind": "interference", **row.to_dict()}
    for members in analysis.free:
        yield {"kind": "free", **_free_row(problem, platform, members, evidence).to_dict()}
