"""Bandwidth profiles and probe calibrations in the results store.

A profile is stored raw, as ic-profile took it (ticks, counts, tags, its clock pairs), with
its invocation; the analysis (bandwidth, regions, spikes) goes into the invocation's
summary for listings and is recomputed from the raw arrays whenever it is shown. A probe
calibration is an invocation of its own ("counters calibrate") whose summary holds the
calibration; the profiler uses the newest one of the same host and probe geometry.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import __version__
from ..errors import InputError
from ..store import Store
from ..store.records import InvocationRecord, WorkloadRecord
from .persist import host_id, utc
from .probe import ProbeCalibration
from .profile import TAG_DTYPE, Profile, ProfileSpec, RawProfile, Source

CALIBRATE_COMMAND = "counters calibrate"
PROFILE_COMMAND = "profile"


@dataclass(frozen=True)
class ProfileAttachment:
    """Store.record() attachment: one profile's raw arrays, in the invocation's transaction."""

    raw: RawProfile

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:
        r = self.raw
        conn.execute(
            "INSERT INTO bw_profiles (invocation_id, interval_ns, samples, missed, self_test, "
            "sources_json, ready_json, end_json, ticks, readings, tags) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (invocation_id, r.spec.interval_ns, int(r.end["samples"]), int(r.end["missed"]),
             int(bool(r.spec.self_test_ns)),
             json.dumps([s.to_dict() for s in r.spec.sources]), json.dumps(r.ready),
             json.dumps(r.end), r.ticks.astype("<u8").tobytes(),
             r.readings.astype("<u8").tobytes(), r.tags.astype(TAG_DTYPE).tobytes()))


def _host(store: Store) -> int:
    from ..host.report import host_report
    from ..host.topology import read_topology

    report = host_report()
    return host_id(store, read_topology(), report.fingerprint(), report.to_dict())


def save_profile(db: Path, prof: Profile, *, argv: Sequence[str], started_at: float,
                 summary: dict, params: dict) -> int:
    raw = prof.raw
    spec = raw.spec
    name = "self-test" if spec.self_test_ns else Path(spec.command[0]).name
    workload = WorkloadRecord("victim", name, "self-test" if spec.self_test_ns else "command",
                              {"command": list(spec.command), "cpu": spec.target_cpu},
                              spec.target_cpu, None)
    with Store.open(db) as store:
        inv = InvocationRecord(_host(store), PROFILE_COMMAND, tuple(argv), utc(started_at),
                               utc(time.time()), __version__, params=params, summary=summary,
                               status="interrupted" if raw.end.get("stopped") else "complete")
        return store.record(inv, [workload], [], attachments=[ProfileAttachment(raw)])


def load_profile(store: Store, invocation_id: int) -> RawProfile:
    row = store.query(
        "SELECT interval_ns, self_test, sources_json, ready_json, end_json, ticks, readings, "
        "tags FROM bw_profiles WHERE invocation_id = ?", (invocation_id,)).fetchone()
    if row is None:
        raise InputError(f"invocation {invocation_id} holds no bandwidth profile", field="ID")
    interval, self_test, sources, ready, end, ticks, readings, tags = row
    sources = tuple(Source(**s) for s in json.loads(sources))
    end = json.loads(end)
    inv = store.get_invocation(invocation_id)
    command = tuple(inv.params.get("command", ())) if inv else ()
    spec = ProfileSpec(sources, command=() if self_test else (command or ("?",)),
                       self_test_ns=int(inv.params.get("self_test_ns", 1)) if self_test else 0,
                       interval_ns=interval, cpu=inv.params.get("cpu") if inv else None,
                       target_cpu=inv.params.get("target_cpu") if inv else None)
    words = int(end["record_words"])
    data = np.frombuffer(readings, dtype="<u8").reshape(-1, words - 1)
    return RawProfile(spec, json.loads(ready), end, np.frombuffer(ticks, dtype="<u8").copy(),
                      data.copy(), np.frombuffer(tags, dtype=TAG_DTYPE).copy(), "")


# ---- probe calibrations -------------------------------------------------------------------------

def save_calibration(db: Path, cal: ProbeCalibration, started_at: float) -> int:
    with Store.open(db) as store:
        inv = InvocationRecord(_host(store), CALIBRATE_COMMAND, tuple(sys.argv),
                               utc(started_at), utc(time.time()), __version__,
                               params={"size": cal.size, "lines": cal.lines,
                                       "interval_ns": cal.interval_ns, "window": cal.window,
                                       **cal.meta},
                               summary={"calibration": cal.to_dict()})
        return store.record(inv, [], [])


def latest_calibration(db: Path, fingerprint: str, *, size: int, lines: int,
                       interval_ns: int) -> tuple[int, ProbeCalibration] | None:
    """The newest calibration of this host for this probe geometry and interval."""
    if not db.exists():
        return None
    with Store.open(db) as store:
        for listing in store.list_invocations(limit=200, command=CALIBRATE_COMMAND):
            inv = listing.invocation
            data = inv.summary.get("calibration")
            if not data or inv.host.fingerprint != fingerprint:
                continue
            cal = ProbeCalibration.from_dict(data)
            if (cal.size, cal.lines, cal.interval_ns) == (size, lines, interval_ns):
                return inv.id, cal
    return None
