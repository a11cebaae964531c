"""The learning-dataset tables of the results store (schema: store/schema.py, `_LEARN`).

`learn_datasets` holds a dataset's settings and its drawn programs in their run order;
`learn_programs` one row per finished program, written by `Store.record` in the transaction
of the invocation that measured it (`ProgramAttachment`), with the program's traced features
and labels as JSON. UNIQUE(dataset, program) makes a program recorded twice impossible: a
killed generation loses at most the program in flight, and a resume runs it again; a second
writer of the same program fails, rolls back and raises ProgramTaken. Rows are JSON documents
here; intercore.learn gives them their types.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from ..errors import InputError


class ProgramTaken(Exception):
    """Another process recorded this dataset's program first."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class DatasetRow:
    id: int
    name: str
    settings: dict[str, Any]
    programs: tuple[dict[str, Any], ...]  # program specs, in run order
    created_at: str


@dataclass(frozen=True)
class ProgramAttachment:
    """A finished program's row, inserted inside its invocation's transaction."""

    dataset_id: int
    program: str
    spec_hash: str
    record: dict[str, Any]
    recorded_at: str | None = None  # now; a merge keeps the original time

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        try:
            conn.execute(
                "INSERT INTO learn_programs (dataset_id, program, spec_hash, invocation_id, "
                "record_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                (self.dataset_id, self.program, self.spec_hash, invocation_id,
                 json.dumps(self.record, separators=(",", ":")), self.recorded_at or _now()))
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise ProgramTaken(self.program) from None
            raise


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
                (name, json.dumps(settings), json.dumps(list(programs)), created_at or _now()))
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

    def done(self, dataset_id: int) -> dict[str, str]:
        """program -> spec hash of every recorded program."""
        return dict(self._conn.execute("SELECT program, spec_hash FROM learn_programs "
                                       "WHERE dataset_id = ?", (dataset_id,)).fetchall())

    def records(self, dataset_id: int) -> list[dict[str, Any]]:
        rows = self._conn.execute("SELECT record_json FROM learn_programs WHERE dataset_id = ? "
                                  "ORDER BY id", (dataset_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]
