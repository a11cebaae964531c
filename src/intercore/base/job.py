"""One job of a periodic task: what ic-periodic reports for it, what the results store keeps
(the jobs table, store/jobs.py) and what the interference matrix and the protection
experiment read back. A record module: data only, importable from any layer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobResult:
    """One job; times are CLOCK_MONOTONIC ns (time.monotonic_ns())."""
    job: int
    release_ns: int
    start_ns: int
    end_ns: int
    response_ns: int      # end - release
    cpu_ns: int           # thread CPU time of the job
    missed: bool          # response > deadline
    skipped: int          # releases dropped before this job (overrun "skip")
    accesses: int | None = None  # aggressors: cache lines touched by this job
