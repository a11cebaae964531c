"""Measure the interference matrix of a task set: every task alone, every pair together.

The paired design of the measurement core, at the granularity of periodic runs: each round
runs every task alone and every pair together, one block each, in a random order drawn per
round, so slow drift of the host (other tenants, frequency, the hypervisor) lands on the
isolated and the interfered runs alike. The directed degradation of task i beside task j is

    D_ij = S(response times of i beside j) / S(response times of i alone)

with S the max (the worst case, which is what a WCET budget must cover) or the p99 (when the
worst case is dominated by rare host noise and enough jobs were run to have a p99).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from .matrix import InterferenceMatrix, Statistic
from .periodic import JobResult, PeriodicResult, run_periodic
from .stats import min_n_for
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


def schedule(names: Sequence[str], rounds: int, seed: int) -> list[Block]:
    """Every task alone and every pair together once per round, shuffled within each round."""
    if rounds < 1:
        raise InputError(f"must be at least 1, got {rounds}", field="--rounds")
    rng = random.Random(seed)
    out: list[Block] = []
    for r in range(rounds):
        blocks = [Block(r, (n,)) for n in names] + \
                 [Block(r, pair) for pair in itertools.combinations(names, 2)]
        rng.shuffle(blocks)
        out.extend(blocks)
    return out


def jobs_in(period_ns: int, block_ns: int) -> int:
    """Jobs of a task with this period in one block (at least one)."""
    return max(1, math.ceil(block_ns / period_ns))


def statistic_of(values: Sequence[float], statistic: Statistic) -> float:
    arr = np.asarray(values, dtype=float)
    if statistic == "max":
        return float(arr.max())
    if arr.size < min_n_for(99):
        raise InputError(f"the p99 needs at least {min_n_for(99)} jobs per cell, this run has "
                         f"{arr.size}: run more rounds or longer blocks, or use the max",
                         field="--statistic")
    return float(np.percentile(arr, 99))


def degradation(alone: Sequence[JobResult], beside: Sequence[JobResult],
                statistic: Statistic) -> float:
    return statistic_of([j.response_ns for j in beside], statistic) / \
        statistic_of([j.response_ns for j in alone], statistic)


@dataclass
class MatrixRun:
    matrix: InterferenceMatrix
    blocks: list[tuple[Block, dict[str, PeriodicResult]]]


def measure_matrix(taskset: TaskSet, *, rounds: int = 3, block_ns: int = 2_000_000_000,
                   statistic: Statistic = "max", seed: int = 1,
                   on_block: Callable[[int, int, Block], None] | None = None) -> MatrixRun:
    """Run the schedule and compute the directed matrix."""
    if block_ns <= 0:
        raise InputError("must be positive", field="--block")
    names = taskset.names
    plan = schedule(names, rounds, seed)
    results: list[tuple[Block, dict[str, PeriodicResult]]] = []
    for i, block in enumerate(plan):
        if on_block:
            on_block(i, len(plan), block)
        specs = [replace(taskset.task(n).periodic_spec(
            jobs_in(taskset.task(n).period_ns, block_ns)), seed=seed + block.round)
            for n in block.members]
        results.append((block, run_periodic(specs)))
    alone: dict[str, list[JobResult]] = {n: [] for n in names}
    beside: dict[tuple[str, str], list[JobResult]] = {}
    for block, by_name in results:
        if len(block.members) == 1:
            alone[block.members[0]].extend(by_name[block.members[0]].jobs)
            continue
        a, b = block.members
        beside.setdefault((a, b), []).extend(by_name[a].jobs)
        beside.setdefault((b, a), []).extend(by_name[b].jobs)
    size = len(names)
    directed = [[None] * size for _ in range(size)]
    counts = [[0] * size for _ in range(size)]
    for (a, b), jobs in beside.items():
        i, j = names.index(a), names.index(b)
        directed[i][j] = degradation(alone[a], jobs, statistic)
        counts[i][j] = len(jobs)
    matrix = InterferenceMatrix(
        tasks=names, statistic=statistic,
        directed=tuple(tuple(row) for row in directed), n=tuple(tuple(r) for r in counts),
        provenance={"taskset": taskset.source, "rounds": rounds, "block_ns": block_ns,
                    "seed": seed, "measured_by": "intercore matrix (paired rounds)"})
    return MatrixRun(matrix, results)
