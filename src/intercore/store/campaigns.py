"""The campaign tables of the results store (schema: store/schema.py, `_CAMPAIGNS`).

`campaigns` holds each campaign's plan exactly as it was first run, with its schedule (the
interleaved, shuffled order of its runs) so a resume follows the same order. `campaign_runs`
holds one row per finished slot (setup × round): `done`, written by `Store.record` in the same
transaction as the run's invocation and raw samples (`RunAttachment`), or `skipped` with the
reason. Its UNIQUE(campaign, setup, round) makes a slot recorded twice impossible: a killed
run leaves no row and is run again; a second writer of the same slot fails, rolls back and
raises SlotTaken.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterator, Mapping, Sequence

from ..base.errors import InputError
from . import export
from .rows import insert_new, now

Slot = tuple[int, str]  # (round, numbered from 1; setup name)


class SlotTaken(Exception):
    """Another process recorded this campaign's slot first."""


def _stamp(at: datetime | None) -> str:
    return now() if at is None else at.isoformat()


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
    recorded_at: datetime | None = None  # now; a merge keeps the original time

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:  # noqa: ARG002 - Attachment protocol
        insert_new(
            conn, "INSERT INTO campaign_runs (campaign_id, setup, setup_hash, round, status, "
            "invocation_id, reason, recorded_at) VALUES (?, ?, ?, ?, 'done', ?, NULL, ?)",
            (self.campaign_id, self.setup, self.setup_hash, self.round, invocation_id,
             _stamp(self.recorded_at)),
            SlotTaken(f"round {self.round} of {self.setup}"))


_CAMPAIGN_COLUMNS = ("id, name, source, source_text, plan_json, plan_hash, schedule_json, "
                     "options_json, created_at")


def _campaign(row: Sequence[Any]) -> CampaignRow:
    return CampaignRow(id=row[0], name=row[1], source=row[2], source_text=row[3],
                       plan=json.loads(row[4]), plan_hash=row[5],
                       schedule=tuple((int(r), str(s)) for r, s in json.loads(row[6])),
                       options=json.loads(row[7]), created_at=datetime.fromisoformat(row[8]))


# Columns an export of a campaign puts before each sample's own.
EXPORT_COLUMNS = ("campaign", "setup", "setup_hash", "round")


class Campaigns:
    """The campaign rows of one store (Store.campaigns). Rows that belong to no invocation (a
    campaign, a skipped slot) are written one autocommitted statement each."""

    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self._where = where  # the store's path, for messages

    def create(self, name: str, source: str, source_text: str, plan: Mapping[str, Any],
               schedule: Sequence[Slot], options: Mapping[str, Any],
               created_at: datetime | None = None) -> CampaignRow:
        """A new campaign, created now (a merge passes the original time)."""
        try:
            cur = self._conn.execute(
                "INSERT INTO campaigns (name, source, source_text, plan_json, plan_hash, "
                "schedule_json, options_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, source, source_text, canonical_json(plan), plan_hash(plan),
                 canonical_json([list(s) for s in schedule]), canonical_json(options),
                 _stamp(created_at)))
        except sqlite3.IntegrityError:
            existing = self.find(name)
            raise InputError(
                f"the store already holds a campaign named {name!r} (id {existing.id}); "
                f"`intercore measure campaign resume {name}` finishes it, --name NEW runs this "
                "file again under another name") from None
        assert cur.lastrowid is not None  # set by every INSERT
        return self.get(cur.lastrowid)

    def get(self, campaign_id: int) -> CampaignRow:
        row = self._conn.execute(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?",
                                 (campaign_id,)).fetchone()
        if row is None:
            raise InputError(f"no campaign with id {campaign_id} in {self._where}")
        return _campaign(row)

    def find(self, ref: str) -> CampaignRow:
        """A campaign by name, or by id when `ref` is a number no campaign is named."""
        row = self._conn.execute(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE name = ?",
                                 (ref,)).fetchone()
        if row is None and ref.isdigit():
            row = self._conn.execute(f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?",
                                     (int(ref),)).fetchone()
        if row is None:
            known = ", ".join(c.name for c in self.all()) or "none"
            raise InputError(f"no campaign {ref!r} in {self._where} (campaigns: {known})",
                             field="CAMPAIGN")
        return _campaign(row)

    def all(self) -> list[CampaignRow]:
        return [_campaign(r) for r in self._conn.execute(
            f"SELECT {_CAMPAIGN_COLUMNS} FROM campaigns ORDER BY id")]

    def runs(self, campaign_id: int) -> list[RunRow]:
        return [RunRow(setup=r[0], setup_hash=r[1], round=r[2], status=r[3],
                       invocation_id=r[4], reason=r[5],
                       recorded_at=datetime.fromisoformat(r[6]))
                for r in self._conn.execute(
                    "SELECT setup, setup_hash, round, status, invocation_id, reason, "
                    "recorded_at FROM campaign_runs WHERE campaign_id = ? ORDER BY id",
                    (campaign_id,))]

    def record_skipped(self, campaign_id: int, setup: str, setup_hash: str, round_: int,
                       reason: str, recorded_at: datetime | None = None) -> bool:
        """Record a skipped slot; False when the slot was already recorded (by another
        process resuming the same campaign)."""
        try:
            self._conn.execute(
                "INSERT INTO campaign_runs (campaign_id, setup, setup_hash, round, status, "
                "invocation_id, reason, recorded_at) VALUES (?, ?, ?, ?, 'skipped', NULL, ?, ?)",
                (campaign_id, setup, setup_hash, round_, reason, _stamp(recorded_at)))
        except sqlite3.IntegrityError:
            return False
        return True

    def export_table(self, campaign: CampaignRow) -> export.Table:
        """The sample export (export.py) of the campaign's finished runs, each row prefixed
        with its campaign, setup, setup hash and round."""
        by_invocation = {r.invocation_id: r for r in self.runs(campaign.id)
                         if r.invocation_id is not None}
        header, rows = export.sample_table(self._conn, sorted(by_invocation))
        column = header.index("invocation_id")

        def prefixed() -> Iterator[tuple[Any, ...]]:
            for row in rows:
                run = by_invocation[row[column]]
                yield (campaign.name, run.setup, run.setup_hash, run.round, *row)

        return [*EXPORT_COLUMNS, *header], prefixed()
