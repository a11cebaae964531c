"""Periodic jobs in the results store: written with their invocation, read back by run label."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .. import __version__
from ..store import Store
from ..store.records import InvocationRecord, WorkloadRecord
from .periodic import JobResult, PeriodicResult
from .persist import host_id, utc

_COLUMNS = ("job, release_ns, start_ns, end_ns, response_ns, cpu_ns, deadline_ns, missed, "
            "skipped")


@dataclass(frozen=True)
class JobRun:
    """The jobs of one task in one labelled run; `task` indexes the record's workloads."""

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


def load_jobs(store: Store, invocation_id: int) -> dict[tuple[str, str], list[JobResult]]:
    """{(label, task name): jobs in job order} for one invocation."""
    out: dict[tuple[str, str], list[JobResult]] = {}
    rows = store.query(
        f"SELECT j.label, w.name, {', '.join('j.' + c for c in _COLUMNS.split(', '))} "
        "FROM jobs j JOIN workloads w ON w.id = j.task_id WHERE j.invocation_id = ? "
        "ORDER BY j.label, w.id, j.job", (invocation_id,))
    for label, name, job, rel, start, end, resp, cpu, _deadline, missed, skipped in rows:
        out.setdefault((label, name), []).append(
            JobResult(job=job, release_ns=rel, start_ns=start, end_ns=end, response_ns=resp,
                      cpu_ns=cpu, missed=bool(missed), skipped=skipped))
    return out


def load_deadlines(store: Store, invocation_id: int) -> dict[tuple[str, str], int]:
    """{(label, task name): relative deadline in ns} for one invocation's periodic runs."""
    return {(label, name): deadline for label, name, deadline in store.query(
        "SELECT DISTINCT j.label, w.name, j.deadline_ns FROM jobs j "
        "JOIN workloads w ON w.id = j.task_id WHERE j.invocation_id = ?", (invocation_id,))}


@dataclass(frozen=True)
class TaskRow:
    """A task as the store's workloads table holds it; critical tasks are victims, best-effort
    tasks aggressors."""

    name: str
    role: str            # "critical" | "best-effort"
    kind: str
    params: dict
    cpu: int | None


def save_runs(db: Path, *, command: str, argv: Sequence[str], tasks: Sequence[TaskRow],
              runs: Sequence[tuple[str, Mapping[str, PeriodicResult]]], params: dict,
              summary: dict, started_at: float, finished_at: float) -> int:
    """One invocation: the tasks as workloads and every job of every labelled run, atomically.
    A run's results are keyed by task name; a task name is unique within `tasks`."""
    from ..host.report import host_report  # reading every host feature is only needed here
    from ..host.topology import read_topology

    index = {t.name: i for i, t in enumerate(tasks)}
    job_runs = [JobRun(label, index[name], result.spec.deadline_ns, result.jobs)
                for label, by_name in runs for name, result in by_name.items()]
    report = host_report()
    with Store.open(db) as store:
        hid = host_id(store, read_topology(), report.fingerprint(), report.to_dict())
        workloads = [WorkloadRecord("victim" if t.role == "critical" else "aggressor", t.name,
                                    t.kind, t.params, t.cpu) for t in tasks]
        inv = InvocationRecord(hid, command, tuple(argv), utc(started_at), utc(finished_at),
                               __version__, params=params, summary=summary)
        return store.record(inv, workloads, [], attachments=[JobsAttachment(job_runs)])
