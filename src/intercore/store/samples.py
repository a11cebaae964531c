"""The `samples` and `counters` tables: the raw samples of an invocation (base/sample.py).

Columns are named after the Sample's fields (sample.COLUMNS), so a field added to the record
is written and read here without a change; only its migration is new.
"""

from __future__ import annotations

import sqlite3
from typing import Callable, Sequence

from ..base.sample import COLUMNS, Sample

# Samples are inserted in batches; `progress` is called after each one.
BATCH = 1000

Progress = Callable[[int, int], None]

_INSERT = (f"INSERT INTO samples (id, invocation_id, victim_id, {', '.join(COLUMNS)}) "
           f"VALUES ({', '.join('?' * (3 + len(COLUMNS)))})")
_SELECT = (f"SELECT id, victim_id, {', '.join(COLUMNS)} FROM samples WHERE invocation_id = ? "
           "ORDER BY id")


def insert(conn: sqlite3.Connection, invocation_id: int, workload_ids: Sequence[int],
           samples: Sequence[Sample], progress: Progress | None = None) -> None:
    """Write `samples` of one invocation; each names its victim by index into workload_ids.
    Call inside the invocation's write transaction."""
    # Ids are assigned here rather than read back row by row so counters can be batched;
    # BEGIN IMMEDIATE holds the write lock, so no other writer can take these ids.
    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM samples").fetchone()[0]
    total = len(samples)
    for start in range(0, total, BATCH):
        batch = samples[start:start + BATCH]
        ids = range(next_id + start, next_id + start + len(batch))
        conn.executemany(_INSERT, [
            (sid, invocation_id, workload_ids[s.victim], *(getattr(s, c) for c in COLUMNS))
            for sid, s in zip(ids, batch)])
        conn.executemany(
            "INSERT INTO counters (sample_id, name, value) VALUES (?, ?, ?)",
            [(sid, name, value) for sid, s in zip(ids, batch)
             for name, value in s.counters.items()])
        if progress is not None:
            progress(start + len(batch), total)


def of_invocation(conn: sqlite3.Connection, invocation_id: int) -> list[Sample]:
    """The samples of one invocation in the order they were written; `victim` is the
    victim's workload row id."""
    counters: dict[int, dict[str, float]] = {}
    for sid, name, value in conn.execute(
            "SELECT c.sample_id, c.name, c.value FROM counters c "
            "JOIN samples s ON s.id = c.sample_id WHERE s.invocation_id = ?",
            (invocation_id,)):
        counters.setdefault(sid, {})[name] = value
    rows = conn.execute(_SELECT, (invocation_id,))
    return [Sample(row[1], **dict(zip(COLUMNS, row[2:])), counters=counters.get(row[0], {}))
            for row in rows]
