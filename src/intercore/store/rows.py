"""Two pieces every stage's rows need: the time a row is recorded at, and an INSERT of a
row that must be new, where a UNIQUE violation means another process recorded it first."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from typing import Any, Sequence


def now() -> str:
    """The current UTC time as stored in every `*_at` column."""
    return datetime.now(timezone.utc).isoformat()


def insert_new(conn: sqlite3.Connection, sql: str, params: Sequence[Any],
               taken: Exception) -> None:
    """Execute `sql`; a UNIQUE violation raises `taken` instead (the slot went to another
    writer), any other integrity error propagates as it is."""
    try:
        conn.execute(sql, params)
    except sqlite3.IntegrityError as exc:
        if "UNIQUE" in str(exc):
            raise taken from None
        raise
