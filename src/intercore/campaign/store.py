"""The campaign tables of the results store (schema: store/schema.py, `_CAMPAIGNS`).

`campaigns` holds each campaign's plan exactly as it was first run, with its schedule (the
interleaved, shuffled order of its runs) so a resume follows the same order. `campaign_runs`
holds one row per finished slot (setup × round): `done`, written by `Store.record` in the same
transaction as the run's invocation and raw samples (`RunAttachment`), or `skipped` with the
reason. Its UNIQUE(campaign, setup, round) makes a slot recorded twice impossible: a killed
run leaves no row and is run again; a second writer of the same slot fails and rolls back.

Rows that belong to no invocation (a campaign, a skipped slot) are written over this module's
own connection, one autocommitted statement each; the store's connection stays the only one
that writes invocations.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping, Sequence

from ..errors import HostUnsupported, InputError
from ..store import Store, StoredInvocation, export
from .stats import RunSamples

Slot = tuple[int, str]  # (round, numbered from 1; setup name)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def plan_hash(plan: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(plan).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CampaignRow:
    id: int
    name: str
    source: str
    source_text: str  # the campaign file as it was when the campaign was created
    plan: Mapping[str, Any]
    plan_hash: str
    schedule: tuple[Slot, ...]
    options: Mapping[str, Any]
    created_at: datetime

    @property
    def setups(self) -> dict[str, Mapping[str, Any]]:
        return {s["name"]: s for s in self.plan["setups"]}


@dataclass(frozen=True)
class RunRow:
    setup: str
    setup_hash: str
    round: int
    status: str  # 'done' | 'skipped'
    invocation_id: int | None
    reason: str | None
    recorded_at: datetime


@dataclass(frozen=True)
class RunAttachment:
    """The `done` row of a finished run, inserted inside its invocation's transaction."""

    campaign_id: int
    setup: str
    setup_hash: str
    round: int

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        conn.execute(
            "INSERT INTO campaign_runs (campaign_id, setup, setup_hash, round, status, "
            "invocation_id, reason, recorded_at) VALUES (?, ?, ?, ?, 'done', ?, NULL, ?)",
            (self.campaign_id, self.setup, self.setup_hash, self.round, invocation_id, _now()))


_CAMPAIGN_COLUMNS = ("id, name, source, source_text, plan_json, plan_hash, schedule_json, "
                     "options_json, created_at")


def _campaign(row: Sequence[Any]) -> CampaignRow:
    return CampaignRow(id=row[0], name=row[1], source=row[2], source_text=row[3],
                       plan=json.loads(row[4]), plan_hash=row[5],
                       schedule=tuple((int(r), str(s)) for r, s in json.loads(row[6])),
                       options=json.loads(row[7]), created_at=datetime.fromisoformat(row[8]))


class CampaignStore:
    """Campaign rows of one results store. Use as a context manager."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._writer = sqlite3.connect(store.path, isolation_level=None, timeout=5.0)
        self._writer.execute("PRAGMA foreign_keys = ON")

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> CampaignStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, name: str, source: str, source_text: str, plan: Mapping[str, Any],
               schedule: Sequence[Slot], options: Mapping[str, Any]) -> CampaignRow:
        try:
            cur = self._writer.execute(
                "INSERT INTO campaigns (name, source, source_text, plan_json, plan_hash, "
                "schedule_json, options_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, source, source_text, canonical_json(plan), plan_hash(plan),
                 canonical_json([list(s) for s in schedule]), canonical_json(options), _now()))
        except sqlite3.IntegrityError:
            existing = self.find(name)
            raise InputError(
                f"the store already holds a campaign named {name!r} (id {existing.id}); "
                f"`intercore campaign resume {name}` finishes it, --name NEW runs this file "
                "again under another name") from None
        return self.get(cur.lastrowid)

    def get(self, campaign_id: int) -> CampaignRow:
        row = self.store.query(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?",
                               (campaign_id,)).fetchone()
        if row is None:
            raise InputError(f"no campaign with id {campaign_id} in {self.store.path}")
        return _campaign(row)

    def find(self, ref: str) -> CampaignRow:
        """A campaign by name, or by id when `ref` is a number no campaign is named."""
        row = self.store.query(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE name = ?",
                               (ref,)).fetchone()
        if row is None and ref.isdigit():
            row = self.store.query(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?",
                                   (int(ref),)).fetchone()
        if row is None:
            known = ", ".join(c.name for c in self.all()) or "none"
            raise InputError(f"no campaign {ref!r} in {self.store.path} (campaigns: {known})",
                             field="CAMPAIGN")
        return _campaign(row)

    def all(self) -> list[CampaignRow]:
        return [_campaign(r) for r in self.store.query(
            f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns ORDER BY id")]

    def runs(self, campaign_id: int) -> list[RunRow]:
        return [RunRow(setup=r[0], setup_hash=r[1], round=r[2], status=r[3],
                       invocation_id=r[4], reason=r[5],
                       recorded_at=datetime.fromisoformat(r[6]))
                for r in self.store.query(
                    "SELECT setup, setup_hash, round, status, invocation_id, reason, "
                    "recorded_at FROM campaign_runs WHERE campaign_id = ? ORDER BY id",
                    (campaign_id,))]

    def record_skipped(self, campaign_id: int, setup: str, setup_hash: str, round_: int,
                       reason: str) -> bool:
        """Record a skipped slot; False when the slot was already recorded (by another
        process resuming the same campaign)."""
        try:
            self._writer.execute(
                "INSERT INTO campaign_runs (campaign_id, setup, setup_hash, round, status, "
                "invocation_id, reason, recorded_at) VALUES (?, ?, ?, ?, 'skipped', NULL, ?, ?)",
                (campaign_id, setup, setup_hash, round_, reason, _now()))
        except sqlite3.IntegrityError:
            return False
        return True

    def results(self, row: CampaignRow) -> CampaignResults:
        """Everything recorded for a campaign: its runs, their invocations and raw samples."""
        runs = tuple(self.runs(row.id))
        invocations: dict[int, StoredInvocation] = {}
        samples = []
        for run in runs:
            if run.invocation_id is None:
                continue
            invocation = self.store.get_invocation(run.invocation_id)
            assert invocation is not None  # the foreign key guarantees it
            invocations[run.invocation_id] = invocation
            victim = next(w for w in self.store.workloads_for(run.invocation_id)
                          if w.role == "victim")
            samples.append(RunSamples(run.setup, run.round, victim.name,
                                      self.store.samples_for(run.invocation_id)))
        return CampaignResults(row, runs, invocations, tuple(samples))


@dataclass(frozen=True)
class CampaignResults:
    campaign: CampaignRow
    runs: tuple[RunRow, ...]
    invocations: Mapping[int, StoredInvocation]
    samples: tuple[RunSamples, ...]

    @property
    def skipped(self) -> tuple[RunRow, ...]:
        return tuple(r for r in self.runs if r.status == "skipped")

    @property
    def pending(self) -> tuple[Slot, ...]:
        recorded = {(r.round, r.setup) for r in self.runs}
        return tuple(slot for slot in self.campaign.schedule if slot not in recorded)

    def by_setup(self) -> dict[str, list[RunSamples]]:
        out: dict[str, list[RunSamples]] = {}
        for run in self.samples:
            out.setdefault(run.setup, []).append(run)
        return out


EXPORT_COLUMNS = ("campaign", "setup", "setup_hash", "round")


def export_table(store: Store, results: CampaignResults
                 ) -> tuple[list[str], Iterator[tuple[Any, ...]]]:
    """The rows of `intercore results export` for the campaign's runs, each prefixed with
    its campaign, setup, setup hash and round."""
    by_invocation = {r.invocation_id: r for r in results.runs if r.invocation_id is not None}
    header, rows = export.sample_table(store, sorted(by_invocation))
    column = header.index("invocation_id")

    def prefixed() -> Iterator[tuple[Any, ...]]:
        for row in rows:
            run = by_invocation[row[column]]
            yield (results.campaign.name, run.setup, run.setup_hash, run.round, *row)

    return [*EXPORT_COLUMNS, *header], prefixed()


def write_export(store: Store, results: CampaignResults, target: str, fmt: str) -> int:
    """Write the export as CSV (`target` '-' is stdout) or Parquet; returns the row count."""
    header, rows = export_table(store, results)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise HostUnsupported("Parquet export needs pyarrow, which is not installed: "
                                  "pip install pyarrow") from exc
        columns = list(zip(*rows)) or [()] * len(header)
        table = pa.table({name: list(values) for name, values in zip(header, columns)})
        pq.write_table(table, target)
        return table.num_rows
    with (nullcontext(sys.stdout) if target == "-" else
          open(target, "w", newline="", encoding="utf-8")) as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        count = 0
        for row in rows:
            writer.writerow(row)
            count += 1
    return count


def is_duplicate_slot(exc: sqlite3.IntegrityError) -> bool:
    """Whether an insert failed because its (campaign, setup, round) slot is taken."""
    return "campaign_runs" in str(exc) and "UNIQUE" in str(exc)
