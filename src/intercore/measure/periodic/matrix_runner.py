"""Measure the interference matrix of a task set: every task alone, every pair together.

The paired design of the measurement core, at the granularity of periodic runs: each round
runs every task alone and every pair together, one block each, in a random order drawn per
round, so slow drift of the host (other tenants, frequency, the hypervisor) lands on the
isolated and the interfered runs alike. The directed degradation of task i beside task j is

    D_ij = S(response times of i beside j) / S(response times of i alone)

with S the max (the worst case, which is what a WCET budget must cover) or the p99 (when the
worst case is dominated by rare host noise and enough jobs were run to have a p99).

With a running canary (measure/harness/paired.py) probed between blocks, every block gets the host
regime the probes on both sides of it saw; D_ij is then computed per regime (the jobs beside
j in blocks of that regime, over all of i's jobs alone: alone, nothing on another CPU can
interfere), and the matrix keeps the worst regime per cell (measure/periodic/matrix.py).

Every block starts its tasks as new processes, so each task's first job in a block runs
cold (page faults on its data, caches and TLB empty) whatever runs beside it. Left in, that
job decided the max alone and made co-runners look like speed-ups (a control loop's cold
first job 0.52 ms against 0.24-0.33 ms warm, Δ 0.64 beside a co-runner that slowed it). Each
block therefore runs WARMUP_JOBS more jobs than its length holds, and the matrix is computed
from the jobs after them; the store keeps every job, and the matrix's provenance says how
many were left out.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ...base.errors import InputError
from ...host.topology import Topology, default_placement
from ..regime import canary as canary_mod
from ..harness.paired import REGIMES, CanaryPlan, Probe, block_regime, running_canary
from ...base.job import JobResult
from .store import TaskRow, save_runs
from .matrix import InterferenceMatrix, RegimeCells, Statistic
from .runner import PeriodicResult, run_periodic
from ..harness.schedule import shuffled_rounds
from ..harness.stats import min_n_for
from .taskset import TaskSet


@dataclass(frozen=True)
class Block:
    """One periodic run: `members` run together from one time origin."""

    round: int
    members: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"round {self.round}: " + (" + ".join(self.members) if len(self.members) > 1
                                          else f"{self.members[0]} alone")


def schedule(names: Sequence[str], rounds: int, seed: int,
             silent: Sequence[str] = ()) -> list[Block]:
    """Every task alone and every pair together once per round, shuffled within each round;
    no block of `silent` tasks only (commands: no jobs to measure, and nothing to end it)."""
    if rounds < 1:
        raise InputError(f"must be at least 1, got {rounds}", field="--rounds")
    members = [(n,) for n in names] + list(itertools.combinations(names, 2))
    members = [m for m in members if not set(m) <= set(silent)]
    return [Block(r, m) for r, m in shuffled_rounds(members, rounds, seed)]


# The first job of each task in a block: its process has just started (see the docstring).
WARMUP_JOBS = 1


def jobs_in(period_ns: int, block_ns: int) -> int:
    """Jobs of a task with this period in one block (at least one), after its warm-up."""
    return max(1, math.ceil(block_ns / period_ns))


def steady(jobs: Sequence[JobResult]) -> list[JobResult]:
    """The jobs of one block that the matrix counts: those after the warm-up."""
    return [j for j in jobs if j.job >= WARMUP_JOBS]


def statistic_of(values: Sequence[float], statistic: Statistic) -> float:
    arr = np.asarray(values, dtype=float)
    if statistic == "max":
        return float(arr.max())
    if arr.size < min_n_for(99):
        raise InputError(f"the p99 needs at least {min_n_for(99)} jobs per cell, this run has "
                         f"{arr.size}: run more rounds or longer blocks, or use the max",
                         field="--statistic")
    return float(np.percentile(arr, 99))


def alone_times(names: Sequence[str], alone: dict[str, list[JobResult]],
                statistic: Statistic) -> tuple[float | None, ...]:
    """Each task's response time alone by `statistic` (None where it cannot be computed)."""
    out: list[float | None] = []
    for name in names:
        try:
            out.append(statistic_of([j.response_ns for j in alone[name]], statistic))
        except (InputError, ValueError):  # a p99 from too few jobs, or no job at all
            out.append(None)
    return tuple(out)


def degradation(alone: Sequence[JobResult], beside: Sequence[JobResult],
                statistic: Statistic) -> float:
    return statistic_of([j.response_ns for j in beside], statistic) / \
        statistic_of([j.response_ns for j in alone], statistic)


@dataclass
class MatrixRun:
    matrix: InterferenceMatrix
    blocks: list[tuple[Block, dict[str, PeriodicResult]]]
    regimes: list[str | None]  # per block; None without a canary
    probes: list[Probe]


def _cells(names: Sequence[str], alone: dict[str, list[JobResult]],
           beside: dict[tuple[str, str], list[JobResult]], statistic: Statistic,
           strict: bool) -> tuple[list[list[float | None]], list[list[int]]]:
    """Directed values and job counts; with strict=False a cell whose statistic cannot be
    computed from its jobs (a p99 from too few) stays None."""
    size = len(names)
    directed: list[list[float | None]] = [[None] * size for _ in range(size)]
    counts = [[0] * size for _ in range(size)]
    for (a, b), jobs in beside.items():
        i, j = names.index(a), names.index(b)
        try:
            directed[i][j] = degradation(alone[a], jobs, statistic)
        except InputError:
            if strict:
                raise
            continue
        counts[i][j] = len(jobs)
    return directed, counts


def _worst(names: Sequence[str], per_regime: dict[str, tuple[list, list]]
           ) -> tuple[list[list[float | None]], list[list[int]], list[list[str | None]]]:
    size = len(names)
    directed: list[list[float | None]] = [[None] * size for _ in range(size)]
    counts = [[0] * size for _ in range(size)]
    regime_of: list[list[str | None]] = [[None] * size for _ in range(size)]
    for regime, (d, n) in per_regime.items():
        for i in range(size):
            for j in range(size):
                if d[i][j] is not None and (directed[i][j] is None or d[i][j] > directed[i][j]):
                    directed[i][j], counts[i][j], regime_of[i][j] = d[i][j], n[i][j], regime
    return directed, counts, regime_of


def provisional_note(regimes: Sequence[str | None], can_share: bool) -> str | None:
    """Why a matrix is provisional, or None: on a host that can share its cache, no block
    was seen shared (or no canary looked)."""
    if not can_share or "shared" in regimes:
        return None
    if all(r is None for r in regimes):
        return ("measured without the running canary on a host whose CPUs can share their "
                "cache: nothing shows that the sharing was there; re-measure with the canary")
    return (f"no block of {len(regimes)} was measured while the CPUs shared their cache "
            "(the canary saw " + ", ".join(f"{sum(r == g for r in regimes)} {g}"
                                            for g in REGIMES) +
            "): values near 1 may only mean the sharing never happened; re-measure when "
            "`intercore doctor` sees the cache shared")


def canary_for(taskset: TaskSet, topo: Topology) -> tuple[CanaryPlan | None, int | None, bool]:
    """The running canary beside the task set's first critical task (or the harness's default
    victim CPU), its CPU, and whether the regime it watches bears on the cells: the topology
    says its CPUs can share the cache and some pair of tasks may run on two CPUs (tasks all
    pinned to one CPU share every cache whatever the other CPUs do)."""
    critical = [t.cpu for t in taskset.tasks if t.role == "critical" and t.cpu is not None]
    vcpu = critical[0] if critical else default_placement(topo).victim
    others = [c for c in topo.online_cpus if c != vcpu]
    if not others:
        return None, None, False
    cpus = {t.cpu for t in taskset.tasks}
    cross_core = None in cpus or len(cpus) > 1
    return canary_mod.running_plan(topo, vcpu, others[0]), vcpu, \
        cross_core and canary_mod.can_share(topo, vcpu, others[0])


def measure_matrix(taskset: TaskSet, *, rounds: int = 3, block_ns: int = 2_000_000_000,
                   statistic: Statistic = "max", seed: int = 1,
                   canary: CanaryPlan | None = None, canary_cpu: int | None = None,
                   can_share: bool = False,
                   on_block: Callable[[int, int, Block], None] | None = None) -> MatrixRun:
    """Run the schedule (with the running canary between blocks when `canary` is given; its
    victim on `canary_cpu`) and compute the directed matrix, per regime and worst."""
    if block_ns <= 0:
        raise InputError("must be positive", field="--block")
    names = taskset.names
    silent = tuple(t.name for t in taskset.tasks if not t.reports_jobs)
    plan = schedule(names, rounds, seed, silent)
    results: list[tuple[Block, dict[str, PeriodicResult]]] = []
    regimes: list[str | None] = []
    probes: list[Probe] = []

    def run_blocks(probe) -> None:
        for i, block in enumerate(plan):
            if on_block:
                on_block(i, len(plan), block)
            specs = [taskset.task(n).periodic_spec(
                WARMUP_JOBS + jobs_in(taskset.task(n).period_ns, block_ns)
                if n not in silent else 1, seed=seed + block.round) for n in block.members]
            results.append((block, run_periodic(specs)))
            if probe is not None:
                probes.append(probe())
                regimes.append(block_regime(probes[-2], probes[-1]))
            else:
                regimes.append(None)

    if canary is not None:
        t0 = time.monotonic()
        with running_canary(canary, victim_cpu=canary_cpu if canary_cpu is not None else 0,
                            probes=len(plan) + 1, seed=seed) as rc:
            probes.append(rc.probe(t0))
            run_blocks(lambda: rc.probe(t0))
    else:
        run_blocks(None)

    alone: dict[str, list[JobResult]] = {n: [] for n in names}
    beside: dict[str | None, dict[tuple[str, str], list[JobResult]]] = {}
    # The same jobs round by round, every regime pooled: what each round says on its own.
    alone_r: dict[int, dict[str, list[JobResult]]] = {}
    beside_r: dict[int, dict[tuple[str, str], list[JobResult]]] = {}
    for (block, by_name), regime in zip(results, regimes):
        if len(block.members) == 1:
            jobs = steady(by_name[block.members[0]].jobs)
            alone[block.members[0]].extend(jobs)
            alone_r.setdefault(block.round, {}).setdefault(block.members[0], []).extend(jobs)
            continue
        cells = beside.setdefault(regime, {})
        for a, b in (block.members, block.members[::-1]):
            if a not in silent:
                jobs = steady(by_name[a].jobs)
                cells.setdefault((a, b), []).extend(jobs)
                beside_r.setdefault(block.round, {}).setdefault((a, b), []).extend(jobs)
    provenance = {"taskset": taskset.source, "rounds": rounds, "block_ns": block_ns,
                  "seed": seed, "warmup_jobs": WARMUP_JOBS,
                  "measured_by": "intercore measure matrix (paired rounds"
                  + (", running canary)" if canary is not None else ")")}
    if canary is None:
        pooled: dict[tuple[str, str], list[JobResult]] = beside.get(None, {})
        directed, counts = _cells(names, alone, pooled, statistic, strict=True)
        by_regime: dict[str, RegimeCells] = {}
        regime_of = None
    else:
        per = {r: _cells(names, alone, cells, statistic, strict=False)
               for r, cells in beside.items()}
        directed, counts, of = _worst(names, per)
        if all(v is None for row in directed for v in row) and beside:
            _cells(names, alone, {k: v for c in beside.values() for k, v in c.items()},
                   statistic, strict=True)  # raises the reason no cell could be computed
        by_regime = {r: RegimeCells(directed=tuple(tuple(x) for x in d),
                                    n=tuple(tuple(x) for x in n)) for r, (d, n) in per.items()}
        regime_of = tuple(tuple(row) for row in of)
    note = provisional_note(regimes, can_share)
    notes = (note,) if note else ()
    if silent:
        notes += (f"{', '.join(silent)}: an unmodified program (command), progress unknown: "
                  "no jobs, so no row; each pair's I is the other task's degradation beside "
                  "it",)

    def cell_jobs(i: int, j: int) -> list[JobResult]:
        """The jobs behind cell (i, j): those of the regime its value came from."""
        regime = None if regime_of is None else regime_of[i][j]
        return beside.get(regime, {}).get((names[i], names[j]), []) if counts[i][j] else []

    size = len(names)
    matrix = InterferenceMatrix(
        tasks=names, statistic=statistic,
        directed=tuple(tuple(row) for row in directed), n=tuple(tuple(r) for r in counts),
        misses=tuple(tuple(sum(job.missed for job in cell_jobs(i, j)) for j in range(size))
                     for i in range(size)),
        alone_ns=alone_times(names, alone, statistic),
        alone_misses=tuple((sum(job.missed for job in alone[n]), len(alone[n])) for n in names),
        provenance=provenance, by_regime=by_regime, regime_of=regime_of,
        provisional=note is not None, notes=notes, progress_unknown=silent,
        by_round=tuple(_round_cells(names, alone_r.get(r, {}), beside_r.get(r, {}), statistic)
                       for r in range(rounds)))
    return MatrixRun(matrix, results, regimes, probes)


def _round_cells(names: Sequence[str], alone: dict[str, list[JobResult]],
                 beside: dict[tuple[str, str], list[JobResult]], statistic: Statistic
                 ) -> tuple[tuple[float | None, ...], ...]:
    """One round's directed values; None where its jobs give none (a p99 from too few, or
    a task with no job alone in the round)."""
    present = {k: jobs for k, jobs in beside.items() if jobs and alone.get(k[0])}
    directed, _ = _cells(names, alone, present, statistic, strict=False)
    return tuple(tuple(row) for row in directed)


def store_matrix(db: Path, run: MatrixRun, taskset: TaskSet, *, command: str, argv: Sequence[str],
                 params: dict, summary: dict, started_at: float) -> int:
    """Every job of every block of `run` into the store as one invocation; its id."""
    return save_runs(db, command=command, argv=argv,
                     tasks=[TaskRow.of(t) for t in taskset.tasks],
                     runs=[(b.label, res) for b, res in run.blocks], params=params,
                     summary=summary, started_at=started_at, finished_at=time.time())
