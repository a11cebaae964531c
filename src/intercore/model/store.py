"""Validation verdicts in the results store, and back out as the channel table's evidence.

One `model validate` is one invocation: every victim it ran with its aggressors and raw
samples (as `measure` stores them), plus this stage's rows (store/schema.py, _VALIDATION)
written in the same transaction through an attachment.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .. import __version__
from ..host.topology import Topology
from ..measure.persist import host_id, outcome_records, utc
from ..measure.sample import Sample
from ..store import InvocationRecord, Store, WorkloadRecord
from .channels import Evidence
from .platform import Platform
from .validate import Validation, Verdict


def _nan_to_none(x: float) -> float | None:
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class ValidationRows:
    """The attachment: the validation header and one row per verdict."""

    platform: Platform
    runs: int
    validation: Validation
    victim_workloads: tuple[int, ...]  # index into the record's workloads, per victim

    def insert(self, conn: sqlite3.Connection, invocation_id: int,
               workload_ids: Sequence[int]) -> None:
        v, p = self.validation, self.platform
        conn.execute(
            "INSERT INTO model_validations (invocation_id, model, model_hash, source, "
            "model_text, runs, threshold, regime, canary_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (invocation_id, p.name, p.hash, p.source, p.text, self.runs, v.threshold,
             v.regime, json.dumps(v.canaries, default=str)))
        conn.executemany(
            "INSERT INTO model_verdicts (invocation_id, victim_id, expected, channel, victim_tx, "
            "aggressor_tx, aggressor_set, region_name, verdict, n, delta, ci_low, ci_high, "
            "paired_max, regime, services_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [self._row(invocation_id, workload_ids, verdict) for verdict in v.verdicts])

    def _row(self, invocation_id: int, workload_ids: Sequence[int], verdict: Verdict) -> tuple:
        t, r = verdict.trial, verdict.result
        return (invocation_id, workload_ids[self.victim_workloads[verdict.victim_index]],
                t.expected, t.channel, t.victim.tx, t.aggressor.tx, t.aggressor_set,
                verdict.region, verdict.verdict, r.n, r.delta, _nan_to_none(r.delta_ci[0]),
                _nan_to_none(r.delta_ci[1]), r.paired_max, verdict.regime,
                json.dumps(list(t.services)))


def save(db: Path, platform: Platform, validation: Validation, *,
         runs: int, argv: list[str], topo: Topology, params: dict) -> int:
    """Write the validation as one invocation; returns its id."""
    from ..host.report import host_report  # every host feature is read only when storing

    report = host_report()
    workloads: list[WorkloadRecord] = []
    samples: list[Sample] = []
    victims: list[int] = []
    for outcome, tx in zip(validation.outcomes, validation.victims):
        victims.append(len(workloads))
        w, s = outcome_records(outcome, victim_index=len(workloads), regime=validation.regime,
                               victim_info={"transaction": tx})
        workloads.extend(w)
        samples.extend(s)
    rows = ValidationRows(platform, runs, validation, tuple(victims))
    with Store.open(db) as store:
        hid = host_id(store, topo, report.fingerprint(), report.to_dict())
        inv = InvocationRecord(
            hid, "model validate", tuple(argv), utc(validation.started_at),
            utc(validation.finished_at), __version__,
            params={"model": platform.name, "hash": platform.hash, "source": platform.source,
                    "runs": runs, **params},
            summary={"regime": validation.regime, "counts": validation.counts(),
                     "threshold": validation.threshold, "skipped": len(validation.skipped)})
        return store.record(inv, workloads, samples, attachments=[rows])


def evidence(db: Path, model_hash: str) -> dict[frozenset[str], Evidence]:
    """The newest verdict for each pair validated against this exact model (by hash)."""
    if not Path(db).exists():
        return {}
    out: dict[frozenset[str], Evidence] = {}
    with Store.open(db) as store:
        rows = store.query(
            "SELECT v.invocation_id, v.victim_tx, v.aggressor_tx, v.verdict, v.delta, v.ci_low, "
            "v.ci_high, v.n, v.regime FROM model_verdicts v JOIN model_validations m "
            "ON m.invocation_id = v.invocation_id WHERE m.model_hash = ? "
            "ORDER BY v.invocation_id, v.id", (model_hash,)).fetchall()
    for inv, victim, aggressor, verdict, delta, lo, hi, n, regime in rows:
        ci = (math.nan if lo is None else lo, math.nan if hi is None else hi)
        out[frozenset((victim, aggressor))] = Evidence(verdict, delta, ci, n, regime, victim,
                                                       aggressor, inv)
    return out
