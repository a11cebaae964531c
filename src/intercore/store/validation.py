"""The model-validation tables (schema: store/schema.py, `_VALIDATION`).

One `model validate` is one invocation: every victim it ran with its aggressors and raw
samples, as `measure` stores them, plus one `model_validations` header with the model text it
checked and one `model_verdicts` row per exercised pair, written in the same transaction
(ValidationAttachment). A verdict names its victim workload, so its raw samples are
(invocation, victim_id, aggressor_set) in `samples`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class ValidationRecord:
    """The header: which model (its text, as validated) and how it was validated."""

    model: str
    model_hash: str
    source: str
    model_text: str
    runs: int
    threshold: float
    regime: str
    canaries: Sequence[Any]


@dataclass(frozen=True)
class VerdictRecord:
    """One exercised pair. `victim` is the index of its victim among the record's workloads
    when written, and the victim's workload row id when read back. A CI end that could not
    be computed is None."""

    victim: int
    expected: str        # interference | free
    channel: str | None
    victim_tx: str
    aggressor_tx: str
    aggressor_set: str
    region_name: str
    verdict: str         # confirmed | not observed | contradicted | unobservable
    n: int
    delta: float
    ci_low: float | None
    ci_high: float | None
    paired_max: float
    regime: str
    services: tuple[str, ...]


_VERDICT_COLUMNS = ("victim_id, expected, channel, victim_tx, aggressor_tx, aggressor_set, "
                    "region_name, verdict, n, delta, ci_low, ci_high, paired_max, regime, "
                    "services_json")


@dataclass(frozen=True)
class ValidationAttachment:
    """Store.record() attachment: the header and every verdict of one validation."""

    header: ValidationRecord
    verdicts: Sequence[VerdictRecord]

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:
        h = self.header
        conn.execute(
            "INSERT INTO model_validations (invocation_id, model, model_hash, source, "
            "model_text, runs, threshold, regime, canary_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (invocation_id, h.model, h.model_hash, h.source, h.model_text, h.runs, h.threshold,
             h.regime, json.dumps(list(h.canaries), default=str)))
        conn.executemany(
            f"INSERT INTO model_verdicts (invocation_id, {_VERDICT_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(invocation_id, workload_ids[v.victim], v.expected, v.channel, v.victim_tx,
              v.aggressor_tx, v.aggressor_set, v.region_name, v.verdict, v.n, v.delta,
              v.ci_low, v.ci_high, v.paired_max, v.regime, json.dumps(list(v.services)))
             for v in self.verdicts])


class Validations:
    """The validation rows of one store (Store.validations)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def of_invocation(self, invocation_id: int) -> ValidationAttachment | None:
        """The header and verdicts one validating invocation wrote (victim: row id)."""
        header = self._conn.execute(
            "SELECT model, model_hash, source, model_text, runs, threshold, regime, canary_json "
            "FROM model_validations WHERE invocation_id = ?", (invocation_id,)).fetchone()
        if header is None:
            return None
        rows = self._conn.execute(
            f"SELECT {_VERDICT_COLUMNS} FROM model_verdicts WHERE invocation_id = ? "
            "ORDER BY id", (invocation_id,)).fetchall()
        return ValidationAttachment(
            ValidationRecord(*header[:7], canaries=json.loads(header[7])),  # type: ignore[misc]  # a row's first 7 columns fill the fields before canaries
            [VerdictRecord(*r[:14], services=tuple(json.loads(r[14])))  # type: ignore[misc]  # 14 columns, then services
             for r in rows])

    def verdicts(self, model_hash: str) -> list[tuple[int, VerdictRecord]]:
        """(invocation id, verdict) of every validation of this exact model (by hash),
        oldest first."""
        rows = self._conn.execute(
            f"SELECT v.invocation_id, {', '.join('v.' + c for c in _VERDICT_COLUMNS.split(', '))} "
            "FROM model_verdicts v JOIN model_validations m ON m.invocation_id = v.invocation_id "
            "WHERE m.model_hash = ? ORDER BY v.invocation_id, v.id", (model_hash,)).fetchall()
        return [(r[0], VerdictRecord(*r[1:15], services=tuple(json.loads(r[15]))))  # type: ignore[misc]  # as above
                for r in rows]
