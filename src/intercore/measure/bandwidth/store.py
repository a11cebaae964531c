"""Bandwidth profiles and probe calibrations in the results store.

A profile is stored raw, as ic-profile took it (ticks, counts, tags, its clock pairs), with
its invocation; the analysis (bandwidth, regions, spikes) goes into the invocation's
summary for listings and is recomputed from the raw arrays whenever it is shown. A probe
calibration is an invocation of its own ("counters calibrate") whose summary holds the
calibration; the profiler uses the newest one of the same host and probe geometry.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ... import __version__
from ...base.errors import InputError
from ...store import Store
from ...store.bandwidth import ProfileAttachment, ProfileRecord
from ...store.records import InvocationRecord, WorkloadRecord
from ..harness.store import host_id, utc
from .probe import ProbeCalibration
from .profile import TAG_DTYPE, Profile, ProfileSpec, RawProfile, Source

CALIBRATE_COMMAND = "counters calibrate"
PROFILE_COMMAND = "profile"


def _record(raw: RawProfile) -> ProfileRecord:
    return ProfileRecord(
        raw.spec.interval_ns, int(raw.end["samples"]), int(raw.end["missed"]),
        bool(raw.spec.self_test_ns), [s.to_dict() for s in raw.spec.sources], raw.ready,
        raw.end, raw.ticks.astype("<u8").tobytes(), raw.readings.astype("<u8").tobytes(),
        raw.tags.astype(TAG_DTYPE).tobytes())


def _host(store: Store) -> int:
    from ...host.report import host_report
    from ...host.topology import read_topology

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
        return store.record(inv, [workload], [], attachments=[ProfileAttachment(_record(raw))])


def load_profile(store: Store, invocation_id: int) -> RawProfile:
    stored = store.profiles.of_invocation(invocation_id)
    if stored is None:
        raise InputError(f"invocation {invocation_id} holds no bandwidth profile", field="ID")
    sources = tuple(Source(**s) for s in stored.sources)
    inv = store.get_invocation(invocation_id)
    params = inv.params if inv else {}
    command = tuple(params.get("command", ()))
    spec = ProfileSpec(sources, command=() if stored.self_test else (command or ("?",)),
                       self_test_ns=int(params.get("self_test_ns", 1))
                       if stored.self_test else 0,
                       interval_ns=stored.interval_ns, cpu=params.get("cpu"),
                       target_cpu=params.get("target_cpu"))
    words = int(stored.end["record_words"])
    data = np.frombuffer(stored.readings, dtype="<u8").reshape(-1, words - 1)
    return RawProfile(spec, dict(stored.ready), dict(stored.end),
                      np.frombuffer(stored.ticks, dtype="<u8").copy(), data.copy(),
                      np.frombuffer(stored.tags, dtype=TAG_DTYPE).copy(), "")


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
