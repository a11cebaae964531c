#!/usr/bin/env python3
"""Canary probe: what the running canary's probe costs, and how often it agrees with the
long reference probe taken right beside it.

    python bench/canary_probe.py [--rounds N] [--probe SIZE,LAPS,PAIRS[,MAX_PAIRS]]... [--json]

Every round runs the reference probe (a chase of 4x the private cache, two laps, seven
pairs: longer than the canary as it was first built) and every probe under test back to
back, in a shuffled order, each with its own resident chase and thrasher; the host's sharing changes over tens of
seconds, so probes a fraction of a second apart see the same regime. A probe *agrees* when
it says what the reference said, among the rounds where the reference decided (shared or
not shared); `unknown` from the probe under test counts against it. Without --probe, the
probe under test is the running canary's own (measure/canary.py: running_plan).

Prints `canary_probe_agreement: A (n N decided rounds; cost X s vs Y s per probe)` per probe
under test, then the goal lines (bench/_goals.py): agreement >= 0.9 and a cost at most half
the reference's (the median over rounds). Both are refused, with the reason, when fewer than
10 rounds were decided by the reference (nothing to agree with); the agreement is refused
too when the reference decided fewer than 5 rounds of either regime: on a host that stayed
shared (or not) throughout, a probe that always gives the same answer agrees perfectly and
shows nothing about telling the regimes apart.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from contextlib import ExitStack
from dataclasses import replace

import numpy as np

from _goals import Goals
from intercore.host.topology import default_placement, read_topology
from intercore.measure import canary
from intercore.measure.harness import (
    NOT_SHARED,
    SHARED,
    UNKNOWN,
    CanaryPlan,
    VictimSpec,
    running_canary,
)
from intercore.measure.presets import Footprints
from intercore.measure.session import rt_permitted

MIN_DECIDED = 10
MIN_PER_REGIME = 5  # rounds of each regime the reference must decide
REFERENCE_PAIRS = 7
AGREEMENT_GOAL = 0.9
COST_RATIO_GOAL = 0.5


def probe_plan(base: CanaryPlan, size: int, laps: float, pairs: int,
               max_pairs: int | None, line: int) -> CanaryPlan:
    accesses = max(1, int(laps * size // line))
    victim = VictimSpec("ptrchase", (("size", str(size)), ("accesses", str(accesses))),
                        name="canary")
    return replace(base, victim=victim, pairs=pairs, max_pairs=max_pairs)


def parse_probe(text: str, base: CanaryPlan, fp: Footprints) -> tuple[str, CanaryPlan]:
    from intercore.measure.units import parse_size

    parts = text.split(",")
    if len(parts) not in (3, 4):
        raise SystemExit(f"--probe {text!r}: SIZE,LAPS,PAIRS[,MAX_PAIRS]")
    size = parse_size(parts[0], field="--probe")
    plan = probe_plan(base, size, float(parts[1]), int(parts[2]),
                      int(parts[3]) if len(parts) == 4 else None, fp.line)
    return text, plan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40, help="rounds (default 40)")
    ap.add_argument("--probe", action="append", default=[],
                    help="a probe under test: chase SIZE, LAPS over it, PAIRS (and up to "
                         "MAX_PAIRS when the first disagree); default: the running canary's")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    goals = Goals()
    if not acpus:
        goals.refuse("canary_probe_agreement", ">=", AGREEMENT_GOAL,
                     "one online CPU, no cross-core canary to probe")
        return goals.finish()
    fp = Footprints.for_host(topo, vcpu)
    base = canary.running_plan(topo, vcpu, acpus[0])
    assert base is not None
    reference = probe_plan(base, fp.shared_victim, 2, REFERENCE_PAIRS, None, fp.line)
    tested = dict(parse_probe(p, base, fp) for p in args.probe) or {"running canary": base}
    # The reference twice: how often two identical long probes agree is the floor any probe
    # is judged against.
    plans = {"reference": reference, "reference again": reference, **tested}
    prio = 1 if rt_permitted() else 0
    rng = random.Random(args.seed)
    regimes: dict[str, list[str]] = {name: [] for name in plans}
    costs: dict[str, list[float]] = {name: [] for name in plans}
    pairs_used: dict[str, list[int]] = {name: [] for name in plans}
    with ExitStack() as stack:
        probes = {name: stack.enter_context(running_canary(
            plan, victim_cpu=vcpu, probes=args.rounds, victim_priority=prio, seed=args.seed))
            for name, plan in plans.items()}
        t0 = time.monotonic()
        for r in range(args.rounds):
            order = list(plans)
            rng.shuffle(order)
            for name in order:
                t = time.monotonic()
                p = probes[name].probe(t0)
                costs[name].append(time.monotonic() - t)
                regimes[name].append(p.regime)
                pairs_used[name].append(len(p.ratios))
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{n} {regimes[n][-1]}" for n in plans), file=sys.stderr, flush=True)
    ref = regimes["reference"]
    decided = [i for i, x in enumerate(ref) if x in (SHARED, NOT_SHARED)]
    doc: dict = {"rounds": args.rounds, "victim_cpu": vcpu, "aggressor_cpu": acpus[0],
                 "probes": {}}
    for name, plan in plans.items():
        agree = sum(regimes[name][i] == ref[i] for i in decided)
        by_ref = {k: [regimes[name][i] for i in decided if ref[i] == k]
                  for k in (SHARED, NOT_SHARED)}
        doc["probes"][name] = {
            "victim": plan.victim.to_dict(), "pairs": plan.pairs, "max_pairs": plan.max_pairs,
            "cost_s_median": float(np.median(costs[name])),
            "cost_s_p90": float(np.percentile(costs[name], 90)),
            "pairs_median": float(np.median(pairs_used[name])),
            "regimes": {k: regimes[name].count(k) for k in (SHARED, NOT_SHARED, UNKNOWN)},
            "agreement": agree / len(decided) if decided else None,
            "agreement_by_reference": {k: {"n": len(v), "agree": v.count(k)}
                                       for k, v in by_ref.items()}}
    print(f"{'probe':<24}{'cost med s':>11}{'p90 s':>8}{'pairs':>7}{'shared':>8}{'not':>6}"
          f"{'unk':>6}{'agree':>8}{'on shared':>11}{'on not':>9}")
    for name, d in doc["probes"].items():
        ag = "-" if d["agreement"] is None else f"{d['agreement']:.2f}"
        by = d["agreement_by_reference"]
        on = {k: f"{by[k]['agree']}/{by[k]['n']}" for k in by}
        print(f"{name[:23]:<24}{d['cost_s_median']:>11.3f}{d['cost_s_p90']:>8.3f}"
              f"{d['pairs_median']:>7.1f}{d['regimes'][SHARED]:>8}{d['regimes'][NOT_SHARED]:>6}"
              f"{d['regimes'][UNKNOWN]:>6}{ag:>8}{on[SHARED]:>11}{on[NOT_SHARED]:>9}")
    if args.json:
        print(json.dumps(doc, indent=2))
    if len(decided) < MIN_DECIDED:
        why = (f"the reference decided only {len(decided)} of {args.rounds} rounds "
               f"(need {MIN_DECIDED})")
        goals.refuse("canary_probe_agreement", ">=", AGREEMENT_GOAL, why)
        goals.refuse("canary_probe_cost_ratio", "<=", COST_RATIO_GOAL, why)
        return goals.finish()
    ref_cost = doc["probes"]["reference"]["cost_s_median"]
    for name in tested:
        d = doc["probes"][name]
        suffix = "" if len(tested) == 1 else f"_{name}"
        cost = f"cost {d['cost_s_median']:.3f} s vs {ref_cost:.3f} s per probe"
        seen = {k: v["n"] for k, v in d["agreement_by_reference"].items()}
        if min(seen.values()) < MIN_PER_REGIME:
            print(f"canary_probe_cost{suffix}: {cost}")
            goals.refuse(f"canary_probe_agreement{suffix}", ">=", AGREEMENT_GOAL,
                         f"the reference decided {seen[SHARED]} shared and {seen[NOT_SHARED]} "
                         f"not-shared rounds (need {MIN_PER_REGIME} of each): the host stayed "
                         "in one regime, so agreement cannot show the probe tells them apart")
        else:
            print(f"canary_probe_agreement{suffix}: {d['agreement']:.3f} (n {len(decided)} "
                  f"decided rounds; {cost})")
            goals.check(f"canary_probe_agreement{suffix}", d["agreement"], ">=",
                        AGREEMENT_GOAL)
        goals.check(f"canary_probe_cost_ratio{suffix}", d["cost_s_median"] / ref_cost, "<=",
                    COST_RATIO_GOAL)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
