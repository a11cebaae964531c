"""The bandwidth-profile table (schema: store/schema.py, `_PROFILES`): one profile per
invocation, stored raw as ic-profile took it, its arrays as little-endian bytes."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class ProfileRecord:
    """One profile: its sampling interval, how many samples it took and missed, whether it
    was the self-test, its sources and the profiler's ready and end lines, and its arrays
    (ticks, readings, region tags) as the bytes the profile module encodes and decodes."""

    interval_ns: int
    samples: int
    missed: int
    self_test: bool
    sources: Sequence[Mapping[str, Any]]
    ready: Mapping[str, Any]
    end: Mapping[str, Any]
    ticks: bytes
    readings: bytes
    tags: bytes


@dataclass(frozen=True)
class ProfileAttachment:
    """Store.record() attachment: one profile, in its invocation's transaction."""

    profile: ProfileRecord

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        p = self.profile
        conn.execute(
            "INSERT INTO bw_profiles (invocation_id, interval_ns, samples, missed, self_test, "
            "sources_json, ready_json, end_json, ticks, readings, tags) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (invocation_id, p.interval_ns, p.samples, p.missed, int(p.self_test),
             json.dumps(list(p.sources)), json.dumps(p.ready), json.dumps(p.end), p.ticks,
             p.readings, p.tags))


class Profiles:
    """The bandwidth profiles of one store (Store.profiles)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def holds(self, invocation_id: int) -> bool:
        """Whether the invocation stored a profile (without reading its arrays)."""
        return self._conn.execute("SELECT 1 FROM bw_profiles WHERE invocation_id = ?",
                                  (invocation_id,)).fetchone() is not None

    def of_invocation(self, invocation_id: int) -> ProfileRecord | None:
        row = self._conn.execute(
            "SELECT interval_ns, samples, missed, self_test, sources_json, ready_json, end_json, "
            "ticks, readings, tags FROM bw_profiles WHERE invocation_id = ?",
            (invocation_id,)).fetchone()
        if row is None:
            return None
        interval, samples, missed, self_test, sources, ready, end, ticks, readings, tags = row
        return ProfileRecord(interval, samples, missed, bool(self_test), json.loads(sources),
                             json.loads(ready), json.loads(end), ticks, readings, tags)
