"""Paper 000 §4.4.3 on this host: Solo, Interference and Protected, in two placements.

same-core (the paper's): the victim `matrix1` (T = 100 ms, D = 30 ms) and a bandwidth writer
(T = 200 ms) share one CPU at the same SCHED_FIFO priority, so a victim released while a noise
job runs waits for it: every second victim job can miss. cross-core (beyond the paper): the
victim is a pointer chase sized to the shared cache and the writer thrashes that cache from
another CPU, so only the memory hierarchy connects them.

Per placement the experiment runs Solo, the noise alone, and both together (Interference);
those runs give the interference matrix of the two tasks; Algorithm 1 turns it into a cgroup
plan; Protected applies the plan, runs the freezer monitor on a housekeeping CPU, and runs
both tasks again. Every job goes to the store; figures 7-9 of the paper are drawn per
placement. The experiment's task sets are written next to the figures, so what ran is a file
a user can read and rerun with `intercore measure matrix` / `intercore mitigate`.

With a task set of the user's own (one critical task, such as their program built with
ic_task.h, and one best-effort task) the same phases run on it instead of the placements.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, TypeVar

from ...base import outputs, yamlfile
from ...base.errors import HostUnsupported, InputError
from ...host.steal import TICK_MS, StolenTime
from ...host.topology import Topology, default_placement, read_topology
from ...measure.periodic import runner
from ...measure.aggressors.catalog import ALIASES
from ...measure.periodic.store import TaskRow, save_runs
from ...measure.periodic.matrix import InterferenceMatrix
from ...measure.periodic.matrix_runner import WARMUP_JOBS, alone_times, degradation, steady
from ...measure.aggressors.presets import Footprints
from ...base.procs import ProcessGroup, shm_path
from ...measure.periodic.taskset import TaskSet, resolve
from ...base.units import duration_text, max_freeze
from ..plan import algorithm1
from ..cgroupfs import DEFAULT_ROOT, Cgroups, root_parts
from ..freezer.guard import check_on_host, monitor_spec, roles, windows_from_plan
from ..freezer.monitor import Monitor, MonitorStats, read_log
from ..plan.record import CgroupPlan
from .scenario import ScenarioSummary, progress, responses_ms, summarize_jobs
from ..freezer.watchdog import Watchdog

_T = TypeVar("_T")

PLACEMENTS = ("same-core", "cross-core")
SCENARIOS = ("solo", "interference", "protected")
# The critical task beside the worst aggressor a search found (`intercore assess`): its timing
# under the worst interference found, which the task set's own co-runners may not reach.
WORST_FOUND = "worst-found"
Policy = Literal["event", "poll"]

PERIOD_MS, DEADLINE_MS, NOISE_PERIOD_MS = 100, 30, 200
# The noise job: 40 ms of writing at the start of each 200 ms period. The victim is released
# 5 ms into it, so on one CPU it waits ~35 ms (> D) every second job, as in the paper's Fig. 7.
NOISE_WORK, VICTIM_OFFSET = "time:40ms", "5ms"
# Both tasks are real-time; the monitor outranks them so its freeze is never queued behind one.
TASK_PRIORITY, MONITOR_PRIORITY = 10, 50
# A victim should use at most this share of its deadline alone, so Solo meets every deadline
# with margin on a slow board; the cross-core chase is sized to half of it, so a 2x slowdown
# (the paper's "up to 2x") is exactly what makes it miss.
SOLO_BUDGET, CHASE_TARGET = 0.8, 0.5
# Poll policy: CPU usage is averaged over this window. cpu.stat moves in scheduler-tick steps
# (4 ms at HZ=250), so over 10 ms a noise task hogging its CPU reads >= 60%, clear of the 30%
# threshold, while the monitor's default 20 ms would use up most of the victim's 25 ms slack
# before it could decide anything.
POLL_WINDOW_NS = 10_000_000


# A job is one victim period (100 ms): 10 000 jobs keep one placement under an hour.
MAX_JOBS = 10_000
MIN_INTERVAL_NS, MAX_INTERVAL_NS = 1_000_000, 10_000_000_000  # what ic-monitor polls at


@dataclass(frozen=True)
class Config:
    jobs: int = 100
    policy: Policy = "event"
    interval_ns: int = 50_000_000          # poll policy only
    theta: float = algorithm1.DEFAULT_THETA
    placements: tuple[str, ...] = PLACEMENTS
    root_name: str = DEFAULT_ROOT
    out_dir: Path = Path("protection")
    max_freeze: str = "50%"                 # event policy: share of the victim's period
    seed: int = 1
    taskset: Path | None = None             # the user's task set instead of the placements

    def __post_init__(self) -> None:
        """Every option checked before the first real-time run: a refusal after minutes of
        Solo and Interference runs would waste them and leave their files."""
        if not 2 <= self.jobs <= MAX_JOBS:
            raise InputError(f"must be 2 .. {MAX_JOBS}, got {self.jobs}", field="--jobs")
        algorithm1.check_theta(self.theta)
        unknown = set(self.placements) - set(PLACEMENTS)
        if unknown or not self.placements:
            raise InputError(f"choose from {', '.join(PLACEMENTS)}", field="--placement")
        if self.policy not in ("event", "poll"):
            raise InputError("choose event or poll", field="--policy")
        if not MIN_INTERVAL_NS <= self.interval_ns <= MAX_INTERVAL_NS:
            raise InputError(f"must be {duration_text(MIN_INTERVAL_NS)} .. "
                             f"{duration_text(MAX_INTERVAL_NS)}", field="--interval")
        max_freeze(self.max_freeze, field="--max-freeze")
        root_parts(self.root_name)


@dataclass(frozen=True)
class Pair:
    """A task set as the experiment runs it: the critical task it protects (the victim), the
    best-effort task it protects it from (the noise), and the monitor's CPU."""
    taskset: TaskSet
    victim: str
    noise: str
    monitor_cpu: int


@dataclass
class PlacementResult:
    name: str
    pair: Pair
    notes: list[str]
    runs: dict[str, dict[str, runner.Result]] = field(default_factory=dict)
    matrix: InterferenceMatrix | None = None
    plan: CgroupPlan | None = None
    monitor: MonitorStats | None = None
    summaries: dict[str, ScenarioSummary] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    refusal: str | None = None  # why Protected must not be read as protection

    @property
    def scenarios(self) -> tuple[str, ...]:
        """The scenarios run: the three, then beside the worst aggressor found if given."""
        return tuple(s for s in (*SCENARIOS, WORST_FOUND) if s in self.runs)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {s: self.summaries[s].to_dict() for s in self.scenarios
                               if s in self.summaries}
        out["notes"] = self.notes
        out["protection_refused"] = self.refusal
        victim = self.pair.taskset.task(self.pair.victim)
        out["victim"] = {"name": victim.name, "period_ms": victim.period_ns / 1e6,
                         "deadline_ms": victim.deadline_ns / 1e6}
        out["noise"] = self.pair.noise
        out["taskset"] = self.pair.taskset.to_dict()
        if self.matrix is not None:
            out["matrix"] = self.matrix.to_dict()
        if self.plan is not None:
            out["plan"] = {"groups": [g.model_dump(mode="json") for g in self.plan.groups],
                           "pairs": [p.model_dump(mode="json") for p in self.plan.pairs],
                           "warnings": [w.model_dump(mode="json") for w in self.plan.warnings]}
        if self.monitor is not None:
            out["monitor"] = dataclasses.asdict(self.monitor)
        out["figures"] = [str(p) for p in self.figures]
        return out


# ---- the cross-check ----------------------------------------------------------------------------

def cross_check(solo: ScenarioSummary, interference: ScenarioSummary,
                matrix: InterferenceMatrix, plan: CgroupPlan) -> str | None:
    """Why the Protected result cannot count as protection, or None.

    Algorithm 1 separates only pairs whose I exceeds θ or whose degradation breaks a critical
    task's deadline. When the Interference scenario misses clearly more deadlines than Solo
    (their 95% intervals do not overlap) for a pair the plan left together, the matrix was
    measured where the pair did not interfere (a host whose cache sharing came and went, a
    statistic that hid it): a Protected run that follows its plan protects nothing, and its
    miss ratio must not be reported as the effect of protection."""
    i = matrix.interference(*matrix.tasks)
    if i is None or plan.pairs or interference.miss_ci[0] <= solo.miss_ci[1]:
        return None
    where = ""
    if matrix.provisional:
        where = " (the matrix is provisional: " + "; ".join(matrix.notes) + ")"
    return (f"the Interference scenario missed {interference.misses}/{interference.n} "
            f"deadlines against {solo.misses}/{solo.n} alone, yet the matrix gives I = "
            f"{i:.2f} <= θ = {plan.theta:g} and no broken deadline, so Algorithm 1 "
            f"separated nothing{where}: the Protected result is not evidence of protection; "
            "re-measure the matrix (`intercore measure matrix`, with the running canary) and plan "
            "from it")


# ---- the task sets ------------------------------------------------------------------------------

def _victim_time_ns(kind: str, params: dict[str, str], cpu: int, jobs: int = 5) -> int:
    """Median response time of the victim as a periodic job alone on `cpu`: measured the way
    the experiment runs it, so the cache state between jobs (other tenants evict it during
    the idle part of the period) is part of the calibration."""
    spec = runner.PeriodicSpec(name="calibration", binary="victim", kind=kind,
                               params=tuple(params.items()), period_ns=PERIOD_MS * 1_000_000,
                               deadline_ns=PERIOD_MS * 1_000_000, jobs=jobs, cpu=cpu,
                               priority=TASK_PRIORITY)
    times = sorted(j.response_ns for j in runner.run_periodic([spec])["calibration"].jobs)
    return times[len(times) // 2]


def _same_core_victim(cpu: int, notes: list[str]) -> tuple[str, dict[str, str]]:
    """matrix1 as the paper sizes it, unless this host is too slow for its 30 ms deadline."""
    params = dict(ALIASES["matrix1"].params)
    t = _victim_time_ns("matmul", params, cpu)
    budget = SOLO_BUDGET * DEADLINE_MS * 1e6
    if t <= budget:
        notes.append(f"matrix1 as in the paper (256 x 4096 x 9): {t / 1e6:.1f} ms alone here, "
                     f"no scaling needed")
        return "matrix1", {}
    n = max(1, int(int(params["n"]) * budget / t))
    notes.append(f"matrix1 takes {t / 1e6:.1f} ms alone here, more than {SOLO_BUDGET:.0%} of "
                 f"the 30 ms deadline: rows scaled from {params['n']} to {n} so Solo has margin")
    return "matmul", {**params, "n": str(n)}


def _cross_core_victim(cpu: int, fp: Footprints, notes: list[str]) -> dict[str, str]:
    """A pointer chase over a shared-cache-sized cycle, its length set to CHASE_TARGET of D.

    The cost per load is not constant (a job starts with whatever the idle part of the period
    left in the caches), so the length is found by a few measured steps rather than one
    extrapolation."""
    size, accesses = str(fp.shared_victim), 1 << 18
    target = CHASE_TARGET * DEADLINE_MS * 1e6
    for _ in range(4):
        t = _victim_time_ns("ptrchase", {"size": size, "accesses": str(accesses)}, cpu)
        if abs(t - target) <= 0.1 * target:
            break
        accesses = max(1, int(accesses * target / t))
    notes.append(f"cross-core victim: ptrchase over {fp.shared_victim >> 20} MiB (fits the "
                 f"shared cache, overflows the private one), {accesses} dependent loads per job, "
                 f"calibrated to {CHASE_TARGET:.0%} of the deadline alone here (last probe "
                 f"{t / 1e6:.1f} ms), so a 2x slowdown misses")
    return {"size": size, "accesses": str(accesses)}


def _task(name: str, workload: str, params: dict[str, str], period_ms: int, cpu: int,
          role: str, extra: str) -> str:
    lines = [f"  - name: {name}", f"    workload: {workload}"]
    if params:
        lines.append("    params: {" + ", ".join(f"{k}: '{v}'" for k, v in params.items()) + "}")
    lines += [f"    period: {period_ms}ms", f"    cpu: {cpu}", f"    priority: {TASK_PRIORITY}",
              f"    role: {role}", extra]
    return "\n".join(lines)


def taskset_text(placement: str, topo: Topology, notes: list[str]) -> tuple[str, int]:
    """The placement's task set as YAML, and the housekeeping CPU for the monitor."""
    if len(topo.online_cpus) < 2:
        raise HostUnsupported("the protection experiment needs two online CPUs: one for the "
                              "victim and one for the monitor")
    victim_cpu, others = default_placement(topo)
    other = others[0]
    fp = Footprints.for_host(topo, victim_cpu)
    if placement == "same-core":
        workload, params = _same_core_victim(victim_cpu, notes)
        noise_cpu, monitor_cpu = victim_cpu, other
        noise_params = {"op": "write", "size": "2xLLC"}
        notes.append(f"victim and noise share CPU {victim_cpu}; the monitor runs on CPU "
                     f"{monitor_cpu}")
    else:
        workload, params = "ptrchase", _cross_core_victim(victim_cpu, fp, notes)
        noise_cpu = monitor_cpu = other
        noise_params = {"op": "write", "size": "0.5xLLC"}
        notes.append(f"victim on CPU {victim_cpu}, noise on CPU {noise_cpu}; with "
                     f"{len(topo.online_cpus)} CPUs the monitor shares the noise's CPU at a "
                     "higher RT priority")
    text = "\n".join([
        f"name: protection-{placement}",
        f"description: paper 000 section 4.4.3, {placement} placement (intercore mitigate "
        "protection)",
        "tasks:",
        _task("victim", workload, params, PERIOD_MS, victim_cpu, "critical",
              f"    deadline: {DEADLINE_MS}ms\n    offset: {VICTIM_OFFSET}"),
        _task("noise", "bw", noise_params, NOISE_PERIOD_MS, noise_cpu, "best-effort",
              f"    work: {NOISE_WORK}"),
    ]) + "\n"
    return text, monitor_cpu


def user_pair(path: Path, topo: Topology) -> Pair:
    """The user's task set, checked before any work: exactly one critical task, pinned (the
    monitor must run beside it, not on its CPU), and one best-effort task."""
    doc = yamlfile.read(path)
    ts = resolve(doc, topo)
    if len(ts.tasks) != 2:
        raise doc.error(f"the protection experiment runs one critical and one best-effort "
                        f"task; this task set has {len(ts.tasks)}",
                        ("tasks", 2) if len(ts.tasks) > 2 else ("tasks",))
    first, second = ts.tasks
    if first.role == second.role:
        raise doc.error(f"the protection experiment needs one critical and one best-effort "
                        f"task; both are {first.role}", ("tasks", 1, "role"))
    victim, noise = (first, second) if first.role == "critical" else (second, first)
    if victim.cpu is None:
        raise doc.error("the critical task needs a cpu: the monitor runs on another one",
                        ("tasks", ts.tasks.index(victim), "cpu"))
    return pair_in(ts, victim.name, noise.name, topo)


def pair_in(ts: TaskSet, victim: str, noise: str, topo: Topology) -> Pair:
    """`victim` (a critical task with a cpu) protected from `noise` within the task set `ts`,
    the monitor on a CPU other than the victim's."""
    cpu, noise_cpu = ts.task(victim).cpu, ts.task(noise).cpu
    others = [c for c in topo.online_cpus if c != cpu]
    if not others:
        raise HostUnsupported("the protection experiment needs two online CPUs: one for the "
                              "critical task and one for the monitor")
    # Never the critical task's CPU (the freeze would wait for the task it protects); a CPU
    # neither task uses if there is one, else the noise's, where the monitor outranks it.
    free = [c for c in others if c != noise_cpu]
    return Pair(ts, victim, noise, (free or others)[0])


# ---- running ------------------------------------------------------------------------------------

def _matrix(pair: Pair, solo, noise_alone, together) -> InterferenceMatrix:
    """The two-task matrix from the Solo, noise-alone and Interference runs (statistic max,
    each run's warm-up left out as the matrix runner does); without a noise-alone run (a
    command's: no jobs) the noise's row is unknown."""
    victim, noise = pair.victim, pair.noise
    alone = {victim: steady(solo.jobs), noise: steady(noise_alone.jobs) if noise_alone else []}
    beside = {victim: steady(together[victim].jobs),
              noise: steady(together[noise].jobs) if noise_alone else []}

    def missed(jobs) -> int:
        return sum(j.missed for j in jobs)

    return InterferenceMatrix(
        tasks=(victim, noise), statistic="max",
        directed=((None, degradation(alone[victim], beside[victim], "max")),
                  (degradation(alone[noise], beside[noise], "max") if noise_alone else None,
                   None)),
        n=((0, len(beside[victim])), (len(beside[noise]), 0)),
        progress_unknown=() if noise_alone else (noise,),
        misses=((0, missed(beside[victim])), (missed(beside[noise]), 0)),
        alone_ns=alone_times((victim, noise), alone, "max"),
        alone_misses=tuple((missed(jobs), len(jobs)) for jobs in alone.values()),
        provenance={"taskset": pair.taskset.source, "warmup_jobs": WARMUP_JOBS,
                    "measured_by": "intercore mitigate protection (Solo, noise alone and "
                    "Interference runs)"})


def _protected(ts: TaskSet, plan: CgroupPlan, cfg: Config, jobs: dict[str, int],
               monitor_cpu: int, log: Path, notes: list[str]
               ) -> tuple[dict[str, runner.Result], MonitorStats]:
    cgroups = Cgroups()
    # Started before the groups exist and told about each root before it is made: if this
    # process is killed in any phase, the watchdog thaws and removes what it created.
    with Watchdog.start("experiment") as watchdog:
        notify = shm_path("protection-notify")
        watchdog.scratch(notify.parent)
        applied = cgroups.apply(plan, cfg.root_name, owner=watchdog)
        try:
            check_on_host(applied, cgroups)
            with ProcessGroup() as group:
                tasks = [runner.launch(
                    ts.task(name).periodic_spec(jobs[name], cgroups=applied.directories_of(name)),
                    group, notify=notify if ts.task(name).role == "critical" else None)
                    for name in jobs]
                options: dict[str, Any]
                windows, note = windows_from_plan(plan, notify)
                notes.extend([note] if note else [])
                options = {"policy": cfg.policy, "notify": str(notify), "cpu": monitor_cpu,
                           "priority": MONITOR_PRIORITY, "log": str(log),
                           "window_regions": windows}
                if cfg.policy == "event":
                    options["max_freeze"] = cfg.max_freeze
                else:
                    options["interval_ns"] = cfg.interval_ns
                    options["window_ns"] = max(cfg.interval_ns, POLL_WINDOW_NS)
                monitor = Monitor.start(monitor_spec(applied, **options), group)
                notify.unlink(missing_ok=True)  # both sides have it mapped
                runner.start_together(tasks)
                results = runner.finish_together(tasks)
                stats = monitor.stop()
        finally:
            notify.unlink(missing_ok=True)
            cgroups.teardown(applied)
    return results, stats


def run_placement(placement: str, topo: Topology, cfg: Config,
                  on_phase: Callable[[str], None] = lambda _: None) -> PlacementResult:
    notes: list[str] = []
    text, monitor_cpu = taskset_text(placement, topo, notes)
    cfg.out_dir.mkdir(exist_ok=True)
    path = cfg.out_dir / f"{placement}.taskset.yaml"
    outputs.write_text(path, text)
    pair = Pair(resolve(yamlfile.read(path), topo), "victim", "noise", monitor_cpu)
    return run_pair(placement, pair, cfg, notes, on_phase)


def run_pair(name: str, pair: Pair, cfg: Config, notes: list[str],
             on_phase: Callable[[str], None] = lambda _: None,
             plan: CgroupPlan | None = None, worst: tuple[str, ...] = ()) -> PlacementResult:
    """Solo, noise alone, Interference, the matrix they give, Algorithm 1's plan from it and
    Protected under that plan: the experiment on one task set, labelled `name`. A given
    `plan` (Algorithm 1 on the whole task set's matrix, as `intercore assess` makes it) is
    the one Protected applies instead: the protection verified is the one planned. `worst`,
    tasks of the set with the victim's period, are the worst aggressor a search found: the
    victim then runs beside them too (WORST_FOUND), unprotected, as the plan has no group
    for them."""
    ts, victim, noise = pair.taskset, pair.victim, pair.noise
    cfg.out_dir.mkdir(exist_ok=True)
    result = PlacementResult(name, pair, notes)
    counted = ts.task(noise).reports_jobs  # a command's progress is unknown
    # A command co-runs until the victim's jobs are done: it has no job count of its own.
    jobs = {victim: cfg.jobs,
            noise: max(1, math.ceil(cfg.jobs * ts.task(victim).period_ns
                                    / ts.task(noise).period_ns)) if counted else 1}
    spec = {task: ts.task(task).periodic_spec(jobs[task], seed=cfg.seed) for task in jobs}

    cpus = {c for c in (ts.task(victim).cpu, ts.task(noise).cpu, pair.monitor_cpu,
                        *(ts.task(t).cpu for t in worst)) if c is not None}
    stolen: dict[str, dict[int, float] | None] = {}

    def scenario(label: str, run: Callable[[], _T]) -> _T:
        with StolenTime(cpus) as steal:
            out = run()
        stolen[label] = steal.ms
        return out

    on_phase(f"{name}: solo ({jobs[victim]} jobs)")
    result.runs["solo"] = scenario("solo", lambda: runner.run_periodic([spec[victim]]))
    if counted:
        on_phase(f"{name}: noise alone")
        result.runs["noise-alone"] = runner.run_periodic([spec[noise]])
    else:
        notes.append(f"{noise} is an unmodified program (command): no noise-alone run, its "
                     "progress is unknown in every scenario (noise_progress null) and the "
                     f"plan rests on {victim}'s degradation beside it")
    on_phase(f"{name}: interference")
    result.runs["interference"] = scenario(
        "interference", lambda: runner.run_periodic([spec[victim], spec[noise]]))

    result.matrix = _matrix(pair, result.runs["solo"][victim],
                            result.runs["noise-alone"][noise] if counted else None,
                            result.runs["interference"])
    result.plan = plan or algorithm1.plan(ts, result.matrix, cfg.theta,
                                          matrix_source="measured by this experiment")
    if roles(result.plan)[1]:  # Algorithm 1 gave the monitor something to freeze
        on_phase(f"{name}: protected (Algorithm 1 plan + {cfg.policy} monitor)")
        log = cfg.out_dir / f"{name}.monitor.jsonl"
        applied = result.plan
        result.runs["protected"], result.monitor = scenario(
            "protected", lambda: _protected(ts, applied, cfg, jobs, pair.monitor_cpu, log, notes))
    else:
        i = result.matrix.interference(victim, noise)
        why = (f"I = {i:.2f} <= θ = {cfg.theta:g}, and {victim}'s worst case beside {noise} "
               "within its deadline") if plan is None else \
            f"in the plan given, from {plan.matrix.get('source')}"
        notes.append(f"Algorithm 1 separated nothing ({why}): Protected runs both tasks with "
                     "no cgroup and no monitor, as the plan says")
        on_phase(f"{name}: protected (nothing to protect: I <= θ, deadline kept)")
        result.runs["protected"] = scenario(
            "protected", lambda: runner.run_periodic([spec[victim], spec[noise]]))

    if worst:
        on_phase(f"{name}: beside the worst aggressor found ({', '.join(worst)})")
        beside = [ts.task(t).periodic_spec(jobs[victim], seed=cfg.seed) for t in worst]
        result.runs[WORST_FOUND] = scenario(
            WORST_FOUND, lambda: runner.run_periodic([spec[victim], *beside]))

    noise_ref = result.runs["interference"][noise].jobs
    for label in result.scenarios:
        run = result.runs[label]
        noise_done = progress(run[noise].jobs, noise_ref) \
            if noise in run and counted else None
        result.summaries[label] = summarize_jobs(run[victim].jobs, noise_done, stolen[label])
        notes.extend(_stolen_note(label, result.summaries[label]))
    result.refusal = cross_check(result.summaries["solo"], result.summaries["interference"],
                                 result.matrix, result.plan)
    result.figures = _figures(result, cfg.out_dir)
    return result


def _stolen_note(label: str, summary: ScenarioSummary) -> list[str]:
    """A scenario's misses read against the time the hypervisor took meanwhile: on a shared
    virtual machine a vCPU that does not run misses deadlines the task set would meet."""
    stolen = {cpu: ms for cpu, ms in (summary.host_steal_ms or {}).items() if ms > 0}
    if not (summary.misses and stolen):
        return []
    took = ", ".join(f"{ms:.0f} ms from CPU {cpu}" for cpu, ms in sorted(stolen.items()))
    return [f"{label}: {summary.misses}/{summary.n} missed while the hypervisor took {took} "
            f"(counted in {TICK_MS:g} ms ticks): the host, not only the task set, may explain "
            "them"]


def _figures(result: PlacementResult, out: Path) -> list[Path]:
    name, victim = result.name, result.pair.victim
    deadline_ms = result.pair.taskset.task(victim).deadline_ns / 1e6
    responses = {s: responses_ms(result.runs[s][victim].jobs) for s in result.scenarios}
    misses = {s: (result.summaries[s].misses, result.summaries[s].n) for s in result.scenarios}
    # Deferred: matplotlib is a third of every command's start-up, and only drawing needs it.
    from . import plots as protection_plots
    return [
        protection_plots.jobwise(responses, deadline_ms,
                                 f"{name}: {victim} response time per job (Fig. 7)",
                                 out / f"{name}-fig7-jobs.png"),
        protection_plots.cdf(responses, deadline_ms, f"{name}: CDF of response times (Fig. 8)",
                             out / f"{name}-fig8-cdf.png"),
        protection_plots.miss_ratio(misses, f"{name}: deadline misses (Fig. 9)",
                                    out / f"{name}-fig9-misses.png"),
    ]


# ---- the whole experiment ----------------------------------------------------------------------

def _monitor_logs(results: list[PlacementResult], out: Path) -> dict[str, list[dict]]:
    """The freezer monitor's log of every protected run, under the run's label in the
    store: `results timeline` draws each freeze and thaw from it."""
    logs = {}
    for r in results:
        path = out / f"{r.name}.monitor.jsonl"
        if r.monitor is not None and path.is_file():
            logs[f"{r.name}/protected"] = [dataclasses.asdict(e) for e in read_log(path)]
    return logs


def run(cfg: Config, *, db: Path | None, argv: list[str], topo: Topology | None = None,
        on_phase: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Every placement of `cfg`; the JSON document the CLI prints (and stores as summary)."""
    topo = topo or read_topology()
    started = time.time()
    config: dict[str, Any] = {"jobs": cfg.jobs, "policy": cfg.policy,
                              "interval_ms": cfg.interval_ns / 1e6, "theta": cfg.theta,
                              "max_freeze": cfg.max_freeze}
    if cfg.taskset is not None:
        pair = user_pair(cfg.taskset, topo)  # refused before the first run, not after Solo
        config["taskset"] = str(cfg.taskset)
        results = [run_pair("taskset", pair, cfg, [
            f"{pair.victim} (critical, CPU {pair.taskset.task(pair.victim).cpu}) beside "
            f"{pair.noise} (best-effort); the monitor runs on CPU {pair.monitor_cpu}"],
            on_phase)]
    else:
        config.update(period_ms=PERIOD_MS, deadline_ms=DEADLINE_MS,
                      noise_period_ms=NOISE_PERIOD_MS, noise_work=NOISE_WORK)
        results = [run_placement(p, topo, cfg, on_phase) for p in cfg.placements]
    doc: dict[str, Any] = {
        "placements": {r.name: r.to_dict() for r in results},
        "config": config,
        "out_dir": str(cfg.out_dir),
    }
    if db is not None:
        doc["invocation_id"] = save(db, results, command="experiment protection", argv=argv,
                                    params=doc["config"], summary=doc, out=cfg.out_dir,
                                    started_at=started)
    return doc


def save(db: Path, results: list[PlacementResult], *, command: str, argv: list[str],
         params: dict[str, Any], summary: dict[str, Any], out: Path,
         started_at: float) -> int:
    """Every run of `results` into the store as one invocation, each labelled
    `<result>/<run>` and its tasks `<result>/<task>`, with the monitor logs; its id."""
    tasks, runs = [], []
    for r in results:
        tasks += [TaskRow.of(t, f"{r.name}/{t.name}") for t in r.pair.taskset.tasks]
        for label, by_name in r.runs.items():
            runs.append((f"{r.name}/{label}",
                         {f"{r.name}/{n}": res for n, res in by_name.items()}))
    return save_runs(
        db, command=command, argv=argv, tasks=tasks, runs=runs, params=params,
        summary={**{k: v for k, v in summary.items() if k != "config"},
                 "monitor_logs": _monitor_logs(results, out)},
        started_at=started_at, finished_at=time.time())
