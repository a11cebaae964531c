"""The learning-dataset tables of the results store (schema: store/schema.py, `_LEARN`).

`learn_datasets` holds a dataset's settings and its drawn programs in their run order;
`learn_programs` one row per traced program, written by `Store.record` in the transaction
of its trace's invocation (`ProgramAttachment`), with the program's traced features as
JSON, and `closed_json` once no further attempt is to be made (why, and with what).
`learn_attempts` has a row per attempt at measuring a program, each written in the
transaction of the invocation holding its samples (`AttemptAttachment`). Programs recorded
before attempts existed were traced and measured in one invocation: the migration made it
their attempt 1.

UNIQUE(dataset, program) and UNIQUE(dataset, program, attempt) make a program or an attempt
recorded twice impossible: a killed generation loses at most the attempt in flight, and a
resume runs it again; a second writer fails, rolls back and raises ProgramTaken. Rows are
JSON documents here; intercore.learn gives them their types.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence

from ..base.errors import InputError
from .rows import insert_new, now


class ProgramTaken(Exception):
    """Another process recorded this dataset's program, or this attempt at it, first."""


@dataclass(frozen=True)
class DatasetRow:
    id: int
    name: str
    settings: dict[str, Any]
    programs: tuple[dict[str, Any], ...]  # program specs, in run order
    created_at: str


@dataclass(frozen=True)
class AttemptRow:
    program: str
    attempt: int
    invocation_id: int
    summary: dict[str, Any]
    recorded_at: str


def close_program(conn: sqlite3.Connection, dataset_id: int, program: str,
                  closed: dict[str, Any]) -> bool:
    """Mark an open program closed, saying why; False when it was not open (the first close
    stands)."""
    done = conn.execute("UPDATE learn_programs SET closed_json = ? WHERE dataset_id = ? AND "
                        "program = ? AND closed_json IS NULL",
                        (json.dumps(closed), dataset_id, program))
    return done.rowcount == 1


@dataclass(frozen=True)
class ProgramAttachment:
    """A traced program's row, inserted inside its trace's invocation's transaction."""

    dataset_id: int
    program: str
    spec_hash: str
    record: dict[str, Any]
    recorded_at: str | None = None  # now; a merge keeps the original time

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        insert_new(
            conn, "INSERT INTO learn_programs (dataset_id, program, spec_hash, invocation_id, "
            "record_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.dataset_id, self.program, self.spec_hash, invocation_id,
             json.dumps(self.record, separators=(",", ":")), self.recorded_at or now()),
            ProgramTaken(self.program))


@dataclass(frozen=True)
class AttemptAttachment:
    """An attempt at measuring a traced, still open program, inserted inside the
    transaction of the invocation holding its samples; `closed` when it is the last."""

    dataset_id: int
    program: str
    attempt: int
    summary: dict[str, Any]
    closed: dict[str, Any] | None = None
    recorded_at: str | None = None  # now; a merge keeps the original time

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        insert_new(
            conn, "INSERT INTO learn_attempts (dataset_id, program, attempt, invocation_id, "
            "summary_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.dataset_id, self.program, self.attempt, invocation_id,
             json.dumps(self.summary), self.recorded_at or now()),
            ProgramTaken(f"{self.program} attempt {self.attempt}"))
        if self.closed is not None and not close_program(conn, self.dataset_id, self.program,
                                                         self.closed):
            raise ProgramTaken(self.program)  # closed by another process meanwhile


class LearnDatasets:
    """The learning-dataset rows of one store (Store.learn)."""

    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self._where = where  # the store's path, for messages

    def create(self, name: str, settings: dict[str, Any],
               programs: Sequence[dict[str, Any]], created_at: str | None = None) -> DatasetRow:
        """A new dataset, created now (a merge passes the original time)."""
        try:
            self._conn.execute(
                "INSERT INTO learn_datasets (name, settings_json, programs_json, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, json.dumps(settings), json.dumps(list(programs)), created_at or now()))
        except sqlite3.IntegrityError:
            raise InputError(f"{self._where} already holds a dataset named {name!r}; resume "
                             "it with --resume or pick another --name", field="--name") from None
        return self.find(name)

    def find(self, name: str) -> DatasetRow:
        row = self._conn.execute("SELECT id, name, settings_json, programs_json, created_at "
                                 "FROM learn_datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in self._conn.execute("SELECT name FROM learn_datasets")]
            raise InputError(f"no dataset {name!r} in {self._where} (datasets: "
                             f"{', '.join(known) or 'none'})", field="--resume")
        return DatasetRow(row[0], row[1], json.loads(row[2]), tuple(json.loads(row[3])), row[4])

    def update_settings(self, dataset_id: int, settings: dict[str, Any]) -> None:
        self._conn.execute("UPDATE learn_datasets SET settings_json = ? WHERE id = ?",
                           (json.dumps(settings), dataset_id))

    def all(self) -> list[DatasetRow]:
        return [self.find(name) for (name,) in self._conn.execute(
            "SELECT name FROM learn_datasets ORDER BY id").fetchall()]

    def program_of(self, invocation_id: int) -> ProgramAttachment | None:
        """The program an invocation measured, as it was written (with its time)."""
        row = self._conn.execute(
            "SELECT dataset_id, program, spec_hash, record_json, recorded_at FROM "
            "learn_programs WHERE invocation_id = ?", (invocation_id,)).fetchone()
        return None if row is None else ProgramAttachment(row[0], row[1], row[2],
                                                          json.loads(row[3]), row[4])

    def attempt_of(self, invocation_id: int) -> AttemptAttachment | None:
        """The attempt an invocation made, as it was written (with its time; whether it
        closed its program is in `closed`)."""
        row = self._conn.execute(
            "SELECT dataset_id, program, attempt, summary_json, recorded_at FROM "
            "learn_attempts WHERE invocation_id = ?", (invocation_id,)).fetchone()
        return None if row is None else AttemptAttachment(row[0], row[1], row[2],
                                                          json.loads(row[3]), None, row[4])

    def done(self, dataset_id: int) -> dict[str, str]:
        """program -> spec hash of every recorded program."""
        return dict(self._conn.execute("SELECT program, spec_hash FROM learn_programs "
                                       "WHERE dataset_id = ?", (dataset_id,)).fetchall())

    def records(self, dataset_id: int) -> list[dict[str, Any]]:
        rows = self._conn.execute("SELECT record_json FROM learn_programs WHERE dataset_id = ? "
                                  "ORDER BY id", (dataset_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def attempts(self, dataset_id: int) -> dict[str, list[AttemptRow]]:
        """program -> its attempts in order."""
        out: dict[str, list[AttemptRow]] = {}
        for program, attempt, inv, summary, at in self._conn.execute(
                "SELECT program, attempt, invocation_id, summary_json, recorded_at FROM "
                "learn_attempts WHERE dataset_id = ? ORDER BY program, attempt",
                (dataset_id,)):
            out.setdefault(program, []).append(AttemptRow(program, attempt, inv,
                                                          json.loads(summary), at))
        return out

    def closed(self, dataset_id: int) -> dict[str, dict[str, Any]]:
        """program -> why and when it was closed, for every closed program."""
        rows = self._conn.execute("SELECT program, closed_json FROM learn_programs WHERE "
                                  "dataset_id = ? AND closed_json IS NOT NULL", (dataset_id,))
        return {p: json.loads(c) for p, c in rows}

    def close(self, dataset_id: int, program: str, closed: dict[str, Any]) -> bool:
        """Close an open program without a new attempt; False when it was not open."""
        return close_program(self._conn, dataset_id, program, closed)
