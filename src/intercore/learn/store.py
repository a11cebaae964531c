"""The learning stage's rows in the results store (schema migration _LEARN).

A dataset row holds the settings and the drawn programs in their run order; a program row
is written only for a finished program, inside the transaction of the invocation that
measured it (Store.record's attachments), with its traced features and labels. So a
generation killed at any moment loses at most the program in flight and never records one
twice: the campaign runner's guarantee, by the same mechanism.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from ..errors import InputError
from ..store import Store
from .dataset import ProgramRecord
from .programs import ProgramSpec


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class DatasetRow:
    id: int
    name: str
    settings: dict[str, Any]
    programs: tuple[ProgramSpec, ...]
    created_at: str


@dataclass(frozen=True)
class ProgramAttachment:
    """The finished program's row, inserted inside its invocation's transaction."""

    dataset_id: int
    record: ProgramRecord

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        conn.execute(
            "INSERT INTO learn_programs (dataset_id, program, spec_hash, invocation_id, "
            "record_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.dataset_id, self.record.spec.name, self.record.spec.hash, invocation_id,
             json.dumps(self.record.to_dict(), separators=(",", ":")), _now()))


def is_duplicate_program(exc: sqlite3.IntegrityError) -> bool:
    return "learn_programs.dataset_id, learn_programs.program" in str(exc)


class LearnStore:
    """Learning-dataset rows of one results store. Use as a context manager."""

    def __init__(self, store: Store):
        self.store = store
        # Store.query is for reads; rows of our own go through a writer of our own, as the
        # campaign store's do.
        self._writer = sqlite3.connect(store.path, isolation_level=None, timeout=5.0)
        self._writer.execute("PRAGMA foreign_keys = ON")

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> LearnStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, name: str, settings: dict[str, Any], programs: Sequence[ProgramSpec]
               ) -> DatasetRow:
        try:
            self._writer.execute(
                "INSERT INTO learn_datasets (name, settings_json, programs_json, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, json.dumps(settings), json.dumps([p.to_dict() for p in programs]),
                 _now()))
        except sqlite3.IntegrityError:
            raise InputError(f"a dataset named {name!r} is already in this store; resume it "
                             "with --resume or pick another --name", field="--name") from None
        return self.find(name)

    def find(self, name: str) -> DatasetRow:
        row = self.store.query("SELECT id, name, settings_json, programs_json, created_at "
                               "FROM learn_datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in self.store.query("SELECT name FROM learn_datasets")]
            raise InputError(f"no dataset {name!r} in this store"
                             + (f" (there are: {', '.join(known)})" if known else ""),
                             field="--resume")
        return DatasetRow(row[0], row[1], json.loads(row[2]),
                          tuple(ProgramSpec.from_dict(p) for p in json.loads(row[3])), row[4])

    def done(self, dataset_id: int) -> dict[str, str]:
        """program -> spec hash of every recorded program."""
        return dict(self.store.query("SELECT program, spec_hash FROM learn_programs "
                                     "WHERE dataset_id = ?", (dataset_id,)).fetchall())

    def records(self, dataset_id: int) -> list[ProgramRecord]:
        rows = self.store.query("SELECT record_json FROM learn_programs WHERE dataset_id = ? "
                                "ORDER BY id", (dataset_id,)).fetchall()
        return [ProgramRecord.from_dict(json.loads(r[0])) for r in rows]
