"""The named aggressor sets (schema: store/schema.py, `_EVIDENCE`): a spec saved under a name
per host, with the evidence that chose it (measure/aggressors/store.py)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping


@dataclass(frozen=True)
class NamedSet:
    name: str
    fingerprint: str  # the host's
    spec: str
    invocation_id: int | None  # the search that chose it, if still stored
    evidence: Mapping[str, Any]
    created_at: datetime


class NamedSets:
    """The named sets of one store (Store.named_sets)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def save(self, name: str, host_id: int, spec: str, invocation_id: int | None,
             evidence: Mapping[str, Any], created_at: datetime | None = None) -> None:
        """Save `name` for this host, replacing what it named before unless that is newer
        (`created_at`: now; a merge passes the original time, so the newest save wins)."""
        at = created_at or datetime.now(timezone.utc)
        self._conn.execute(
            "INSERT INTO named_sets (name, host_id, spec, invocation_id, evidence_json, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name, host_id) DO UPDATE SET "
            "spec = excluded.spec, invocation_id = excluded.invocation_id, "
            "evidence_json = excluded.evidence_json, created_at = excluded.created_at "
            "WHERE excluded.created_at >= named_sets.created_at",
            (name, host_id, spec, invocation_id, json.dumps(dict(evidence), sort_keys=True),
             at.isoformat()))

    def all(self) -> list[NamedSet]:
        """Every saved set, with its host's fingerprint."""
        return [NamedSet(r[0], r[1], r[2], r[3], json.loads(r[4]), datetime.fromisoformat(r[5]))
                for r in self._conn.execute(
                    "SELECT n.name, h.fingerprint, n.spec, n.invocation_id, n.evidence_json, "
                    "n.created_at FROM named_sets n JOIN hosts h ON h.id = n.host_id "
                    "ORDER BY n.id")]

    def spec(self, name: str, fingerprint: str) -> str | None:
        """The spec saved as `name` for the host with this fingerprint, if any."""
        row = self._conn.execute(
            "SELECT n.spec FROM named_sets n JOIN hosts h ON h.id = n.host_id "
            "WHERE n.name = ? AND h.fingerprint = ?", (name, fingerprint)).fetchone()
        return None if row is None else row[0]
