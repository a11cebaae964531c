"""Measuring a generated program's regions with the paired harness (measure/harness.py).

One victim process runs every repetition of the program: each repetition runs all its
regions, so one pair measures 2-6 regions at once. The regime of each sample is what the
shared-cache canary said around the run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..campaign.runner import run_seed
from ..host.topology import default_placement, read_topology
from ..measure import canary as canary_mod
from ..measure.harness import Plan, VictimSpec, run
from ..measure.persist import outcome_records
from ..measure.presets import Footprints, parse_set, place
from .generate import Measured, Settings, labels_from
from .programs import VICTIM_KIND, ProgramSpec


class HarnessMeasurer:
    def __init__(self, settings: Settings):
        self.topo = read_topology()
        placement = default_placement(self.topo)
        self.victim_cpu = settings.victim_cpu if settings.victim_cpu is not None \
            else placement.victim
        acpus = [c for c in placement.aggressors if c != self.victim_cpu]
        fp = Footprints.for_host(self.topo, self.victim_cpu)
        self.aset = place(parse_set(settings.aggressor, fp, self.topo), acpus)

    def describe(self) -> dict[str, Any]:
        return {"harness": "paired, resident aggressors toggled per repetition",
                "regime": "canary before and after each program",
                "aggressor": self.aset.to_dict(), "victim_cpu": self.victim_cpu}

    def _regime(self) -> str:
        acpu = self.aset.members[0].cpu
        return canary_mod.run_canary(self.topo, victim_cpu=self.victim_cpu,
                                     aggressor_cpu=acpu).regime

    def measure(self, exe: Path, spec: ProgramSpec, settings: Settings) -> Measured:
        before = self._regime()
        started = time.time()
        plan = Plan(VictimSpec(VICTIM_KIND, name=spec.name, executable=str(exe.resolve())),
                    (self.aset,), settings.pairs, self.victim_cpu, 0, 0,
                    run_seed(settings.seed, spec.name, 1))
        outcome = run(plan)
        after = self._regime()
        regime = before if before == after else "unknown"
        workloads, samples = outcome_records(outcome, regime=regime)
        labels, pairs = labels_from(samples, [r.id for r in spec.regions], settings.min_pairs,
                                    seed=settings.seed, regime=settings.label_regime)
        return Measured(workloads, samples, labels, pairs, started, time.time(),
                        {"canary": [before, after]})
