"""Streaming writers for large channel tables: JSON Lines and Parquet, row by row.

A k = 10 table of a many-core platform has too many rows to build as one document; these
write a header (the stamp and the counts) and then one row at a time. Parquet needs pyarrow
(`pip install 'intercore[parquet]'`); rows go out in row groups of BATCH.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ..base import outputs
from ..base.errors import InputError

BATCH = 10_000


def write_jsonl(path: Path, header: dict[str, Any], rows: Iterable[dict]) -> int:
    """Line 1: {"kind": "header", ...}; then one row per line. Returns the rows written."""
    n = 0
    with outputs.replacing(path) as tmp, open(tmp, "w") as out:
        out.write(json.dumps({"kind": "header", **header}) + "\n")
        for row in rows:
            out.write(json.dumps(row) + "\n")
            n += 1
    return n


# Columns of the Parquet file: every row kind in one flat schema (lists of names as lists).
_COLUMNS = ("kind", "id", "count", "groups", "transactions", "apps", "initiators", "services",
            "components", "legs", "rule", "relies_on", "unverified", "parts")


def _flat(row: dict) -> dict:
    out = {c: row.get(c) for c in _COLUMNS}
    if row.get("parts") is not None:
        out["parts"] = json.dumps(row["parts"])
    out["count"] = row.get("count", 1)
    return out


def write_parquet(path: Path, header: dict[str, Any], rows: Iterable[dict]) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("writing Parquet needs pyarrow: pip install 'intercore[parquet]'",
                         field="--parquet") from None
    names = pa.list_(pa.string())
    schema = pa.schema([("kind", pa.string()), ("id", pa.string()), ("count", pa.int64()),
                        ("groups", names), ("transactions", names), ("apps", names),
                        ("initiators", names), ("services", names), ("components", names),
                        ("legs", names), ("rule", pa.string()), ("relies_on", names),
                        ("unverified", names), ("parts", pa.string())],
                       metadata={b"intercore": json.dumps(header).encode()})
    n = 0
    batch: list[dict] = []
    with outputs.replacing(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for row in rows:
            batch.append(_flat(row))
            if len(batch) == BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                n += len(batch)
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n
