"""Hand a finished measurement to the results store as one atomic record."""

from __future__ import annotations

import platform
import socket
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from ... import __version__
from ...host.topology import Topology
from ...store import Store
from ...store.records import InvocationRecord, WorkloadRecord
from .paired import Outcome
from ...base.sample import Sample


def utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def host_id(store: Store, topo: Topology, fingerprint: str, info: dict) -> int:
    return store.ensure_host(fingerprint, socket.gethostname(), platform.release(),
                             topo.model_name or "unknown", len(topo.online_cpus), info)


def outcome_records(outcome: Outcome, *, victim_index: int = 0, regime: str | None = None,
                    victim_info: dict | None = None
                    ) -> tuple[list[WorkloadRecord], list[Sample]]:
    """The victim (first) and aggressors of one harness outcome as workload records, and its
    samples naming the victim as `victim_index` (its place among the caller's workloads).
    A sample keeps the regime the running canary gave its block; `regime` is for samples
    measured without one."""
    plan = outcome.plan
    workloads = [WorkloadRecord("victim", plan.victim.label, plan.victim.kind,
                                {**plan.victim.to_dict(), **outcome.victim_info,
                                 **(victim_info or {})},
                                plan.victim_cpu, outcome.victim_info.get("end"))]
    for aset in plan.sets:
        for member, stats in zip(aset.members, outcome.aggressor_stats.get(aset.label, [])):
            workloads.append(WorkloadRecord("aggressor", aset.label, member.kind,
                                            member.to_dict(), member.cpu, stats))
    samples = [replace(s, victim=victim_index,
                       regime=s.regime if s.regime is not None else regime)
               for s in outcome.samples]
    return workloads, samples


def save(db: Path, outcome: Outcome, *, command: str, argv: list[str],
         topo: Topology, fingerprint: str, host_info: dict, regime: str,
         summary: dict) -> int:
    """Write the invocation, its workloads and every raw sample in one transaction."""
    plan = outcome.plan
    workloads, samples = outcome_records(outcome, regime=regime)
    with Store.open(db) as store:
        hid = host_id(store, topo, fingerprint, host_info)
        inv = InvocationRecord(hid, command, tuple(argv), utc(outcome.started_at),
                               utc(outcome.finished_at), __version__,
                               params={"victim": plan.victim.to_dict(), "runs": plan.runs,
                                       "victim_cpu": plan.victim_cpu, "seed": plan.seed,
                                       "victim_priority": plan.victim_priority,
                                       "aggressor_priority": plan.aggressor_priority,
                                       "sets": [s.to_dict() for s in plan.sets]},
                               summary=summary)
        return store.record(inv, workloads, samples)
