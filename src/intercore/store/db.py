"""The SQLite results store: one file, WAL mode, whole invocations or nothing.

The only code that talks SQL is this package: `Store` writes and reads hosts, invocations,
workloads and samples itself, and each stage's own tables through a module of their own,
reached as an attribute (store.jobs, store.validations, store.campaigns, store.profiles,
store.named_sets, store.learn, store.origins).
Rows a stage writes with an invocation go through Store.record() as attachments, in the
invocation's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from ..base.errors import InputError
from ..base.sample import Sample
from . import export, schema
from . import samples as sample_rows
from .bandwidth import Profiles
from .campaigns import Campaigns
from .jobs import Jobs
from .learn import LearnDatasets
from .named_sets import NamedSets
from .provenance import Origins
from .records import (
    InvocationListing,
    InvocationRecord,
    StoredHost,
    StoredInvocation,
    StoredWorkload,
    WorkloadRecord,
)
from .samples import Progress
from .validation import Validations

DEFAULT_PATH = Path("intercore.db")


class Attachment(Protocol):
    """Rows of a stage's own tables that belong to one invocation (jobs, verdicts, runs).

    Store.record() calls insert() inside the invocation's transaction, so those rows land
    together with the invocation or not at all. `workload_ids[i]` is the row id of the i-th
    WorkloadRecord of the same call.
    """

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None: ...

@dataclass(frozen=True)
class Recording:
    """One invocation as Store.record_all() writes it, with its workloads, raw samples and
    attachments."""

    invocation: InvocationRecord
    workloads: Sequence[WorkloadRecord]
    samples: Sequence[Sample]
    attachments: Sequence[Attachment] = ()


_INVOCATION_COLUMNS = (
    "i.id, i.command, i.argv_json, i.started_at, i.finished_at, i.status, i.params_json, "
    "i.summary_json, i.tool_version, h.id, h.fingerprint, h.hostname, h.kernel, h.cpu_model, "
    "h.ncpus, h.info_json, h.first_seen"
)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _host(row: Sequence[Any]) -> StoredHost:
    return StoredHost(id=row[0], fingerprint=row[1], hostname=row[2], kernel=row[3],
                      cpu_model=row[4], ncpus=row[5], info=json.loads(row[6]),
                      first_seen=datetime.fromisoformat(row[7]))


def _invocation(row: Sequence[Any]) -> StoredInvocation:
    host = _host(row[9:17])
    return StoredInvocation(id=row[0], host=host, command=row[1],
                            argv=tuple(json.loads(row[2])),
                            started_at=datetime.fromisoformat(row[3]),
                            finished_at=datetime.fromisoformat(row[4]), status=row[5],
                            params=json.loads(row[6]), summary=json.loads(row[7]),
                            tool_version=row[8])


def one_name(path: Path, option: str | None = None) -> None:
    """Refuse a store with a second hard link. SQLite names its write-ahead log after the
    name it opened, so two names for one file are two logs: writers through each commit to
    their own, and a checkpoint of one overwrites the other's pages (rows were lost so)."""
    try:
        links = path.stat().st_nlink
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), source=str(path), field=option) from None
    if links > 1:
        raise InputError(f"the store has {links} hard links; SQLite keeps one write-ahead log "
                         "per name, so a store must have one name (copy it instead of "
                         "linking it)", source=str(path), field=option)


class Store:
    """A results store. Open with Store.open(); close() (or use as a context manager)."""

    def __init__(self, conn: sqlite3.Connection, path: Path,
                 found_version: int = schema.VERSION):
        self._conn = conn
        self.path = path
        self.found_version = found_version  # the schema version the file had when opened
        self.jobs = Jobs(conn)
        self.validations = Validations(conn)
        self.campaigns = Campaigns(conn, str(path))
        self.profiles = Profiles(conn)
        self.named_sets = NamedSets(conn)
        self.learn = LearnDatasets(conn, str(path))
        self.origins = Origins(conn)

    @classmethod
    def open(cls, path: str | Path = DEFAULT_PATH, *, busy_timeout_ms: int = 5000) -> Store:
        """Open (creating it if needed, in a directory that exists) and migrate the store at
        `path`."""
        path = Path(path)
        one_name(path)
        # Autocommit: transactions are explicit, so record() controls exactly what is atomic.
        conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000)

        def prepare() -> None:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            # WAL lets `intercore results` read while a measurement is being written, and
            # NORMAL sync keeps a committed invocation across a process crash (only an OS crash
            # can lose the last commits, never corrupt the file).
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")

        return cls(conn, path, _migrated(conn, path, prepare))

    @classmethod
    def snapshot(cls, path: str | Path) -> Store:
        """A copy in memory of the store at `path`, brought to this release's schema; the file
        is only read, never migrated (a store written by an older release stays as it is).
        InputError when `path` is not a results store, is damaged, or is newer than this
        release."""
        path = Path(path)
        one_name(path)
        if not path.is_file():
            raise InputError("no results store here" if not path.exists() else
                             "not a file", source=str(path))
        if path.stat().st_size == 0:
            raise InputError("empty file, not a results store", source=str(path))
        memory = sqlite3.connect(":memory:", isolation_level=None)

        def copy() -> None:
            # Opened as any reader would (mode=ro would leave -wal and -shm files behind);
            # nothing is written to it, only its committed pages are copied.
            source = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True,
                                     timeout=5)
            try:
                source.backup(memory)
            finally:
                source.close()
            problems = [r[0] for r in memory.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise InputError(f"damaged store: {problems[0]}", source=str(path))
            memory.execute("PRAGMA foreign_keys = ON")

        return cls(memory, path, _migrated(memory, path, copy))

    def save_as(self, path: str | Path) -> None:
        """Write a copy of this store to `path` (a new or empty file), ids and all."""
        target = sqlite3.connect(path)
        try:
            self._conn.backup(target)
        finally:
            target.close()

    def tables_with_rows(self) -> set[str]:
        """The tables holding at least one row."""
        names = [r[0] for r in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {n for n in names
                if self._conn.execute(f'SELECT 1 FROM "{n}" LIMIT 1').fetchone() is not None}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ensure_host(self, fingerprint: str, hostname: str, kernel: str, cpu_model: str,
                    ncpus: int, info: dict[str, Any]) -> int:
        """Row id of the host with this fingerprint, inserting it the first time it is seen."""
        now = datetime.now(timezone.utc).isoformat()
        with self._transaction():
            self._conn.execute(
                "INSERT INTO hosts (fingerprint, hostname, kernel, cpu_model, ncpus, info_json, "
                "first_seen) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO NOTHING",
                (fingerprint, hostname, kernel, cpu_model, ncpus, _json(info), now))
            row = self._conn.execute("SELECT id FROM hosts WHERE fingerprint = ?",
                                     (fingerprint,)).fetchone()
        return row[0]

    def record(self, invocation: InvocationRecord, workloads: Sequence[WorkloadRecord],
               samples: Sequence[Sample], *, progress: Progress | None = None,
               attachments: Sequence[Attachment] = ()) -> int:
        """Write an invocation with its workloads, samples and attachments in one transaction.

        A process killed at any point leaves either the whole invocation or no trace of it.
        `progress(done, total)` is called inside the transaction after each batch of samples.
        """
        (inv_id,) = self.record_all([Recording(invocation, workloads, samples, attachments)],
                                    progress=progress)
        return inv_id

    def record_all(self, recordings: Sequence[Recording], *,
                   progress: Progress | None = None) -> list[int]:
        """Several invocations in one transaction: all of them or none (the runs of one
        interleaved campaign group). Returns their ids in order."""
        for r in recordings:
            _check_victims(r.workloads, r.samples)
        ids = []
        with self._transaction():
            for r in recordings:
                inv_id = self._insert_invocation(r.invocation)
                workload_ids = [self._insert_workload(inv_id, w) for w in r.workloads]
                sample_rows.insert(self._conn, inv_id, workload_ids, r.samples, progress)
                for attachment in r.attachments:
                    attachment.insert(self._conn, inv_id, workload_ids)
                ids.append(inv_id)
        return ids

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

    def _insert_invocation(self, inv: InvocationRecord) -> int:
        cur = self._conn.execute(
            "INSERT INTO invocations (host_id, command, argv_json, started_at, finished_at, "
            "status, params_json, summary_json, tool_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (inv.host_id, inv.command, _json(list(inv.argv)), inv.started_at.isoformat(),
             inv.finished_at.isoformat(), inv.status, _json(inv.params), _json(inv.summary),
             inv.tool_version))
        assert cur.lastrowid is not None  # set by every INSERT
        return cur.lastrowid

    def _insert_workload(self, inv_id: int, w: WorkloadRecord) -> int:
        cur = self._conn.execute(
            "INSERT INTO workloads (invocation_id, role, name, kind, params_json, cpu, stats_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (inv_id, w.role, w.name, w.kind, _json(w.params), w.cpu,
             None if w.stats is None else _json(w.stats)))
        assert cur.lastrowid is not None  # set by every INSERT
        return cur.lastrowid

    def list_invocations(self, limit: int = 20, command: str | None = None
                         ) -> list[InvocationListing]:
        """The newest invocations first."""
        where, args = ("WHERE i.command = ?", [command]) if command else ("", [])
        rows = self._conn.execute(
            f"SELECT {_INVOCATION_COLUMNS} FROM invocations i JOIN hosts h ON h.id = i.host_id "
            f"{where} ORDER BY i.id DESC LIMIT ?", (*args, limit)).fetchall()
        return [self._listing(_invocation(row)) for row in rows]

    def count_invocations(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM invocations").fetchone()[0]

    def _listing(self, inv: StoredInvocation) -> InvocationListing:
        victims = tuple(r[0] for r in self._conn.execute(
            "SELECT name FROM workloads WHERE invocation_id = ? AND role = 'victim' ORDER BY id",
            (inv.id,)))
        sets = tuple(r[0] for r in self._conn.execute(
            "SELECT DISTINCT aggressor_set FROM samples WHERE invocation_id = ? "
            "AND condition = 'int' ORDER BY aggressor_set", (inv.id,)))
        n = self._conn.execute(
            "SELECT COALESCE(MIN(c), 0) FROM (SELECT COUNT(*) AS c FROM samples x "
            "JOIN samples s ON s.invocation_id = x.invocation_id AND s.victim_id = x.victim_id "
            "AND s.region = x.region AND s.pair = x.pair AND s.condition = 'iso' "
            "WHERE x.invocation_id = ? AND x.condition = 'int' AND x.region = 0 "
            "GROUP BY x.victim_id, x.aggressor_set)", (inv.id,)).fetchone()[0]
        return InvocationListing(invocation=inv, victims=victims, aggressor_sets=sets, n=n)

    def invocations(self) -> Iterator[StoredInvocation]:
        """Every invocation, oldest (lowest id) first."""
        rows = self._conn.execute(
            f"SELECT {_INVOCATION_COLUMNS} FROM invocations i JOIN hosts h ON h.id = i.host_id "
            "ORDER BY i.id").fetchall()
        return (_invocation(row) for row in rows)

    def host(self, fingerprint: str) -> StoredHost | None:
        row = self._conn.execute(
            "SELECT id, fingerprint, hostname, kernel, cpu_model, ncpus, info_json, first_seen "
            "FROM hosts WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return None if row is None else _host(row)

    def get_invocation(self, invocation_id: int) -> StoredInvocation | None:
        row = self._conn.execute(
            f"SELECT {_INVOCATION_COLUMNS} FROM invocations i JOIN hosts h ON h.id = i.host_id "
            "WHERE i.id = ?", (invocation_id,)).fetchone()
        return None if row is None else _invocation(row)

    def workloads_for(self, invocation_id: int) -> list[StoredWorkload]:
        rows = self._conn.execute(
            "SELECT id, invocation_id, role, name, kind, params_json, cpu, stats_json "
            "FROM workloads WHERE invocation_id = ? ORDER BY id", (invocation_id,))
        return [StoredWorkload(id=r[0], invocation_id=r[1], role=r[2], name=r[3], kind=r[4],
                               params=json.loads(r[5]), cpu=r[6],
                               stats=None if r[7] is None else json.loads(r[7])) for r in rows]

    def samples_for(self, invocation_id: int) -> list[Sample]:
        """The raw samples of an invocation; each names its victim by workload row id."""
        return sample_rows.of_invocation(self._conn, invocation_id)

    def export_table(self, invocation_ids: Sequence[int] | None = None) -> export.Table:
        """One row per sample of these invocations (all when None), with its invocation, victim
        and host (export.py); write it with export.write_csv or export.write_parquet."""
        return export.sample_table(self._conn, invocation_ids)


def _migrated(conn: sqlite3.Connection, path: Path, prepare: Callable[[], None]) -> int:
    """Prepare `conn` and bring it to this release's schema; the version it had. On any
    failure the connection is closed, and SQLite's errors become an InputError naming
    `path`."""
    try:
        prepare()
        return schema.migrate(conn, str(path))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputError(f"not a usable results store: {exc}", source=str(path)) from exc
    except BaseException:
        conn.close()
        raise


def _check_victims(workloads: Sequence[WorkloadRecord], samples: Sequence[Sample]) -> None:
    for i, s in enumerate(samples):
        if not 0 <= s.victim < len(workloads) or workloads[s.victim].role != "victim":
            raise ValueError(f"sample {i} names workload {s.victim}, which is not a victim "
                             "in this record")


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception (KeyboardInterrupt included).

    IMMEDIATE takes the write lock up front, so a concurrent writer waits at BEGIN (within the
    busy timeout) instead of failing halfway through with SQLITE_BUSY.
    """

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
