"""One stored invocation as a timeline: Chrome trace-event JSON (Perfetto, chrome://tracing).

What the store holds with times becomes tracks:

- periodic runs (experiment protection, matrix): a process per run label, a thread per task;
  each job is a slice from its start to its end (args: release, response, missed), with
  instants at its release and at its deadline;
- the freezer monitor's log of a protected run: a thread per cgroup, a `frozen` slice from
  each freeze to its thaw, so a best-effort task's jobs stop where its group is frozen (the
  aggressor's off periods) and run between them;
- bandwidth profiles: a counter track per source (MB/s, or the probe's ns per line) and the
  profiled command's region markers as nested slices.

Times are CLOCK_MONOTONIC as the tools read them, shifted so the trace starts at 0; the
origin is kept in the trace's metadata. The events are built once (`Timeline`) and written as
JSON here; perfetto.py writes the same events as Perfetto's protobuf.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import InputError
from ..store import Store

# Thread ids within a run's process: tasks first, then cgroups, then profile tracks.
_GROUP_TID = 1000
_REGION_TID = 2000


@dataclass(frozen=True)
class Event:
    """One trace event, times in ns since the trace's origin. `ph` follows the trace-event
    format: X (slice with duration), i (instant), C (counter), M (metadata)."""

    ph: str
    name: str
    pid: int
    tid: int
    ts_ns: float
    dur_ns: float | None = None
    args: dict[str, Any] = field(default_factory=dict)
    cat: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ph": self.ph, "name": self.name, "pid": self.pid,
                               "tid": self.tid, "ts": self.ts_ns / 1000.0}
        if self.cat:
            out["cat"] = self.cat
        if self.ph == "X":
            out["dur"] = (self.dur_ns or 0.0) / 1000.0
        if self.ph == "i":
            out["s"] = "t"
        if self.args:
            out["args"] = self.args
        return out


@dataclass
class Timeline:
    invocation: int
    title: str
    origin_ns: int
    events: list[Event] = field(default_factory=list)
    processes: dict[int, str] = field(default_factory=dict)
    threads: dict[tuple[int, int], str] = field(default_factory=dict)
    _tids: dict[tuple[int, str], int] = field(default_factory=dict)

    def process(self, name: str) -> int:
        for pid, known in self.processes.items():
            if known == name:
                return pid
        pid = len(self.processes) + 1
        self.processes[pid] = name
        return pid

    def thread(self, pid: int, key: str, name: str, base: int = 1) -> int:
        """The thread id of `key` in process `pid`, numbered from `base` in order of first
        use (tasks, cgroups and profile tracks each have a range of their own)."""
        if (pid, key) not in self._tids:
            tid = base + sum(1 for (p, _), t in self._tids.items()
                             if p == pid and base <= t < base + 1000)
            self._tids[(pid, key)] = tid
            self.threads[(pid, tid)] = name
        return self._tids[(pid, key)]

    def add(self, event: Event) -> None:
        self.events.append(event)

    def sorted_events(self) -> list[Event]:
        return sorted(self.events, key=lambda e: (e.ts_ns, -(e.dur_ns or 0.0)))

    def to_json(self) -> dict[str, Any]:
        meta = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                 "args": {"name": name}} for pid, name in self.processes.items()]
        meta += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                  "args": {"name": name}} for (pid, tid), name in self.threads.items()]
        return {"traceEvents": meta + [e.to_json() for e in self.sorted_events()],
                "displayTimeUnit": "ms",
                "otherData": {"intercore_invocation": self.invocation, "title": self.title,
                              "origin_monotonic_ns": self.origin_ns}}


# ---- from the store ----------------------------------------------------------------------------

def _job_events(tl: Timeline, jobs: dict[tuple[str, str], list], deadlines, cpus) -> None:
    for (label, task), run in jobs.items():
        pid = tl.process(label)
        tid = tl.thread(pid, f"task {task}", task + (
            f" (CPU {cpus[task]})" if cpus.get(task) is not None else ""))
        deadline = deadlines.get((label, task))
        for j in run:
            tl.add(Event("i", "release", pid, tid, j.release_ns - tl.origin_ns, cat="job",
                         args={"job": j.job}))
            tl.add(Event("X", f"job {j.job}", pid, tid, j.start_ns - tl.origin_ns,
                         j.end_ns - j.start_ns, cat="job",
                         args={"job": j.job, "response_ms": j.response_ns / 1e6,
                               "cpu_ms": j.cpu_ns / 1e6, "missed": j.missed,
                               "skipped": j.skipped}))
            if deadline:
                tl.add(Event("i", "deadline missed" if j.missed else "deadline", pid, tid,
                             j.release_ns + deadline - tl.origin_ns, cat="deadline",
                             args={"job": j.job}))


def _freeze_events(tl: Timeline, label: str, entries: Iterable[dict], end_ns: int) -> None:
    """A `frozen` slice per freeze, ended by the next thaw of the same group."""
    pid = tl.process(label)
    groups: dict[str, int] = {}
    open_since: dict[str, dict] = {}
    for e in sorted(entries, key=lambda e: e["t_ns"]):
        group = e["group"]
        if group not in groups:
            groups[group] = tl.thread(pid, f"group {group}", f"cgroup {Path(group).name}",
                                      _GROUP_TID)
        tid = groups[group]
        if e["action"] == "freeze":
            open_since.setdefault(group, e)
            continue
        began = open_since.pop(group, None)
        if began is not None:
            tl.add(Event("X", "frozen", pid, tid, began["t_ns"] - tl.origin_ns,
                         e["t_ns"] - began["t_ns"], cat="freezer",
                         args={"freeze_reason": began.get("reason"), "job": began.get("job"),
                               "latency_ns": began.get("latency_ns"),
                               "thaw_reason": e.get("reason"), "thawed_by": e.get("by")}))
        else:  # start-up and exit thaws: nothing was frozen
            tl.add(Event("i", f"thaw ({e.get('reason')})", pid, tid,
                         e["t_ns"] - tl.origin_ns, cat="freezer", args={"by": e.get("by")}))
    for group, began in open_since.items():
        tl.add(Event("X", "frozen (no thaw logged)", pid, groups[group],
                     began["t_ns"] - tl.origin_ns, max(0, end_ns - began["t_ns"]),
                     cat="freezer", args={"freeze_reason": began.get("reason")}))


def _profile_events(tl: Timeline, store: Store, invocation_id: int) -> None:
    from ..measure import profile
    from ..measure.profile_store import load_profile

    raw = load_profile(store, invocation_id)
    pid = tl.process("bandwidth profile")
    for index, source in enumerate(raw.spec.sources):
        s = profile.series(raw, index)
        values, unit = (s.mbps, "MB/s") if s.mbps is not None else (s.rate, s.unit)
        name = f"{source.spec} ({unit})"
        for t, v in zip(s.t_ns, values):
            if math.isfinite(float(v)):
                tl.add(Event("C", name, pid, 0, float(t), args={unit: float(v)}, cat="counter"))
    tid = tl.thread(pid, "regions", "regions", _REGION_TID)
    for span in profile.regions(raw):
        tl.add(Event("X", span.name, pid, tid, span.begin_ns, span.end_ns - span.begin_ns,
                     cat="region", args={"site": span.site, "depth": span.depth}))


def build(store: Store, invocation_id: int) -> Timeline:
    """The timeline of one invocation; InputError when it holds nothing with times."""
    inv = store.get_invocation(invocation_id)
    if inv is None:
        raise InputError(f"no invocation with id {invocation_id} in {store.path}", field="ID")
    jobs = store.jobs.of_invocation(invocation_id)
    logs = (inv.summary or {}).get("monitor_logs") or {}
    has_profile = store.profiles.holds(invocation_id)
    if not jobs and not has_profile:
        raise InputError(f"invocation {invocation_id} ({inv.command}) holds nothing with times "
                         "on a clock: a timeline needs periodic jobs (experiment, matrix) or "
                         "a bandwidth profile", field="ID")
    times = [j.release_ns for run in jobs.values() for j in run] + \
        [e["t_ns"] for entries in logs.values() for e in entries]
    tl = Timeline(invocation_id, f"invocation {invocation_id}: {inv.command}",
                  min(times) if times else 0)
    cpus = {w.name: w.cpu for w in store.workloads_for(invocation_id)}
    _job_events(tl, jobs, store.jobs.deadlines(invocation_id), cpus)
    end = max((j.end_ns for run in jobs.values() for j in run), default=tl.origin_ns)
    for label, entries in logs.items():
        _freeze_events(tl, label, entries, end)
    if has_profile:
        _profile_events(tl, store, invocation_id)
    return tl


def write_json(tl: Timeline, path: Path) -> int:
    """Write the trace; returns its number of events (metadata included)."""
    doc = tl.to_json()
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return len(doc["traceEvents"])
