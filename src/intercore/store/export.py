"""Flat exports of raw samples: one row per sample, with its invocation, victim and host.

Counters become one column each, named `counter.NAME`, empty where a sample lacks one; the
set of counter columns is the union over the exported samples. A table (Store.export_table,
Campaigns.export_table) is written as CSV or Parquet by write_csv / write_parquet.
"""

from __future__ import annotations

import csv
import sqlite3
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from ..base import outputs
from ..base.errors import HostUnsupported, InputError
from ..base import sample

# Each sample's context, then the sample's own fields (base/sample.py), as they are named
# there.
COLUMNS = (
    "invocation_id", "command", "started_at", "status", "tool_version",
    "host_fingerprint", "hostname", "kernel", "cpu_model",
    "victim_id", "victim_name", "victim_kind", "victim_cpu",
    "sample_id", *sample.COLUMNS,
)

_SELECT = (
    "SELECT i.id, i.command, i.started_at, i.status, i.tool_version, "
    "h.fingerprint, h.hostname, h.kernel, h.cpu_model, "
    "w.id, w.name, w.kind, w.cpu, "
    f"s.id, {', '.join('s.' + c for c in sample.COLUMNS)} "
    "FROM samples s JOIN invocations i ON i.id = s.invocation_id "
    "JOIN hosts h ON h.id = i.host_id JOIN workloads w ON w.id = s.victim_id"
)


def _where(invocation_ids: Sequence[int] | None) -> tuple[str, list[int]]:
    if invocation_ids is None:
        return "", []
    return f" WHERE s.invocation_id IN ({', '.join('?' * len(invocation_ids))})", \
        list(invocation_ids)


# A header and its rows, produced as they are written.
Table = tuple[list[str], Iterator[tuple[Any, ...]]]


def sample_table(conn: sqlite3.Connection, invocation_ids: Sequence[int] | None) -> Table:
    """Header and rows of an export; unknown invocation ids are an InputError."""
    if invocation_ids is not None:
        missing = [i for i in invocation_ids if conn.execute(
            "SELECT 1 FROM invocations WHERE id = ?", (i,)).fetchone() is None]
        if missing:
            raise InputError(f"no invocation with id {', '.join(map(str, missing))}")
    where, args = _where(invocation_ids)
    counters: dict[int, dict[str, float]] = {}
    for sid, name, value in conn.execute(
            "SELECT c.sample_id, c.name, c.value FROM counters c "
            f"JOIN samples s ON s.id = c.sample_id{where}", args):
        counters.setdefault(sid, {})[name] = value
    names = sorted({name for values in counters.values() for name in values})
    sample_id_col = COLUMNS.index("sample_id")

    def rows() -> Iterator[tuple[Any, ...]]:
        for row in conn.execute(f"{_SELECT}{where} ORDER BY s.id", args):
            extra = counters.get(row[sample_id_col], {})
            yield (*row, *(extra.get(name) for name in names))

    return [*COLUMNS, *(f"counter.{name}" for name in names)], rows()


@contextmanager
def _stream(target: str | Path | TextIO) -> Iterator[TextIO]:
    if not isinstance(target, (str, Path)):
        yield target
        return
    with outputs.replacing(target) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        yield f


def write_csv(table: Table, target: str | Path | TextIO) -> int:
    """Write the table to a path, or to an open text stream ('-' means stdout); returns the
    number of rows."""
    header, rows = table
    if target == "-":
        target = sys.stdout
    count = 0
    with _stream(target) as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def write_parquet(table: Table, path: str | Path) -> int:
    """As write_csv, as a Parquet file; needs pyarrow (the `parquet` extra)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        # No brackets in the message: the CLI prints errors as rich markup.
        raise HostUnsupported("Parquet export needs pyarrow, which is not installed: "
                              "pip install pyarrow (or install intercore with its 'parquet' "
                              "extra)") from exc
    header, rows = table
    columns = list(zip(*rows)) or [()] * len(header)
    arrow = pa.table({name: list(values) for name, values in zip(header, columns)})
    with outputs.replacing(path) as tmp:
        pq.write_table(arrow, str(tmp))
    return arrow.num_rows
