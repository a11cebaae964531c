"""What one scenario of the protection experiment amounts to: pure summaries of job lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...base.job import JobResult
from ...measure.harness.stats import min_n_for, wilson_interval


@dataclass(frozen=True)
class ScenarioSummary:
    """The critical task's jobs in one scenario, and how much the best-effort task got done.

    `noise_progress` is the best-effort work done in this scenario relative to the
    Interference scenario (1.0 = no loss), None where there is no best-effort task (Solo).
    `host_steal_ms` is the time the hypervisor took from each CPU of the experiment while the
    scenario ran (host/steal.py), None where the host does not count it: a miss on a
    virtual machine may be the host's, not the task set's.
    """

    n: int
    misses: int
    miss_ci: tuple[float, float]
    p50_ms: float
    p99_ms: float | None
    max_ms: float
    noise_progress: float | None
    host_steal_ms: dict[int, float] | None = None

    @property
    def miss_ratio(self) -> float:
        return self.misses / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "misses": self.misses, "miss_ratio": self.miss_ratio,
                "miss_ratio_ci95": list(self.miss_ci), "p50_ms": self.p50_ms,
                "p99_ms": self.p99_ms, "max_ms": self.max_ms,
                "noise_progress": self.noise_progress,
                "host_steal_ms": None if self.host_steal_ms is None else
                {str(cpu): ms for cpu, ms in self.host_steal_ms.items()}}


def responses_ms(jobs: Sequence[JobResult]) -> list[float]:
    return [j.response_ns / 1e6 for j in jobs]


def summarize_jobs(jobs: Sequence[JobResult], noise_progress: float | None,
                   host_steal_ms: dict[int, float] | None = None) -> ScenarioSummary:
    """Summary of the critical task's jobs; a tail percentile needs enough jobs to mean
    something (stats.min_n_for), otherwise it is None ("insufficient n")."""
    if not jobs:
        raise ValueError("no jobs to summarise")
    r = np.asarray(responses_ms(jobs))
    misses = sum(1 for j in jobs if j.missed)
    p99 = float(np.percentile(r, 99)) if r.size >= min_n_for(99) else None
    return ScenarioSummary(n=len(jobs), misses=misses, miss_ci=wilson_interval(misses, len(jobs)),
                           p50_ms=float(np.median(r)), p99_ms=p99, max_ms=float(r.max()),
                           noise_progress=noise_progress, host_steal_ms=host_steal_ms)


def work_done(jobs: Sequence[JobResult]) -> int:
    """CPU time the best-effort task spent in its jobs: the work it got done, whether its
    jobs are sized in passes (more passes, more time) or in CPU time (more jobs completed)."""
    return sum(j.cpu_ns for j in jobs)


def progress(jobs: Sequence[JobResult], reference: Sequence[JobResult]) -> float | None:
    ref = work_done(reference)
    return work_done(jobs) / ref if ref else None
