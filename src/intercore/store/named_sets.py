"""The named aggressor sets (schema: store/schema.py, `_EVIDENCE`): a spec saved under a name
per host, with the evidence that chose it (measure/named.py)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from typing import Any, Mapping


class NamedSets:
    """The named sets of one store (Store.named_sets)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def save(self, name: str, host_id: int, spec: str, invocation_id: int | None,
             evidence: Mapping[str, Any]) -> None:
        """Save `name` for this host, replacing what it named before."""
        self._conn.execute(
            "INSERT INTO named_sets (name, host_id, spec, invocation_id, evidence_json, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name, host_id) DO UPDATE SET "
            "spec = excluded.spec, invocation_id = excluded.invocation_id, "
            "evidence_json = excluded.evidence_json, created_at = excluded.created_at",
            (name, host_id, spec, invocation_id, json.dumps(dict(evidence), sort_keys=True),
             datetime.now(timezone.utc).isoformat()))

    def spec(self, name: str, fingerprint: str) -> str | None:
        """The spec saved as `name` for the host with this fingerprint, if any."""
        row = self._conn.execute(
            "SELECT n.spec FROM named_sets n JOIN hosts h ON h.id = n.host_id "
            "WHERE n.name = ? AND h.fingerprint = ?", (name, fingerprint)).fetchone()
        return None if row is None else row[0]
