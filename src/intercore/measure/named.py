"""Named aggressor sets in the results store (schema: store/schema.py, `_EVIDENCE`).

`measure VICTIM --search` saves its winner as `worst:VICTIM` for the host it ran on; `-a
@worst:VICTIM` reuses it. The worst aggressor is a property of a host (its caches, its
placement), so a name is looked up for this host's fingerprint only: the same store carried to
another machine does not silently hand over another host's winner.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store import Store
from .harness import VictimSpec

PREFIX = "@"


def worst_name(victim: VictimSpec) -> str:
    """The canonical name of a victim's worst aggressor: kind and resolved parameters, so
    `ptrchase:size=8M` and `ptrchase:size=8388608` name the same set."""
    params = ",".join(f"{k}={v}" for k, v in sorted(victim.params))
    return f"worst:{victim.kind}" + (f":{params}" if params else "")


def save(store: Store, host_id: int, name: str, spec: str, invocation_id: int | None,
         evidence: dict[str, Any]) -> None:
    """Save (or replace) `name` on this host."""
    with sqlite3.connect(store.path, isolation_level=None, timeout=5.0) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(
            "INSERT INTO named_sets (name, host_id, spec, invocation_id, evidence_json, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name, host_id) DO UPDATE SET "
            "spec = excluded.spec, invocation_id = excluded.invocation_id, "
            "evidence_json = excluded.evidence_json, created_at = excluded.created_at",
            (name, host_id, spec, invocation_id, json.dumps(evidence, sort_keys=True),
             datetime.now(timezone.utc).isoformat()))
    conn.close()


def lookup(db: Path | None, fingerprint: str, name: str) -> str:
    """The spec saved as `name` for the host with this fingerprint (InputError if none)."""
    hint = ("run `intercore measure VICTIM --search` on this host first" if
            name.startswith("worst:") else "no such named set")
    if db is None or not Path(db).exists():
        raise InputError(f"{PREFIX}{name}: no results store to look it up in ({hint})",
                         field="--aggressor")
    Store.open(db).close()  # brings an older store to the schema that has named sets
    conn = sqlite3.connect(db, timeout=5.0)
    try:
        row = conn.execute(
            "SELECT n.spec FROM named_sets n JOIN hosts h ON h.id = n.host_id "
            "WHERE n.name = ? AND h.fingerprint = ?", (name, fingerprint)).fetchone()
    finally:
        conn.close()
    if row is None:
        raise InputError(f"{PREFIX}{name}: not saved for this host in {db} ({hint})",
                         field="--aggressor")
    return row[0]
