#!/usr/bin/env python3
"""Regime stratification: does the harness, on a host whose sharing comes and goes, recover
the slowdown of a run made wholly in the shared state from the blocks it labelled shared?

    python bench/regime_stratification.py [--runs 32] [--period 0.5] [--json]

A flipping host (tests/_flipping.py: a test aggressor switched on and off by freezing its
cgroup every `--period` seconds) runs beside one `harness.run` with the running canary, whose
aggressor sets are two copies the host flips and two it leaves on (the run made wholly in the
shared state, interleaved with the flipping copies so both meet the same real host). Then a
short run with the host left on checks the canary never calls an all-shared run not-shared.

Prints per state the blocks whose regime matched it, mismatched it (the opposite label) or
were unknown, the Δ of the flipping copies per regime and of the steady reference, then the
goal lines (bench/_goals.py):
  regime_mismatch_share <= 0.25     blocks labelled the opposite of the host's state (among
                                    blocks the host spent in one state throughout)
  shared_delta_overlap >= 1         the flipping copies' shared-block Δ CI meets the steady
                                    reference's, each widened by the 12 % two processes of
                                    one aggressor differ by here (issue 9)
  reference_delta >= 1.2            the simulated sharing is observable at all
  calm_delta <= 1.15                the not-shared blocks' Δ
  always_on_not_shared_blocks == 0
It is real-host timing (other tenants, the hypervisor), which is why it is a benchmark and not
a test. Refused (exit 3) without root, a cgroup v2 hierarchy or two CPUs, when the host gave
fewer than 2 blocks to either state, or when other tenants disturbed the reference (its
isolated CV above 30 %).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from _goals import Goals

# The flipping host is the test suite's simulation of the real host's coming and going
# sharing; the benchmark drives the same simulation rather than keep a second copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _flipping import FlippingHost, aggressor_argv, usable  # noqa: E402

from intercore.host.topology import default_placement, largest_private, read_topology  # noqa: E402
from intercore.measure.harness import paired as harness  # noqa: E402
from intercore.measure.harness.paired import CanaryPlan, Plan, VictimSpec  # noqa: E402
from intercore.measure.harness.comparison import comparisons  # noqa: E402
from intercore.measure.aggressors.presets import AggressorSet, AggressorSpec  # noqa: E402

EXPECTED = {"on": "shared", "off": "not-shared"}
OPPOSITE = {"on": "not-shared", "off": "shared"}
STARTUP_NS = 500_000_000  # the test aggressor (a `cmd:` stressor) has no ready line
PROCESS_SPREAD = 0.12     # two processes of one aggressor differ by up to 12 % in Δ (issue 9)
ROLES = {"flipping 1": ("flipping", "flipping-host-1"),
         "flipping 2": ("flipping", "flipping-host-2"),
         "steady 1": ("steady", "steady-tenant-1"), "steady 2": ("steady", "steady-tenant-2")}


def plan(runs: int, vcpu: int, l2: int) -> Plan:
    def aggressor(label: str, name: str = "flipping-host") -> AggressorSpec:
        return AggressorSpec("cmd", "", 0, label, cpu=vcpu,
                             command=aggressor_argv(vcpu, 8 * l2, name=name))

    def chase(accesses: str) -> VictimSpec:  # most of the private cache: a preemption refills it
        return VictimSpec("ptrchase", (("size", str(3 * l2 // 4)), ("accesses", accesses)))

    sets = tuple(AggressorSet(label, (aggressor(label, name),))
                 for label, (_, name) in ROLES.items())
    return Plan(chase("500K"), sets, runs=runs, victim_cpu=vcpu, victim_priority=1, seed=3,
                block_pairs=2, canary=CanaryPlan(chase("250K"), aggressor("canary thrasher"), 5))


def judged_blocks(out: harness.Outcome, host: FlippingHost) -> Counter:
    """(host state, 'match' | 'mismatch' | 'unknown') per block spent in one state."""
    seen: Counter = Counter()
    for b, before, after in zip(out.blocks, out.probes, out.probes[1:]):
        state = host.state_over(out.started_at + before.start_ns / 1e9,
                                out.started_at + after.at_ns / 1e9)
        if before.start_ns < STARTUP_NS or state is None:
            continue
        seen[state, "match" if b.regime == EXPECTED[state] else
             "mismatch" if b.regime == OPPOSITE[state] else "unknown"] += 1
    return seen


def by_role(samples: list) -> dict:
    """Region 0 per role, the two copies of a role pooled (pair numbers are unique in a run)."""
    pooled = [replace(s, aggressor_set=ROLES[s.aggressor_set][0]) if s.aggressor_set else s
              for s in samples]
    return {c.aggressor_set: c for c in comparisons(pooled) if c.region == 0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=32, help="pairs per aggressor set (>= 8)")
    ap.add_argument("--period", type=float, default=0.5, help="seconds between flips (> 0)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 8 or not args.period > 0:
        ap.error("--runs must be >= 8 and --period > 0")
    goals = Goals()
    names = ("regime_mismatch_share", "<=", 0.25), ("shared_delta_overlap", ">=", 1), \
        ("reference_delta", ">=", 1.2), ("calm_delta", "<=", 1.15), \
        ("always_on_not_shared_blocks", "==", 0)
    topo = read_topology()
    why = usable() or (None if len(topo.online_cpus) >= 2 else "needs two online CPUs")
    if why:
        for n in names:
            goals.refuse(*n, why)
        return goals.finish()
    vcpu = default_placement(topo)[0]
    l2 = largest_private(topo, vcpu).size
    host = FlippingHost(period_s=args.period)
    with host.running():
        flipping = harness.run(plan(args.runs, vcpu, l2))
    with FlippingHost(period_s=None).running():
        always = harness.run(plan(4, vcpu, l2))
    seen = judged_blocks(flipping, host)
    found = by_role(flipping.samples)
    flip, ref = found["flipping"], found["steady"]
    shared, calm = flip.by_regime.get("shared"), flip.by_regime.get("not-shared")
    report = {"blocks": {f"{s} {v}": n for (s, v), n in sorted(seen.items())},
              "flipping_by_regime": {k: r.delta for k, r in flip.by_regime.items()},
              "reference_delta": ref.result.delta, "reference_ci": ref.result.delta_ci,
              "reference_iso_cv": ref.result.iso.cv}
    print(json.dumps(report, indent=2) if args.json else
          "\n".join(f"{k}: {v}" for k, v in report.items()))
    per_state = {s: sum(n for (st, _), n in seen.items() if st == s) for s in ("on", "off")}
    if min(per_state.values()) < 2:
        why = f"the host was too busy for the timer to give both states 2 blocks: {per_state}"
    elif ref.result.iso.cv > 0.3:
        why = f"other tenants disturbed the reference (isolated CV {ref.result.iso.cv:.0%})"
    if why:
        for n in names:
            goals.refuse(*n, why)
        return goals.finish()
    judged = sum(per_state.values())
    goals.check("regime_mismatch_share",
                sum(n for (_, v), n in seen.items() if v == "mismatch") / judged, "<=", 0.25)
    widen = 1 + PROCESS_SPREAD
    overlap = None if shared is None or shared.delta_ci[0] is None else float(
        shared.delta_ci[0] / widen <= ref.result.delta_ci[1]
        and ref.result.delta_ci[0] / widen <= shared.delta_ci[1])
    goals.check("shared_delta_overlap", overlap, ">=", 1, "no shared block had a CI")
    goals.check("reference_delta", ref.result.delta, ">=", 1.2)
    goals.check("calm_delta", calm.delta if calm else None, "<=", 1.15,
                "no block was labelled not-shared")
    goals.check("always_on_not_shared_blocks",
                sum(b.regime == "not-shared" for b, p in zip(always.blocks, always.probes)
                    if p.start_ns >= STARTUP_NS), "==", 0)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
