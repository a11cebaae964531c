"""Periodic runs into the results store: the tasks as workloads and every job of every labelled
run as one invocation (its tables: store/jobs.py; read back with Store.jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ... import __version__
from ...store import Store
from ...store.jobs import JobRun, JobsAttachment
from ...store.records import InvocationRecord, WorkloadRecord
from .runner import Result
from ..harness.store import host_id, utc


@dataclass(frozen=True)
class TaskRow:
    """A task as the store's workloads table holds it; critical tasks are victims, best-effort
    tasks aggressors."""

    name: str
    role: str            # "critical" | "best-effort"
    kind: str
    params: dict
    cpu: int | None

    @classmethod
    def of(cls, task, name: str | None = None) -> "TaskRow":
        """A task set's task (measure.periodic.taskset.Task), stored under `name`
        (default its own)."""
        return cls(name or task.name, task.role, task.kind, dict(task.params), task.cpu)


def save_runs(db: Path, *, command: str, argv: Sequence[str], tasks: Sequence[TaskRow],
              runs: Sequence[tuple[str, Mapping[str, Result]]], params: dict,
              summary: dict, started_at: float, finished_at: float) -> int:
    """One invocation: the tasks as workloads and every job of every labelled run, atomically.
    A run's results are keyed by task name; a task name is unique within `tasks`."""
    from ...host.report import host_report  # reading every host feature is only needed here
    from ...host.topology import read_topology

    index = {t.name: i for i, t in enumerate(tasks)}
    job_runs = [JobRun(label, index[name], result.spec.deadline_ns, result.jobs)
                for label, by_name in runs for name, result in by_name.items()
                if result.jobs is not None]  # a command reports none
    report = host_report()
    with Store.open(db) as store:
        hid = host_id(store, read_topology(), report.fingerprint(), report.to_dict())
        workloads = [WorkloadRecord("victim" if t.role == "critical" else "aggressor", t.name,
                                    t.kind, t.params, t.cpu) for t in tasks]
        inv = InvocationRecord(hid, command, tuple(argv), utc(started_at), utc(finished_at),
                               __version__, params=params, summary=summary)
        return store.record(inv, workloads, [], attachments=[JobsAttachment(job_runs)])
