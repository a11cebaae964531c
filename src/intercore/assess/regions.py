"""Per-region Δ of the user's critical programs, measured beside their worst co-runner: the
regions step's measured cells (mitigate/plan/region_matrix.py), put beside the heatmap's
predictions in the region-level matrix and the dossier.

The paired harness measures a critical task's program as `intercore measure run -- PROG`
does (one run of a few jobs per repetition, each region's thread CPU time, interleaved pairs
with the running canary), with its worst best-effort co-runner of the whole-job matrix as
the aggressor on that co-runner's own CPU (a program of the user's as a `cmd:` aggressor
releasing jobs at its period), or the worst the harness can run. Which pairs can
be measured so is decided first, from the task set and the matrix alone, and every pair left
out is said with its reason.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..base.errors import InputError, NativeError
from ..base.sample import TOTAL_REGION
from ..host.topology import Topology
from ..measure.aggressors.presets import AggressorSpec
from ..measure.harness.session import Request, measure
from ..measure.periodic.matrix import InterferenceMatrix
from ..measure.periodic.runner import duration_arg
from ..measure.periodic.taskset import Task, TaskSet
from ..measure.program import TaskCommand, TaskProgram
from ..mitigate.plan.region_matrix import RegionMeasurement

# A repetition runs this many jobs of the program: enough for each region to run more than
# once, few enough that a pair of repetitions stays well under a second at a 100 ms period.
JOBS_PER_RUN = 3
STORE_SOURCE = "store invocation "  # a measured cell's source: its rows in the results store


@dataclass(frozen=True)
class Target:
    """One critical program to measure beside one co-runner, as the harness is asked to."""

    task: str
    beside: str
    request: Request


def critical_programs(ts: TaskSet) -> tuple[Task, ...]:
    """The critical tasks that run a program of the user's, not a built-in workload: those
    whose regions and worst aggressor assess measures."""
    return tuple(t for t in ts.tasks
                 if t.role == "critical" and isinstance(t.workload, TaskProgram))


def co_runners(ts: TaskSet, matrix: InterferenceMatrix, victim: str) -> list[str]:
    """The best-effort tasks, the one that degrades `victim` most in the matrix first, by
    what most of its rounds say (InterferenceMatrix.typical), then by its max over every job
    (a cell with no value counts least; a tie keeps the file's order)."""
    best = [t.name for t in ts.tasks if t.role == "best-effort"]
    return sorted(best, key=lambda b: (-(matrix.typical(victim, b) or 0.0),
                                       -(matrix.degradation(victim, b) or 0.0)))


def worst_co_runner(ts: TaskSet, matrix: InterferenceMatrix, victim: str) -> str:
    """The best-effort task that degrades `victim` most in the matrix."""
    return co_runners(ts, matrix, victim)[0]


def targets(ts: TaskSet, matrix: InterferenceMatrix, runs: int
            ) -> tuple[list[Target], list[str]]:
    """The pairs whose regions can be measured with the harness, and why each other critical
    task's cannot. Where the worst co-runner cannot be run by the harness (a program, or on
    the task's own CPU), the regions are measured beside the worst one that can, and the note
    says so: the worst pair is then covered by the whole-job matrix alone."""
    out, notes = [], []
    for task in (t for t in ts.tasks if t.role == "critical"):
        ranked = [ts.task(name) for name in co_runners(ts, matrix, task.name)]
        why = _why_not(task, ranked[0])
        beside = ranked[0] if why is None else next(
            (b for b in ranked[1:] if _why_not(task, b) is None), None)
        if why is not None:
            instead = f"; measured beside {beside.name} instead, the worst co-runner the " \
                "harness can run" if beside is not None else ""
            notes.append(f"{task.name}'s regions beside {ranked[0].name} are not measured: "
                         f"{why}{instead}")
        if beside is None:
            continue
        out.append(Target(task.name, beside.name, program_request(
            task, (aggressor(beside),), runs,
            (beside.cpu,) if beside.cpu is not None else None)))
    return out, notes


# A co-runner that is a program of the user's runs as the harness's external aggressor: its
# runner releases jobs at its period until it is stopped, this many at most (the runner's
# limit; years at any period a task set would use).
FOREVER_JOBS = 10_000_000


def aggressor(beside: Task) -> str:
    """The co-runner as the harness's aggressor: a built-in by its label, a program of the
    user's as a `cmd:` aggressor releasing jobs at its period until the harness stops it
    (paused between interference halves with SIGSTOP, its passed releases skipped)."""
    if isinstance(beside.workload, AggressorSpec):
        return beside.workload.label
    assert isinstance(beside.workload, TaskProgram) and beside.period_ns is not None
    return "cmd:" + shlex.join([beside.workload.path, "--jobs", str(FOREVER_JOBS),
                                "--period", duration_arg(beside.period_ns), "--",
                                *beside.workload.args])


def program_request(task: Task, aggressors: tuple[str, ...], runs: int,
                    aggressor_cpus: tuple[int, ...] | None) -> Request:
    """The harness's request for a critical task's program beside `aggressors`: each
    repetition one run of JOBS_PER_RUN jobs at the task's period, on the task's CPU."""
    assert isinstance(task.workload, TaskProgram) and task.period_ns is not None
    args = ("--jobs", str(JOBS_PER_RUN), "--period", duration_arg(task.period_ns), "--",
            *task.workload.args)
    return Request(victim=task.workload.path, args=args, aggressors=aggressors, runs=runs,
                   victim_cpu=task.cpu, aggressor_cpus=aggressor_cpus)


def _why_not(task: Task, beside: Task) -> str | None:
    if not isinstance(task.workload, TaskProgram):
        return (f"it is the built-in {task.workload.label}, not a program of the user's own "
                "whose regions the plan would protect")
    if isinstance(beside.workload, TaskProgram):
        if "@" in beside.workload.path or any("@" in a for a in beside.workload.args):
            return ("the co-runner's command line has an '@', which an aggressor's spelling "
                    "reserves for its CPU; the whole-job matrix measured the pair")
    elif isinstance(beside.workload, TaskCommand):
        return ("the co-runner is an unmodified program (a command) that may end at any "
                "time, not one built with ic_task.h that runs until stopped; the whole-job "
                "matrix measured the pair")
    elif not isinstance(beside.workload, AggressorSpec):
        return (f"the co-runner is the built-in victim {beside.workload.label}, which the "
                "harness runs as a victim, not as an aggressor; the whole-job matrix "
                "measured the pair")
    if beside.cpu is not None and beside.cpu == task.cpu:
        return (f"both run on CPU {task.cpu}, where the channel is the CPU's time, which the "
                "whole-job matrix measures; a paired measurement per region needs the "
                "co-runner on another CPU")
    return None


def measure_targets(found: list[Target], *, db: Path, argv: list[str], topo: Topology,
                    say: Callable[[str], None]) -> tuple[list[RegionMeasurement], list[str]]:
    """Each target measured and stored: its regions' paired comparisons (the whole run's left
    to the matrix), each citing its store invocation."""
    out, notes = [], []
    for t in found:
        try:
            result = measure(t.request, db=db, argv=argv, command="assess regions",
                             on_phase=say, topo=topo)
        except (InputError, NativeError) as exc:  # a co-runner program that failed, too
            notes.append(f"{t.task}'s regions beside {t.beside} are not measured: "
                         f"{getattr(exc, 'message', str(exc))}")
            continue
        source = f"{STORE_SOURCE}{result.invocation_id}"
        regions = [c for c in result.regions if c.region_name != TOTAL_REGION]
        if not regions:
            notes.append(f"{t.task} marks no region of its own: only its whole run was "
                         f"measured beside {t.beside} ({source})")
        out += [RegionMeasurement(t.task, t.beside, c, source) for c in regions]
    return out, notes
