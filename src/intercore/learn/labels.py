"""Measuring a generated program's regions with the paired, interleaved harness
(measure/harness/paired.py, issue 9).

One victim process runs every repetition of the program: each repetition runs all its
regions, so one pair measures 2-6 regions at once. Between blocks of pairs the resident
canary probes whether the victim's and the aggressors' CPUs share the last-level cache right
now, and every sample carries the regime of its block; labels use the `shared` pairs only,
pooled over the attempts at a program (learn/pooling.py, learn/generate.py). Blocks are short
(`block_pairs`, four by default), so a change of regime costs a few pairs, not a program; the
victim, the aggressors and the canary run at SCHED_FIFO `priority`, so that other tenants of
the CPUs cannot preempt a repetition or a probe.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..host.topology import default_placement, read_topology
from ..measure.regime import canary as canary_mod
from ..measure.harness.paired import SHARED, Plan, VictimSpec, run, running_canary
from ..measure.harness.store import outcome_records
from ..measure.aggressors.presets import Footprints, place
from ..measure.harness.session import named_lookup, parse_aggressor_set
from .generate import Measured, Settings, program_seed
from .programs import VICTIM_KIND, ProgramSpec

LOOK_PROBES = 2  # probes of a look at the host's regime before an attempt


class HarnessMeasurer:
    """`settings.aggressor`: a set in the grammar of `measure run -a`, or `@worst:VICTIM` (saved in
    the store at `db` by `intercore measure run VICTIM --search`)."""

    def __init__(self, settings: Settings, db: Path | None = None):
        self.topo = read_topology()
        placement = default_placement(self.topo)
        self.victim_cpu = settings.victim_cpu if settings.victim_cpu is not None \
            else placement.victim
        acpus = [c for c in placement.aggressors if c != self.victim_cpu]
        fp = Footprints.for_host(self.topo, self.victim_cpu)
        self.aset = place(parse_aggressor_set(settings.aggressor, fp, self.topo,
                                              named_lookup(db, self.topo)), acpus)
        self.priority, self.block_pairs = settings.priority, settings.block_pairs
        self.canary = canary_mod.running_plan(self.topo, self.victim_cpu,
                                              self.aset.members[0].cpu)

    def describe(self) -> dict[str, Any]:
        return {"harness": "paired, interleaved blocks, resident aggressors (issue 9)",
                "regime": "running canary between blocks; labels from shared pairs",
                "aggressor": self.aset.to_dict(), "victim_cpu": self.victim_cpu,
                "priority": self.priority, "block_pairs": self.block_pairs}

    def shared_now(self) -> bool | None:
        """Two probes of the running canary, at the measuring priority: shared if either
        saw the cache shared (the attempt's own probes then decide which pairs count)."""
        if self.canary is None:
            return None
        with running_canary(self.canary, victim_cpu=self.victim_cpu, probes=LOOK_PROBES,
                            victim_priority=self.priority,
                            aggressor_priority=self.priority) as canary:
            t0 = time.monotonic()
            return any(canary.probe(t0).regime == SHARED for _ in range(LOOK_PROBES))

    def measure(self, exe: Path, spec: ProgramSpec, settings: Settings, attempt: int,
                pairs: int) -> Measured:
        started = time.time()
        plan = Plan(VictimSpec(VICTIM_KIND, name=spec.name, executable=str(exe.resolve())),
                    (self.aset,), pairs, self.victim_cpu, settings.priority,
                    settings.priority, program_seed(settings.seed, spec.name, attempt),
                    block_pairs=settings.block_pairs, canary=self.canary)
        outcome = run(plan)
        workloads, samples = outcome_records(outcome, regime="unknown")
        return Measured(workloads, samples, started, time.time(),
                        {"blocks": dict(Counter(b.regime for b in outcome.blocks)),
                         "probes": len(outcome.probes),
                         "rt": bool(outcome.victim_info.get("ready", {}).get("rt", False))})
