"""One stored invocation as a timeline: Chrome trace-event JSON (Perfetto, chrome://tracing).

What the store holds with times becomes tracks:

- periodic runs (experiment protection, matrix): a process per run label, a thread per task;
  each job is a slice from its start to its end (args: release, response, missed), with
  instants at its release and at its deadline;
- the freezer monitor's log of a protected run: a thread per cgroup, a `frozen` slice from
  each freeze to its thaw, so a best-effort task's jobs stop where its group is frozen (the
  aggressor's off periods) and run between them;
- bandwidth profiles: a counter track per source (MB/s, or the probe's ns per line) and the
  profiled command's region markers as nested slices;
- interleaved measurements (measure, campaign runs): a process per victim with its
  repetitions (isolated or interfered) and their regions as slices, the schedule's blocks
  (whose aggressor set had its turn), per aggressor set when it ran, was paused or was parked,
  the canary's regime as a track and its probes. Repetitions and regions are placed from
  their durations (schedule_layout.py), so they carry `placed` in their args.

Times are CLOCK_MONOTONIC as the tools read them, shifted so the trace starts at 0; the
origin is kept in the trace's metadata. Samples are timed from the start of their run (the
harness's clock), so a measurement's trace starts at its run's start. The events are built
once (`Timeline`) from a results model, `measure.recorded.RecordedRun`, and written as JSON
here; perfetto.py writes the same events as Perfetto's protobuf.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..base import outputs
from ..base.sample import INT, Sample
from ..measure.recorded import RecordedRun
from . import schedule_layout as layout

# Thread ids within a run's process: tasks first, then cgroups, then profile tracks, then the
# interleaved schedule's tracks.
_GROUP_TID = 1000
_REGION_TID = 2000
_SCHEDULE_TID = 3000
PLACED = "from durations: the store keeps when each block began, not each repetition or region"


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


# ---- from the recorded run ---------------------------------------------------------------------

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


@dataclass(frozen=True)
class _Freeze:
    """A freeze of a group from the monitor's log, ended by its next thaw (None: the log ends
    with the group frozen)."""

    group: str
    began: dict
    thaw: dict | None

    def end_ns(self, log_end_ns: int) -> int:
        return self.thaw["t_ns"] if self.thaw is not None else max(self.began["t_ns"],
                                                                    log_end_ns)


def _freezes(entries: Iterable[dict]) -> tuple[list[_Freeze], list[dict]]:
    """The log's freezes, and the thaws that ended none (start-up and exit thaws)."""
    freezes, idle_thaws = [], []
    open_since: dict[str, dict] = {}
    for e in sorted(entries, key=lambda e: e["t_ns"]):
        if e["action"] == "freeze":
            open_since.setdefault(e["group"], e)
            continue
        began = open_since.pop(e["group"], None)
        if began is not None:
            freezes.append(_Freeze(e["group"], began, e))
        else:
            idle_thaws.append(e)
    freezes += [_Freeze(group, began, None) for group, began in open_since.items()]
    return freezes, idle_thaws


def _freeze_events(tl: Timeline, label: str, entries: list[dict], end_ns: int) -> None:
    """A `frozen` slice per freeze, ended by the next thaw of the same group."""
    pid = tl.process(label)

    def tid(group: str) -> int:
        return tl.thread(pid, f"group {group}", f"cgroup {Path(group).name}", _GROUP_TID)

    for group in dict.fromkeys(e["group"] for e in sorted(entries, key=lambda e: e["t_ns"])):
        tid(group)  # tracks numbered in the order the log first names them
    freezes, idle_thaws = _freezes(entries)
    for f in freezes:
        began, thaw = f.began, f.thaw
        tl.add(Event("X", "frozen" if thaw is not None else "frozen (no thaw logged)", pid,
                     tid(f.group), began["t_ns"] - tl.origin_ns,
                     f.end_ns(end_ns) - began["t_ns"], cat="freezer",
                     args={"freeze_reason": began.get("reason"), "job": began.get("job"),
                           "latency_ns": began.get("latency_ns"),
                           "thaw_reason": None if thaw is None else thaw.get("reason"),
                           "thawed_by": None if thaw is None else thaw.get("by")}))
    for e in idle_thaws:  # start-up and exit thaws: nothing was frozen
        tl.add(Event("i", f"thaw ({e.get('reason')})", pid, tid(e["group"]),
                     e["t_ns"] - tl.origin_ns, cat="freezer", args={"by": e.get("by")}))


def _minus(span: tuple[int, int], holes: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of `span` outside every hole."""
    parts = [span]
    for lo, hi in holes:
        parts = [piece for a, b in parts
                 for piece in ((a, min(b, lo)), (max(a, hi), b)) if piece[0] < piece[1]]
    return parts


def _aggressor_events(tl: Timeline, summary: Mapping[str, Any], jobs: dict[tuple[str, str], list],
                      logs: dict[str, list[dict]], aggressors: set[str], end_ns: int) -> None:
    """Per run and best-effort task, when it ran (`on`: executing a job, not frozen) and when
    the monitor held it frozen. A task's group comes from the run's cgroup plan (the
    experiment's summary: placements.NAME.plan.groups); a frozen group is the log's."""
    for (label, task), run in jobs.items():
        if task not in aggressors:
            continue
        placement, _, short = task.rpartition("/")
        plan = ((summary.get("placements") or {}).get(placement) or {}).get("plan") or {}
        group = next((g["name"] for g in plan.get("groups", []) if short in g["tasks"]), None)
        frozen = [(f.began["t_ns"], f.end_ns(end_ns)) for f in _freezes(logs.get(label, []))[0]
                  if group is not None and Path(f.group).name == group]
        pid = tl.process(label)
        tid = tl.thread(pid, f"aggressor {task}", f"aggressor {task}: on/frozen", _SCHEDULE_TID)
        for j in run:
            for a, b in _minus((j.start_ns, j.end_ns), frozen):
                tl.add(Event("X", "on", pid, tid, a - tl.origin_ns, b - a, cat="aggressor",
                             args={"job": j.job}))
        for a, b in frozen:
            tl.add(Event("X", "frozen", pid, tid, a - tl.origin_ns, b - a, cat="aggressor",
                         args={"group": group}))


def _profile_events(tl: Timeline, run: RecordedRun) -> None:
    pid = tl.process("bandwidth profile")
    for s in run.counters:
        for t, v in zip(s.t_ns, s.values):
            if math.isfinite(v):
                tl.add(Event("C", s.name, pid, 0, t, args={s.unit: v}, cat="counter"))
    tid = tl.thread(pid, "regions", "regions", _REGION_TID)
    for span in run.regions:
        tl.add(Event("X", span.name, pid, tid, span.begin_ns, span.end_ns - span.begin_ns,
                     cat="region", args={"site": span.site, "depth": span.depth}))


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _sample_events(tl: Timeline, summary: Mapping[str, Any], samples: Sequence[Sample],
                   victims: dict[int, str]) -> None:
    """A measurement's interleaved schedule: blocks, aggressor states, regimes, repetitions
    and regions (see the module docstring)."""
    design = summary.get("design") or {}
    spans = layout.blocks(samples, design.get("blocks") or ())
    reps = layout.repetitions(samples, spans)
    spans = layout.closed(spans, reps)
    for victim in sorted({r.total.victim for r in reps}):
        pid = tl.process(f"{victims.get(victim, 'victim')} (interleaved)")
        _schedule_events(tl, pid, spans, [r for r in reps if r.total.victim == victim],
                         design.get("probes") or ())
        rep_tid = tl.thread(pid, "repetitions", "victim repetitions")
        region_tid = tl.thread(pid, "regions", "victim regions (placed)", _REGION_TID)
        for r in reps:
            if r.total.victim != victim:
                continue
            t = r.total
            tl.add(Event("X", "interfered" if t.condition == INT else "isolated", pid, rep_tid,
                         r.start_ns, r.dur_ns, cat="repetition",
                         args={"rep": t.rep, "pair": t.pair, "block": t.block,
                               "aggressor_set": t.aggressor_set, "wall_us": _us(t.wall_ns),
                               "cpu_us": _us(t.cpu_ns), "clock": t.clock, "cpu": t.cpu,
                               "nivcsw": t.nivcsw, "descheduled": t.descheduled,
                               "regime": t.regime, "placed": PLACED}))
            for region in r.regions:
                x = region.sample
                tl.add(Event("X", x.region_name, pid, region_tid, region.start_ns,
                             region.dur_ns, cat="region",
                             args={"rep": x.rep, "region": x.region, "wall_us": _us(x.wall_ns),
                                   "cpu_us": _us(x.cpu_ns), "placed": PLACED}))


def _schedule_events(tl: Timeline, pid: int, spans: list[layout.BlockSpan],
                     reps: list[layout.RepSpan], probes) -> None:
    blocks_tid = tl.thread(pid, "blocks", "aggressor blocks", _SCHEDULE_TID)
    sets = list(dict.fromkeys(b.aggressor_set for b in spans if b.aggressor_set))
    set_tids = {name: tl.thread(pid, f"set {name}", f"aggressor {name}", _SCHEDULE_TID)
                for name in sets}
    by_block: dict[int | None, list[layout.RepSpan]] = {}
    for r in reps:
        by_block.setdefault(r.total.block, []).append(r)
    for b in spans:
        end = b.end_ns if b.end_ns is not None else b.start_ns
        tl.add(Event("X", b.aggressor_set or "(no set)", pid, blocks_tid, b.start_ns,
                     end - b.start_ns, cat="block",
                     args={"block": b.index, "round": b.round, "pairs": b.pairs,
                           "regime": b.regime, "bytes_moved": dict(b.bytes_moved) or None}))
        for name, tid in set_tids.items():
            if name != b.aggressor_set:  # SIGSTOPped while another set has its turn
                tl.add(Event("X", "parked", pid, tid, b.start_ns, end - b.start_ns,
                             cat="aggressor", args={"block": b.index}))
                continue
            for r in by_block.get(b.index, []):
                tl.add(Event("X", "on" if r.total.condition == INT else "paused", pid, tid,
                             r.start_ns, r.dur_ns, cat="aggressor",
                             args={"block": b.index, "rep": r.total.rep, "placed": PLACED}))
    regime_tid = tl.thread(pid, "regime", "host regime (canary)", _SCHEDULE_TID)
    for regime, start, end, count in layout.regime_runs(spans):
        tl.add(Event("X", regime, pid, regime_tid, start, end - start, cat="regime",
                     args={"blocks": count}))
    if probes:
        probe_tid = tl.thread(pid, "probes", "canary probes", _SCHEDULE_TID)
        for p in probes:
            tl.add(Event("X", "probe", pid, probe_tid, p["start_ns"],
                         max(0, p["at_ns"] - p["start_ns"]), cat="canary",
                         args={"regime": p["regime"], "ratios": p.get("ratios")}))


def build(run: RecordedRun) -> Timeline:
    """The timeline of one invocation's timed records (measure.recorded.load)."""
    logs = run.monitor_logs
    times = [j.release_ns for jobs in run.jobs.values() for j in jobs] + \
        [e["t_ns"] for entries in logs.values() for e in entries]
    tl = Timeline(run.invocation_id, f"invocation {run.invocation_id}: {run.command}",
                  min(times) if times else 0)
    _job_events(tl, run.jobs, run.deadlines, run.cpus)
    end = max((j.end_ns for jobs in run.jobs.values() for j in jobs), default=tl.origin_ns)
    for label, entries in logs.items():
        _freeze_events(tl, label, entries, end)
    _aggressor_events(tl, run.summary, run.jobs, logs, set(run.aggressors), end)
    if run.counters or run.regions:
        _profile_events(tl, run)
    if run.samples:
        _sample_events(tl, run.summary, run.samples, run.victims)
    return tl


def write_json(tl: Timeline, path: Path) -> int:
    """Write the trace; returns its number of events (metadata included)."""
    doc = tl.to_json()
    outputs.write_text(path, json.dumps(doc, separators=(",", ":")))
    return len(doc["traceEvents"])
