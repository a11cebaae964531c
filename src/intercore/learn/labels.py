"""Measuring a generated program's regions with the paired, interleaved harness
(measure/harness.py, issue 9).

One victim process runs every repetition of the program: each repetition runs all its
regions, so one pair measures 2-6 regions at once. Between blocks of pairs the resident
canary probes whether the victim's and the aggressors' CPUs share the last-level cache right
now, and every sample carries the regime of its block; labels use the `shared` pairs only.
Adaptive stopping (`until_ci`) ends a program once the Δ of its total, in the shared regime,
is known to that fraction, or after `pairs` pairs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..host.topology import default_placement, read_topology
from ..measure import canary as canary_mod
from ..measure.harness import Plan, VictimSpec, run
from ..measure.persist import outcome_records
from ..measure.presets import Footprints, place
from ..measure.session import named_lookup, parse_aggressor_set
from .generate import LABEL_REGIME, Measured, Settings, labels_from, program_seed
from .programs import VICTIM_KIND, ProgramSpec

MIN_PAIRS_BEFORE_STOPPING = 12
UNTIL_CI = 0.03


class HarnessMeasurer:
    """`settings.aggressor`: a set in the grammar of `measure -a`, or `@worst:VICTIM` (saved in
    the store at `db` by `intercore measure VICTIM --search`)."""

    def __init__(self, settings: Settings, db: Path | None = None):
        self.topo = read_topology()
        placement = default_placement(self.topo)
        self.victim_cpu = settings.victim_cpu if settings.victim_cpu is not None \
            else placement.victim
        acpus = [c for c in placement.aggressors if c != self.victim_cpu]
        fp = Footprints.for_host(self.topo, self.victim_cpu)
        self.aset = place(parse_aggressor_set(settings.aggressor, fp, self.topo,
                                              named_lookup(db, self.topo)), acpus)
        self.canary = canary_mod.running_plan(self.topo, self.victim_cpu,
                                              self.aset.members[0].cpu)

    def describe(self) -> dict[str, Any]:
        return {"harness": "paired, interleaved blocks, resident aggressors (issue 9)",
                "regime": "running canary between blocks; labels from shared pairs",
                "aggressor": self.aset.to_dict(), "victim_cpu": self.victim_cpu,
                "until_ci": UNTIL_CI, "min_pairs_before_stopping": MIN_PAIRS_BEFORE_STOPPING}

    def measure(self, exe: Path, spec: ProgramSpec, settings: Settings) -> Measured:
        started = time.time()
        adaptive = settings.pairs > MIN_PAIRS_BEFORE_STOPPING
        plan = Plan(VictimSpec(VICTIM_KIND, name=spec.name, executable=str(exe.resolve())),
                    (self.aset,), MIN_PAIRS_BEFORE_STOPPING if adaptive else settings.pairs,
                    self.victim_cpu, 0, 0, program_seed(settings.seed, spec.name),
                    canary=self.canary, until_ci=UNTIL_CI if adaptive else None,
                    max_runs=settings.pairs if adaptive else None,
                    stop_regime=LABEL_REGIME if settings.label_regime == LABEL_REGIME
                    else None)
        outcome = run(plan)
        workloads, samples = outcome_records(outcome, regime="unknown")
        labels, pairs = labels_from(samples, [r.id for r in spec.regions], settings.min_pairs,
                                    seed=settings.seed, regime=settings.label_regime)
        return Measured(workloads, samples, labels, pairs, started, time.time(),
                        {"stopped": outcome.stopped, "blocks": len(outcome.blocks),
                         "probes": len(outcome.probes)})
