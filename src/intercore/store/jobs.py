"""The `jobs` table: every job of the periodic runs of an invocation (base/job.py), written
with its invocation and read back by run label."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Sequence

from ..base.job import JobResult

_COLUMNS = ("job, release_ns, start_ns, end_ns, response_ns, cpu_ns, deadline_ns, missed, "
            "skipped")


@dataclass(frozen=True)
class JobRun:
    """The jobs of one task in one labelled run. `task` is the index of the task among the
    record's workloads when written, and its workload row id when read back (Jobs.runs)."""

    label: str
    task: int
    deadline_ns: int
    jobs: Sequence[JobResult]


@dataclass(frozen=True)
class JobsAttachment:
    """Store.record() attachment: every job of every run, in the invocation's transaction."""

    runs: Sequence[JobRun]

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:
        conn.executemany(
            f"INSERT INTO jobs (invocation_id, task_id, label, {_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(invocation_id, workload_ids[run.task], run.label, j.job, j.release_ns,
              j.start_ns, j.end_ns, j.response_ns, j.cpu_ns, run.deadline_ns, int(j.missed),
              j.skipped) for run in self.runs for j in run.jobs])


class Jobs:
    """The jobs of one store (Store.jobs)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def of_invocation(self, invocation_id: int) -> dict[tuple[str, str], list[JobResult]]:
        """{(label, task name): jobs in job order} for one invocation."""
        out: dict[tuple[str, str], list[JobResult]] = {}
        rows = self._conn.execute(
            f"SELECT j.label, w.name, {', '.join('j.' + c for c in _COLUMNS.split(', '))} "
            "FROM jobs j JOIN workloads w ON w.id = j.task_id WHERE j.invocation_id = ? "
            "ORDER BY j.label, w.id, j.job", (invocation_id,))
        for label, name, job, rel, start, end, resp, cpu, _deadline, missed, skipped in rows:
            out.setdefault((label, name), []).append(
                JobResult(job=job, release_ns=rel, start_ns=start, end_ns=end,
                          response_ns=resp, cpu_ns=cpu, missed=bool(missed), skipped=skipped))
        return out

    def runs(self, invocation_id: int) -> list[JobRun]:
        """Every labelled run of every task of one invocation, as written (task: row id)."""
        out: dict[tuple[str, int], JobRun] = {}
        jobs: dict[tuple[str, int], list[JobResult]] = {}
        rows = self._conn.execute(
            f"SELECT label, task_id, {_COLUMNS} FROM jobs WHERE invocation_id = ? "
            "ORDER BY id", (invocation_id,))
        for label, task, job, rel, start, end, resp, cpu, deadline, missed, skipped in rows:
            key = (label, task)
            out.setdefault(key, JobRun(label, task, deadline, jobs.setdefault(key, [])))
            jobs[key].append(JobResult(job=job, release_ns=rel, start_ns=start, end_ns=end,
                                       response_ns=resp, cpu_ns=cpu, missed=bool(missed),
                                       skipped=skipped))
        return list(out.values())

    def deadlines(self, invocation_id: int) -> dict[tuple[str, str], int]:
        """{(label, task name): relative deadline in ns} for one invocation's periodic runs."""
        return {(label, name): deadline for label, name, deadline in self._conn.execute(
            "SELECT DISTINCT j.label, w.name, j.deadline_ns FROM jobs j "
            "JOIN workloads w ON w.id = j.task_id WHERE j.invocation_id = ?", (invocation_id,))}
