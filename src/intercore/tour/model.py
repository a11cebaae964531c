"""The model stage of `intercore demo`: detect this host, analyse it, validate a short subset.

Kept apart from the CLI (like measure.harness.session) so `demo` calls it without typer; it runs the
model stage and then the measure stage's validation, so it sits above both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from ..host.topology import read_topology
from ..measure import model_validation as validate
from ..model import detect as detect_mod
from ..model.calculus import analyze
from ..model.channels import build_table
from ..model.loader import loads


def run(db: Path, on_phase: Callable[[str], None] | None = None, quick: bool = True,
        model_out: Path | None = None) -> dict:
    """Detect -> analyse (k = 2) -> validate a subset, verdicts stored in `db`.

    `quick` validates the short subset (about ten seconds on two CPUs: two interference
    pairs and one negative control, 10 pairs each); otherwise every pair without a
    DRAM-sized workload plus four negative controls, 20 pairs each. `model_out`, when
    given, receives the detected model.
    """
    phase = on_phase or (lambda text: None)
    phase("model: detecting this host")
    topo = read_topology()
    text = detect_mod.to_yaml(detect_mod.detect())
    source = str(model_out) if model_out else "host model (detected)"
    if model_out is not None:
        model_out.write_text(text)
    platform = loads(text, source)
    phase("model: interference calculus (k = 2)")
    analysis = analyze(platform, 2)
    table = build_table(analysis, platform)
    found, why_not = validate.exercises(platform, topo)
    trials, skipped = validate.plan(table, found, why_not, topo, quick=quick, free_sample=4)
    if not quick:  # DRAM-sized victims take seconds each to build: not for a tour
        trials = [t for t in trials if "DRAM" not in (t.victim.level, t.aggressor.level)]
    runs = 10 if quick else 20
    result = validate.validate(trials, topo, skipped=skipped, runs=runs,
                               on_phase=lambda text: phase(f"model: {text}"))
    invocation = validate.save(db, platform, result, runs=runs, argv=list(sys.argv), topo=topo,
                            params={"tour": True, "quick": quick})
    return {
        "model": {"platform": platform.name, "title": platform.title, "hash": platform.hash,
                  "source": source, "initiators": list(platform.initiators),
                  "transactions": len(platform.transactions),
                  "topology_trust": platform.topology_trust},
        "analysis": {"k": 2, "counts": analysis.counts,
                     "by_resource": [{"components": list(c), "channels": n}
                                     for c, n in table.by_resource]},
        "validation": result.to_dict(),
        "invocation_id": invocation,
    }
