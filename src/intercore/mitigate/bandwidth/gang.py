"""Partitioned real-time gang scheduling (RT-Gang++, paper 002 §6) on the freezer, and the
paper's experiment: a gang of critical tasks alone, beside best-effort aggressors, and beside
them under gang scheduling.

A task set's critical tasks form gangs (`gang:`; default a gang of one) in partitions
(`partition:`; default one partition). Each gang gets a cgroup; ic-gang (docs/native-
contract.md, "Gang scheduler") keeps every gang but the one allowed to run in its partition
frozen, and throttles the best-effort tasks while any gang runs: it freezes their group, or
opens the gate of an ic-regulate that then enforces its bandwidth budgets (RT-Gang's
"throttle best-effort only while real-time work runs").

Whether gangs of one partition ever ran together is checked from the evidence, not assumed:
`executed` subtracts from each job's [start, end] the intervals its gang was frozen (the
scheduler's log), and `overlap_ns` measures what remains in common.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Literal, Sequence

import numpy as np

from ...base.errors import InputError
from ...measure.periodic import runner
from ...measure.periodic.runner import JobResult, PeriodicResult, duration_arg
from ...base.procs import ProcessGroup, from_event, one_event, optional_args, read_jsonl, shm_path
from ...measure.harness.schedule import shuffled_rounds
from ...measure.periodic.taskset import TaskSet
from ..plan.algorithm1 import DEFAULT_THETA
from ..cgroupfs import Cgroups, Layout, detect
from ..daemon import NativeDaemon
from .regulator import Regulator, RegulatorSpec, RegulatorStats
from ..freezer.watchdog import Watchdog
from ..plan.record import CgroupPlan, Group, PlanTask

DEFAULT_PARTITION = "default"
BE_GROUP = "best-effort"
SCENARIOS = ("solo", "co-run", "rt-gang")


@dataclass(frozen=True)
class Gang:
    name: str
    priority: int
    partition: str
    members: tuple[str, ...]     # task names


def gangs_of(ts: TaskSet) -> tuple[Gang, ...]:
    """The gangs of a task set, in task order: tasks naming one gang form a virtual gang, a
    critical task without `gang:` is a gang of one."""
    out: dict[str, list] = {}
    for t in ts.tasks:
        if t.role != "critical":
            continue
        name = t.gang or t.name
        entry = out.setdefault(name, [t.priority, t.partition or DEFAULT_PARTITION, []])
        entry[2].append(t.name)
    return tuple(Gang(n, p, part, tuple(m)) for n, (p, part, m) in out.items())


def gang_plan(ts: TaskSet) -> CgroupPlan:
    """A cgroup plan with one freezable group per gang and one for the best-effort tasks."""
    gangs = gangs_of(ts)
    best = tuple(t.name for t in ts.tasks if t.role == "best-effort")
    names = {t.name for t in ts.tasks}
    clash = [g.name for g in gangs if g.name == BE_GROUP or (g.name in names and
                                                              g.members != (g.name,))]
    if clash:
        raise InputError(f"gang name {clash[0]!r} is taken", field="gang")
    groups = [Group(name=g.name, tasks=g.members, separated=True, freezer=True, monitor="none",
                    cpus=None, weight=100, realtime=any(ts.task(m).priority for m in g.members))
              for g in gangs]
    if best:
        groups.append(Group(name=BE_GROUP, tasks=best, separated=True, freezer=True,
                            monitor="freeze", cpus=None, weight=100,
                            realtime=any(ts.task(m).priority for m in best)))
    group_of = {m: g.name for g in gangs for m in g.members} | {b: BE_GROUP for b in best}
    tasks = tuple(PlanTask(name=t.name, role=t.role, group=group_of[t.name], cpu=t.cpu,
                           priority=t.priority, weight=t.weight) for t in ts.tasks)
    return CgroupPlan(taskset={"name": ts.name, "source": ts.source},
                      matrix={"statistic": None, "source": "gang scheduling: one group per gang",
                              "provenance": {}},
                      theta=DEFAULT_THETA, tasks=tasks, groups=tuple(groups))


def best_effort_plan(group: str = "be") -> CgroupPlan:
    """A plan of one freezable best-effort group (for a regulator run by hand, the tests and
    the benchmark): its task is whatever the caller attaches."""
    return CgroupPlan(taskset={"name": group, "source": None},
                      matrix={"statistic": None, "source": "one best-effort group",
                              "provenance": {}},
                      theta=DEFAULT_THETA,
                      tasks=(PlanTask(name=group, role="best-effort", group=group, cpu=None,
                                      priority=0, weight=100),),
                      groups=(Group(name=group, tasks=(group,), separated=True, freezer=True,
                                    monitor="freeze", cpus=None, weight=100, realtime=False),))


# ---- the scheduler process ----------------------------------------------------------------------

@dataclass(frozen=True)
class GangSpec:
    gangs: tuple[tuple[Gang, str], ...]          # (gang, its cgroup directory)
    notify: dict[str, str]                       # task -> notification block
    best_effort: tuple[str, ...] = ()
    throttle: Literal["freeze", "gate", "none"] = "freeze"
    gate_out: str | None = None
    lead_ns: int = 0
    lease_ns: int = 100_000_000
    duration_ns: int = 0
    exit_with_runners: bool = True
    log: str | None = None
    cpu: int | None = None
    priority: int = 0

    def argv(self) -> list[str]:
        args = ["--throttle", self.throttle, "--lead", duration_arg(self.lead_ns),
                "--lease", duration_arg(self.lease_ns),
                "--duration", duration_arg(self.duration_ns)]
        for gang, directory in self.gangs:
            if "," in directory:
                raise InputError(f"a cgroup directory with ',' cannot be passed: {directory}")
            args += ["--gang", f"{gang.name},{gang.priority},{gang.partition},{directory}"]
            for m in gang.members:
                args += ["--member", f"{gang.name},{self.notify[m]}"]
        return args + optional_args(
            ("--best-effort", ",".join(self.best_effort) or None), ("--gate-out", self.gate_out),
            ("--log", self.log), ("--cpu", self.cpu), ("--rt-priority", self.priority or None),
            ("--exit-with-runners", self.exit_with_runners))


@dataclass(frozen=True)
class GangStats:
    name: str
    partition: str
    priority: int
    grants: int
    preemptions: int


@dataclass(frozen=True)
class SchedulerStats:
    wall_ns: int
    cpu_ns: int
    watchdog_cpu_ns: int
    wakeups: int
    freezes: int
    thaws: int
    write_errors: int
    lease_expiries: int
    gangs: tuple[GangStats, ...] = ()


class GangScheduler(NativeDaemon[SchedulerStats]):
    """A running ic-gang (and its watchdog)."""

    tool = "ic-gang"

    def parse(self, lines: list[dict]) -> SchedulerStats:
        stats = one_event(lines, "stats", "ic-gang")
        gangs = tuple(from_event(GangStats, e, "ic-gang") for e in lines
                      if e.get("event") == "gang")
        return from_event(SchedulerStats, {**stats, "gangs": gangs}, "ic-gang")


@dataclass(frozen=True)
class LogEntry:
    t_ns: int
    action: Literal["freeze", "thaw"]
    group: str
    reason: str


def read_log(path: Path) -> list[LogEntry]:
    return read_jsonl(path, LogEntry, "ic-gang log")


# ---- evidence: what ran when --------------------------------------------------------------------

Interval = tuple[int, int]


def frozen_intervals(log: Sequence[LogEntry], group: str, end_ns: int) -> list[Interval]:
    """When `group` was frozen, from the scheduler's log (a freeze left open ends at end_ns)."""
    out, since = [], None
    for e in sorted((e for e in log if e.group == group), key=lambda e: e.t_ns):
        if e.action == "freeze" and since is None:
            since = e.t_ns
        elif e.action == "thaw" and since is not None:
            out.append((since, e.t_ns))
            since = None
    if since is not None:
        out.append((since, end_ns))
    return out


def subtract(a: Interval, cuts: Iterable[Interval]) -> list[Interval]:
    pieces = [a]
    for c0, c1 in cuts:
        nxt = []
        for p0, p1 in pieces:
            if c1 <= p0 or c0 >= p1:
                nxt.append((p0, p1))
                continue
            if c0 > p0:
                nxt.append((p0, c0))
            if c1 < p1:
                nxt.append((c1, p1))
        pieces = nxt
    return pieces


def executed(jobs: Sequence[JobResult], frozen: Sequence[Interval]) -> list[Interval]:
    """The times a task's jobs could run: each job's [start, end] minus its gang's freezes."""
    return [p for j in jobs for p in subtract((j.start_ns, j.end_ns), frozen)]


def overlap_ns(a: Sequence[Interval], b: Sequence[Interval]) -> int:
    total = 0
    for a0, a1 in a:
        for b0, b1 in b:
            total += max(0, min(a1, b1) - max(a0, b0))
    return total


# ---- running a task set -------------------------------------------------------------------------

def freezer_cgroups() -> Cgroups:
    """Cgroups in the freezer's hierarchy only: gang scheduling freezes and thaws, it neither
    places nor weighs, and a real-time task need not join a cpu cgroup (which, under RT group
    scheduling, would need an RT budget of its own)."""
    layout = detect()
    freeze = tuple(h for h in layout.hierarchies if "freeze" in h.roles)
    if not freeze:
        from ...base.errors import HostUnsupported
        raise HostUnsupported(f"gang scheduling needs the cgroup freezer, which no mounted "
                              f"hierarchy provides (cgroup mode: {layout.mode})")
    return Cgroups(layout=Layout(layout.mode, freeze, False))

@dataclass
class GangRun:
    scenario: str
    results: dict[str, PeriodicResult]
    stats: SchedulerStats | None = None
    log: list[LogEntry] = field(default_factory=list)
    plan: CgroupPlan | None = None
    regulator: RegulatorStats | None = None


def run_scenario(ts: TaskSet, scenario: str, jobs: dict[str, int], *, cpu: int | None,
                 priority: int, lead_ns: int, log_path: Path, root_name: str,
                 regulate: Callable[[str, str], RegulatorSpec] | None = None) -> GangRun:
    """One run of the task set: `solo` (critical tasks alone), `co-run` (with the best-effort
    tasks, no gang scheduling), `rt-gang` (both, under ic-gang). In rt-gang the best-effort
    group is frozen while a gang runs, or, with `regulate` (the spec of an ic-regulate for
    the group and a gate file), held to its bandwidth budget then."""
    critical = [t for t in ts.tasks if t.role == "critical"]
    chosen = critical if scenario == "solo" else list(ts.tasks)
    if scenario != "rt-gang":
        specs = [t.periodic_spec(jobs[t.name]) for t in chosen]
        return GangRun(scenario, runner.run_periodic(specs))
    plan = gang_plan(ts)
    cgroups = freezer_cgroups()
    # The groups live as long as this run: a watchdog started before they exist removes them
    # if this process is killed in any phase (and ic-gang's own watchdog thaws them if it is).
    with Watchdog.start("gang") as watchdog:
        # Every block of this run in one private directory, which the watchdog empties and
        # removes if this process dies.
        private = shm_path("gang").parent
        watchdog.scratch(private)
        notify = {t.name: private / f"notify-{t.name}" for t in critical}
        gate = private / "gate" if regulate else None
        applied = cgroups.apply(plan, root_name, owner=watchdog)
        try:
            with ProcessGroup() as group:
                tasks = [runner.launch(
                    t.periodic_spec(jobs[t.name], cgroups=applied.directories_of(t.name)),
                    group, notify=notify.get(t.name)) for t in chosen]
                freeze_dir = {g.name: str(Path(g.freeze_file).parent)
                              for g in applied.applied.groups}
                be = (freeze_dir[BE_GROUP],) if BE_GROUP in freeze_dir else ()
                spec = GangSpec(gangs=tuple((g, freeze_dir[g.name]) for g in gangs_of(ts)),
                                notify={k: str(v) for k, v in notify.items()},
                                best_effort=be, throttle="gate" if gate else "freeze",
                                gate_out=str(gate) if gate else None, lead_ns=lead_ns,
                                log=str(log_path), cpu=cpu, priority=priority)
                scheduler = GangScheduler.start(spec, group)
                regulator = Regulator.start(regulate(be[0], str(gate)), group) \
                    if gate and be else None
                for path in notify.values():
                    path.unlink(missing_ok=True)  # both sides have it mapped
                runner.start_together(tasks)
                results = runner.finish_together(tasks)
                stats = scheduler.wait()
                regulated = regulator.stop() if regulator else None
        finally:
            for path in [*notify.values(), *([gate] if gate else [])]:
                path.unlink(missing_ok=True)
            cgroups.teardown(applied)
        return GangRun(scenario, results, stats, read_log(log_path), plan, regulated)


def check_gangs(ts: TaskSet, run: GangRun) -> dict:
    """Evidence from one rt-gang run: the time gangs of one partition ran together (must be
    no more than the freezer's own latency), and how close together a virtual gang's members
    started their jobs."""
    end = max(j.end_ns for r in run.results.values() for j in r.jobs or ())
    gangs = gangs_of(ts)
    ran = {}
    for g in gangs:
        frozen = frozen_intervals(run.log, g.name, end)
        ran[g.name] = [p for m in g.members for p in executed(run.results[m].jobs, frozen)]
    pairs = []
    for i, a in enumerate(gangs):
        for b in gangs[i + 1:]:
            if a.partition == b.partition:
                pairs.append({"a": a.name, "b": b.name, "partition": a.partition,
                              "overlap_ns": overlap_ns(ran[a.name], ran[b.name])})
    spread = []
    for g in gangs:
        if len(g.members) < 2:
            continue
        by_job = zip(*(run.results[m].jobs for m in g.members))
        spread += [max(j.start_ns for j in js) - min(j.start_ns for j in js) for js in by_job]
    return {"same_partition": pairs,
            "virtual_gang_start_spread_ns": {
                "n": len(spread), "median": float(np.median(spread)) if spread else None,
                "max": max(spread) if spread else None}}


def interleaved(ts: TaskSet, jobs: int, rounds: int, seed: int, *, cpu: int | None,
                priority: int, lead_ns: int, out: Path, root_name: str,
                regulate: Callable[[str, str], RegulatorSpec] | None = None,
                on_run: Callable[[str, int, int], None] | None = None
                ) -> dict[str, list[GangRun]]:
    """The paper's experiment: every scenario in every round, rounds shuffled (sets that are
    compared are measured interleaved in time), `jobs` critical jobs per scenario in all."""
    per_round = max(1, jobs // rounds)
    runs: dict[str, list[GangRun]] = {s: [] for s in SCENARIOS}
    total = rounds * len(SCENARIOS)
    for done, (r, scenario) in enumerate(shuffled_rounds(SCENARIOS, rounds, seed), 1):
        counts = {t.name: _jobs_for(ts, t.name, per_round) for t in ts.tasks}
        run = run_scenario(ts, scenario, counts, cpu=cpu, priority=priority,
                           lead_ns=lead_ns, log_path=out / f"gang-{r}-{scenario}.jsonl",
                           root_name=root_name, regulate=regulate)
        runs[scenario].append(run)
        if on_run:
            on_run(scenario, done, total)
    return runs


def _jobs_for(ts: TaskSet, name: str, critical_jobs: int) -> int:
    """Best-effort tasks run as long as the critical ones (their periods differ); a command
    co-runs until they end, whatever its count."""
    horizon = max(t.period_ns for t in ts.tasks if t.role == "critical") * critical_jobs
    t = ts.task(name)
    if t.role == "critical" or not t.reports_jobs:
        return critical_jobs
    return max(1, horizon // t.period_ns)
