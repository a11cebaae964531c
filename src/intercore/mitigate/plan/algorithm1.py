"""Algorithm 1 of paper 000 (§4.4.2): a static cgroup hierarchy from the interference matrix.

    for each pair {τi, τj}, i < j, with I_ij > θ:
        give τi its own sub-cgroup Ci, τj its own Cj ≠ Ci, enable the freezer on both
    tasks without a high-contention pair stay in the root group

As implemented here, and beyond the paper:
- θ must be > 1 and the comparison is strict (I_ij = θ is not high contention), as written.
- The deadline rule: a pair is also high-contention when a critical task of it degrades
  beside the other by more than it can afford, D / (its response alone), when the matrix
  records that time (`alone_ns`). A task whose slack is below θ would otherwise be left
  unprotected while it misses deadlines (paper 000's experiment on a slower host did).
- Every pair must be measured: an unknown pair could hide the worst one, so it is an error
  rather than a silent "no contention".
- Each separated task gets a group of its own (so the pairs are trivially in different groups)
  and its task-set CPU weight; the root group gets the sum of its members' weights, so that
  moving tasks into it does not shrink their share against separated groups. cpusets come
  from the tasks' CPUs (a group of unpinned tasks keeps all its parent's CPUs).
- Roles turn separation into a monitor rule: a separated critical group is *protected* and
  lists the separated best-effort groups it forms a high-contention pair with
  (`freeze_while_active`); a separated best-effort group may be *frozen*.
- What a freezer cannot fix is flagged: two critical tasks in a high-contention pair (freezing
  either breaks its own guarantees), and pairs of best-effort tasks (nothing triggers a freeze).
- From a region-level matrix (mitigate/plan/region_matrix.py), beyond the paper's scalar I: a pair
  the platform model declares free, with a measurement that does not contradict it, needs no
  separation (`free`); a separated critical task whose named regions alone exceed θ is frozen
  for in those regions (`windows`) rather than for whole jobs; each pair names the cell that
  decided it (provenance, region, channels); and the plan says per channel the model found
  what covers it, or that nothing does and why (`channels`).
"""

from __future__ import annotations

import math

from ...base.errors import InputError
from ...measure.periodic.matrix import InterferenceMatrix, RegionCell
from ...measure.periodic.taskset import Task, TaskSet
from .record import (
    ROOT_GROUP,
    CgroupPlan,
    ChannelCover,
    FreePair,
    Group,
    Misses,
    Pair,
    PlanTask,
    PlanWarning,
)
from .region_matrix import contradicts_free

DEFAULT_THETA = 1.5
MAX_WEIGHT = 10000


def affordable(task: Task, matrix: InterferenceMatrix) -> float | None:
    """The degradation critical `task` can take before its measured worst case passes its
    deadline (D / its response alone), or None: best-effort, or no time alone recorded."""
    alone = matrix.alone(task.name)
    if task.role != "critical" or alone is None:
        return None
    return task.deadline_ns / alone


def _deadline_breach(taskset: TaskSet, matrix: InterferenceMatrix, a: str, b: str
                     ) -> tuple[str, float] | None:
    """The critical task of {a, b} whose degradation beside the other exceeds what it can
    afford (its measured response beside the other passes its deadline), with that slack."""
    for task, other in ((a, b), (b, a)):
        slack = affordable(taskset.task(task), matrix)
        value = matrix.degradation(task, other)
        if slack is not None and value is not None and value > slack:
            return task, slack
    return None


def misses(matrix: InterferenceMatrix, task: str, beside: str) -> Misses | None:
    """`task`'s deadline misses alone and beside `beside`, if the matrix records them."""
    if matrix.misses is None or matrix.alone_misses is None or \
            task in matrix.progress_unknown:  # a command reports no jobs to miss
        return None
    i, j = matrix.index(task), matrix.index(beside)
    alone, jobs = matrix.alone_misses[i]
    return Misses(alone=alone, alone_jobs=jobs, beside=matrix.misses[i][j],
                  beside_jobs=matrix.n[i][j])


def _deciding_cell(matrix: InterferenceMatrix, a: str, b: str) -> RegionCell | None:
    """The region cell behind the pair's I (the worse direction's worst cell), if any."""
    forward, backward = matrix.degradation(a, b), matrix.degradation(b, a)
    first = (a, b) if backward is None or (forward is not None and forward >= backward) \
        else (b, a)
    cells = matrix.cells(*first)
    return cells[0] if cells else None


def free_pair(matrix: InterferenceMatrix, a: str, b: str) -> FreePair | None:
    """The pair as the model declares it free: every cell of a direction with cells is
    model-free, and a whole-job value of the other direction does not contradict it."""
    for task, other in ((a, b), (b, a)):
        cells = matrix.cells(task, other)
        if cells and all(c.provenance == "model-free" for c in cells):
            back = matrix.degradation(other, task)
            if back is not None and not matrix.cells(other, task) and contradicts_free(back):
                return None
            check = cells[0].check
            assert check is not None  # a model-free cell carries its check (RegionCell)
            return FreePair(a=a, b=b, check=check.value, n=check.n)
    return None


def _windows(taskset: TaskSet, matrix: InterferenceMatrix, a: str, b: str,
             theta: float) -> tuple[tuple[str, ...], PlanWarning | None]:
    """The regions of the pair's critical task above θ beside the other, when they alone
    carry its excess and the task can reach them (reaches_its_windows); () (freeze for whole
    jobs) when the whole job exceeds θ and no named region does, or the critical direction is
    not the one above θ; and () with a warning saying why when the co-runner can hold the
    task's CPU."""
    named = _named_windows(taskset, matrix, a, b, theta)
    if named is None:
        return (), None
    (critical, other), regions = named
    if reaches_its_windows(critical, other):
        return regions, None
    return (), PlanWarning(
        code="whole-jobs", tasks=(critical.name, other.name),
        message=f"{critical.name}'s regions above θ ({', '.join(regions)}) are protected as "
                f"whole jobs: {other.name} can hold its CPU (CPU "
                f"{critical.cpu if critical.cpu is not None else 'any'}, priority "
                f"{other.priority} against {critical.priority}), so a job released while it "
                "runs would wait for it before reaching a window")


def _named_windows(taskset: TaskSet, matrix: InterferenceMatrix, a: str, b: str,
                   theta: float) -> tuple[tuple[Task, Task], tuple[str, ...]] | None:
    """(critical task, co-runner) and its named regions above θ beside the other, or None."""
    for task, other in ((a, b), (b, a)):
        if taskset.task(task).role != "critical":
            continue
        above = [c for c in matrix.cells(task, other) if c.deciding > theta]
        named = tuple(c.region for c in above if c.region is not None)
        if named:
            return (taskset.task(task), taskset.task(other)), named
    return None


def reaches_its_windows(critical: Task, other: Task) -> bool:
    """Whether a freeze that waits for `critical` to enter a region can come in time: the
    co-runner never holds the critical task's CPU (both pinned, to different CPUs) or cannot
    keep it from running (a strictly lower priority, SCHED_FIFO preempting it). Otherwise a
    critical job released while the co-runner runs on its CPU waits for it and never reaches
    the window in time: its whole job must be protected from the release."""
    apart = critical.cpu is not None and other.cpu is not None and critical.cpu != other.cpu
    return apart or critical.priority > other.priority


def high_contention_pairs(taskset: TaskSet, matrix: InterferenceMatrix, theta: float
                          ) -> tuple[tuple[Pair, ...], dict[tuple[str, str], PlanWarning]]:
    """Every pair {a, b} (task-set order, a before b) with symmetric I_ab > θ, or, beyond
    the paper, with a critical task whose degradation beside the other makes its measured
    worst case pass its deadline: θ is a rule of thumb, the deadline is the requirement,
    and a task with less slack than θ misses deadlines at degradations θ calls harmless.
    With them, the pairs whose regions above θ are protected as whole jobs, and why."""
    check_theta(theta)
    tasks = taskset.names
    silent = set(matrix.progress_unknown)
    # Two commands: neither reports a job, so nothing measures them and nothing is protected.
    measurable = [(a, b) for i, a in enumerate(tasks) for b in tasks[i + 1:]
                  if not {a, b} <= silent]
    unknown = [f"{a}/{b}" for a, b in measurable if matrix.interference(a, b) is None]
    if unknown:
        raise InputError(f"the matrix has no value for {', '.join(unknown)}: measure every "
                         "pair (an unmeasured pair may be the worst one)", field="--matrix")
    pairs, whole_jobs = [], {}
    for a, b in measurable:
        value = matrix.interference(a, b)
        assert value is not None  # every measurable pair was checked above
        breach = _deadline_breach(taskset, matrix, a, b)
        if free_pair(matrix, a, b) is None and (value > theta or breach is not None):
            cell = _deciding_cell(matrix, a, b)
            # A breached deadline protects whole jobs: the excess is not the regions' alone.
            windows, why = ((), None) if breach else _windows(taskset, matrix, a, b, theta)
            if why is not None:
                whole_jobs[(a, b)] = why
            pairs.append(Pair(a=a, b=b, interference=value,
                              a_beside_b=matrix.degradation(a, b),
                              b_beside_a=matrix.degradation(b, a),
                              reason="theta" if value > theta else "deadline",
                              deadline_task=breach[0] if breach else None,
                              affordable=breach[1] if breach else None,
                              a_misses=misses(matrix, a, b), b_misses=misses(matrix, b, a),
                              provenance=cell.provenance if cell else "measured",
                              region=cell.region if cell else None,
                              channels=cell.channels if cell else None,
                              windows=windows))
    return tuple(pairs), whole_jobs


def check_theta(theta: float) -> None:
    if not math.isfinite(theta) or theta <= 1:
        raise InputError(f"θ = {theta} must be a finite ratio > 1 (1 means no degradation)",
                         field="--theta")


def check_same_tasks(taskset: TaskSet, matrix: InterferenceMatrix) -> None:
    missing = [t for t in taskset.names if t not in matrix.tasks]
    extra = [t for t in matrix.tasks if t not in taskset.names]
    if missing or extra:
        parts = ([f"not in the matrix: {', '.join(missing)}"] if missing else []) + \
                ([f"not in the task set: {', '.join(extra)}"] if extra else [])
        raise InputError("the matrix and the task set name different tasks (" +
                         "; ".join(parts) + ")", field="--matrix")


def _group(name: str, members: list[Task], separated: bool, partners: tuple[str, ...] = (),
           freeze_while_active: tuple[str, ...] = (), windows: tuple[str, ...] = ()) -> Group:
    cpus = None if any(t.cpu is None for t in members) else \
        tuple(sorted({t.cpu for t in members}))
    if not separated:
        monitor = "none"
    else:
        monitor = "protect" if members[0].role == "critical" else "freeze"
    return Group(name=name, tasks=tuple(t.name for t in members), separated=separated,
                 freezer=separated, monitor=monitor, cpus=cpus,
                 weight=min(MAX_WEIGHT, sum(t.weight for t in members)),
                 realtime=any(t.priority > 0 for t in members), separated_from=partners,
                 freeze_while_active=freeze_while_active, windows=windows)


def _group_windows(name: str, pairs: tuple[Pair, ...]) -> tuple[str, ...]:
    """A protect group's windows: the union of its pairs' (the monitor follows one set of
    regions), or () when any pair needs whole jobs frozen."""
    mine = [p.windows for p in pairs if name in (p.a, p.b)]
    if not mine or not all(mine):
        return ()
    return tuple(dict.fromkeys(r for w in mine for r in w))


def channel_cover(taskset: TaskSet, matrix: InterferenceMatrix, theta: float,
                  pairs: tuple[Pair, ...]) -> tuple[ChannelCover, ...]:
    """Per channel the model found between a critical task and a co-runner: freeze windows
    or whole-job freezing when every pair on it is separated for a freeze, else unmitigated,
    naming the pairs that leave it so and why."""
    separated = {frozenset((p.a, p.b)): p for p in pairs}
    on: dict[str, dict[str, str | None]] = {}  # channel -> pair -> why unmitigated (None: freeze)
    for cell in matrix.regions:
        if cell.region is not None or not cell.channels:
            continue
        key = f"{cell.task}/{cell.beside}"
        p = separated.get(frozenset((cell.task, cell.beside)))
        if p is None:
            worst = matrix.interference(cell.task, cell.beside)
            why = f"I = {decisive(worst, theta)} is at most θ = {theta:g}" if worst else \
                "the pair's I is unknown"
        elif taskset.task(cell.beside).role == "critical":
            why = "both tasks are critical: a freezer cannot protect one from the other"
        else:
            why = None
        for channel in cell.channels:
            on.setdefault(channel, {})[key] = why
    out = []
    for channel, by_pair in on.items():
        open_ = {k: w for k, w in by_pair.items() if w is not None}
        if open_:
            out.append(ChannelCover(channel=channel, pairs=tuple(by_pair),
                                    mitigation="unmitigated",
                                    reason="; ".join(f"{k}: {w}" for k, w in open_.items())))
            continue
        windowed = all(separated[frozenset(k.split("/"))].windows for k in by_pair)
        out.append(ChannelCover(channel=channel, pairs=tuple(by_pair),
                                mitigation="freeze windows" if windowed else
                                "freeze (whole job)",
                                reason="every pair on it is separated and its co-runner "
                                       "frozen while the critical task runs" +
                                       (" its windows" if windowed else "")))
    return tuple(out)


def decisive(value: float, against: float) -> str:
    """`value` to four decimals, or more until it no longer reads as `against` (so a reader
    sees which side of a threshold it falls): 1.49996 against θ = 1.5 reads 1.49996."""
    for digits in range(4, 17):
        text = f"{value:.{digits}f}"
        if value == against or text != f"{against:.{digits}f}":
            return text
    return repr(value)


def _unprotected(task: Task, matrix: InterferenceMatrix, theta: float) -> PlanWarning:
    """A critical task the plan leaves in the root group, with the values that decided it
    to enough digits to see which side of each threshold they fall."""
    others = [o for o in matrix.tasks if o != task.name]
    worst = max(others, key=lambda o: matrix.degradation(task.name, o) or 0.0, default=None)
    if worst is None:
        return PlanWarning(code="unprotected", tasks=(task.name,),
                           message=f"{task.name} (critical) runs alone in the matrix: nothing "
                                   "was measured beside it, so nothing protects it")
    value = matrix.degradation(task.name, worst)
    cells = matrix.cells(task.name, worst)
    source = "" if not cells else \
        f" ({cells[0].provenance}, {cells[0].region or 'whole job'})"
    slack = affordable(task, matrix)
    kept = ("its deadline was not checked (the matrix records no time alone)" if slack is None
            else f"within the {decisive(slack, value)} its deadline affords")
    missed = misses(matrix, task.name, worst)
    if missed is not None:
        kept += f" (deadline misses: {missed} {worst})"
    return PlanWarning(code="unprotected", tasks=(task.name,),
                       message=f"{task.name} (critical) stays unprotected: its worst "
                               f"degradation, {decisive(value, theta)}{source} beside {worst}, "
                               f"is at most θ = {theta:g}, and {kept}")


def _warnings(taskset: TaskSet, matrix: InterferenceMatrix, theta: float,
              pairs: tuple[Pair, ...], whole_jobs: dict[tuple[str, str], PlanWarning]
              ) -> tuple[PlanWarning, ...]:
    out = []
    if matrix.provisional:
        out.append(PlanWarning(
            code="provisional", tasks=(),
            message="decided from a provisional matrix (" + "; ".join(matrix.notes) + "): "
                    "its ratios may understate the interference of a host that shares its "
                    "cache, so a pair left together here may need separating; measure again"))
    separated = {name for p in pairs for name in (p.a, p.b)}
    for task in taskset.tasks:
        if task.role == "critical" and task.name not in separated:
            out.append(_unprotected(task, matrix, theta))
        slack = affordable(task, matrix)
        if slack is not None and slack <= 1:
            out.append(PlanWarning(
                code="deadline-alone", tasks=(task.name,),
                message=f"{task.name} takes {matrix.alone(task.name) / 1e6:.3f} ms alone "
                        f"({matrix.statistic}), at or past its {task.deadline_ns / 1e6:.3f} ms "
                        "deadline: no separation can make it meet it"))
    for p in pairs:
        if (p.a, p.b) in whole_jobs:
            out.append(whole_jobs[(p.a, p.b)])
        roles = {taskset.task(p.a).role, taskset.task(p.b).role}
        if roles == {"critical"}:
            out.append(PlanWarning(
                code="critical-pair", tasks=(p.a, p.b),
                message=f"{p.a} and {p.b} are both critical and interfere (I = "
                        f"{p.interference:.3g}): a freezer cannot protect one critical task "
                        "from another; schedule them in disjoint time windows, partition the "
                        "cache or memory bandwidth, or budget the degradation in both WCETs"))
        elif roles == {"best-effort"}:
            out.append(PlanWarning(
                code="best-effort-pair", tasks=(p.a, p.b),
                message=f"{p.a} and {p.b} are both best-effort and interfere (I = "
                        f"{p.interference:.3g}): they get separate groups, but no critical job "
                        "triggers a freeze between them"))
    return tuple(out)


def plan(taskset: TaskSet, matrix: InterferenceMatrix, theta: float = DEFAULT_THETA,
         *, matrix_source: str | None = None) -> CgroupPlan:
    """The cgroup plan of Algorithm 1 for `taskset` under `matrix` and threshold θ."""
    check_same_tasks(taskset, matrix)
    pairs, whole_jobs = high_contention_pairs(taskset, matrix, theta)
    partners: dict[str, list[str]] = {}
    for p in pairs:
        partners.setdefault(p.a, []).append(p.b)
        partners.setdefault(p.b, []).append(p.a)

    groups = []
    for task in taskset.tasks:
        if task.name not in partners:
            continue
        mates = tuple(partners[task.name])
        freeze = tuple(m for m in mates if taskset.task(m).role == "best-effort") \
            if task.role == "critical" else ()
        groups.append(_group(task.name, [task], True, mates, freeze,
                             _group_windows(task.name, pairs) if freeze else ()))
    unseparated = [t for t in taskset.tasks if t.name not in partners]
    if unseparated:
        groups.append(_group(ROOT_GROUP, unseparated, False))

    tasks = tuple(PlanTask(name=t.name, role=t.role,
                           group=t.name if t.name in partners else ROOT_GROUP, cpu=t.cpu,
                           priority=t.priority, weight=t.weight) for t in taskset.tasks)
    return CgroupPlan(
        taskset={"name": taskset.name, "source": taskset.source},
        matrix={"statistic": matrix.statistic, "source": matrix_source,
                "provenance": matrix.provenance, "provisional": matrix.provisional},
        theta=theta, tasks=tasks, groups=tuple(groups), pairs=pairs,
        free=tuple(f for a, b, _ in matrix.pairs() if {a, b} <= set(taskset.names)
                   and (f := free_pair(matrix, a, b)) is not None),
        channels=channel_cover(taskset, matrix, theta, pairs),
        warnings=_warnings(taskset, matrix, theta, pairs, whole_jobs))
