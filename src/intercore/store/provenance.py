"""Where merged rows came from (schema: store/schema.py, `_MERGE`).

`intercore results merge` (store/merge.py) gives every invocation and campaign it brings into a
store an origin row: the store file it was first recorded in (the absolute path at the time of
the merge) and its id there. A merge of a merged store carries the first origin on, so an
invocation names the store that measured it however many merges it went through. Its host
needs no origin: hosts are identified by fingerprint in every store. Samples, workloads, jobs,
verdicts and a done campaign run belong to their invocation, so they share its origin.
A row without an origin was recorded in this store itself.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from .rows import now


@dataclass(frozen=True)
class Origin:
    """The store an invocation or a campaign was first recorded in, and its id there."""

    store: str
    origin_id: int
    merged_at: datetime
    origin_name: str | None = None  # a campaign's name there (a merge may rename it)

    def to_dict(self) -> dict:
        out = {"store": self.store, "id": self.origin_id, "merged_at": self.merged_at.isoformat()}
        if self.origin_name is not None:
            out["name"] = self.origin_name
        return out


@dataclass(frozen=True)
class OriginAttachment:
    """Store.record() attachment: the origin of a merged invocation, in its transaction."""

    store: str
    origin_id: int

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        conn.execute("INSERT INTO invocation_origins (invocation_id, store, origin_id, "
                     "merged_at) VALUES (?, ?, ?, ?)",
                     (invocation_id, self.store, self.origin_id, now()))


class Origins:
    """The origin rows of one store (Store.origins)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def of_invocation(self, invocation_id: int) -> Origin | None:
        row = self._conn.execute(
            "SELECT store, origin_id, merged_at FROM invocation_origins WHERE invocation_id = ?",
            (invocation_id,)).fetchone()
        return None if row is None else Origin(row[0], row[1], datetime.fromisoformat(row[2]))

    def of_campaign(self, campaign_id: int) -> Origin | None:
        row = self._conn.execute(
            "SELECT store, origin_id, merged_at, origin_name FROM campaign_origins "
            "WHERE campaign_id = ?", (campaign_id,)).fetchone()
        return None if row is None else Origin(row[0], row[1], datetime.fromisoformat(row[2]),
                                               row[3])

    def add_campaign(self, campaign_id: int, store: str, origin_id: int,
                     origin_name: str | None) -> None:
        self._conn.execute("INSERT INTO campaign_origins (campaign_id, store, origin_id, "
                           "origin_name, merged_at) VALUES (?, ?, ?, ?, ?)",
                           (campaign_id, store, origin_id, origin_name, now()))
