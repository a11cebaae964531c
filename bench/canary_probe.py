#!/usr/bin/env python3
"""Canary probe: does the running canary's regime agree with the interference it claims to
detect, and what does it cost?

    python bench/canary_probe.py [--rounds N] [--gap S] [--cost-pairs N] [--json]

The ground truth is the phenomenon itself (measure/regime/canary.py: classify_truth): chases of
1.5, 4 and 16 times the private cache (at most half the shared cache), each measured alone
and against a write thrasher as large as the shared cache on the other CPU, settled walks,
five pairs each; a chase that runs alone at under half a DRAM-resident chase's time per
access lives in a cache and witnesses, and cross-core cache interference is *present* when a
witness is slowed 1.5x or more, *absent* when every witness is slowed less than 1.15x (or
none lives in a cache). Every round runs the truth and the running probe (measure/regime/canary.py:
running_plan) back to back in a shuffled order, after --gap seconds with the CPUs idle (so
the probe starts as cold as after a measured block); the host's sharing changes over tens of
seconds, so both see the same state.

Prints the confusion matrix (truth rows, probe columns), then
`canary_probe_agreement: A (n N truth-decided rounds: P present, B absent)`, the probe's
`unknown` share and its cost: the probes' share of the wall time of a real measurement with
the running canary (an 8 MiB-class shared-cache chase against an LLC-sized writer,
--cost-pairs pairs), and the goal lines (bench/_goals.py): agreement >= 0.9, unknown <= 0.2,
cost <= 0.05. Agreement and unknown are refused, with the reason, when the truth decided
fewer than 5 rounds of either state: on a host that stayed in one state, a probe that always
says the same agrees perfectly and shows nothing about telling the states apart.
"""

from __future__ import annotations

import json
import random
import sys
import time
from contextlib import ExitStack
from dataclasses import replace

import numpy as np

from _goals import Goals
from _rounds import AGREEMENT_GOAL, judge_agreement, print_confusion, round_args
from intercore.host.topology import default_placement, read_topology
from intercore.measure.regime import canary
from intercore.measure.regime.canary import ABSENT, PRESENT, Agreement
from intercore.measure.regime.core import core_plan
from intercore.measure.harness.paired import REGIMES, Plan, VictimSpec, run, running_canary
from intercore.measure.aggressors.presets import AggressorSet, AggressorSpec, Footprints
from intercore.measure.harness.session import rt_permitted

MIN_PER_STATE = 5
COST_GOAL = 0.05


def dram_level(fp: Footprints, vcpu: int, acpu: int, prio: int) -> float:
    """ns per access of a chase twice the shared cache, alone: the faster of the second walk
    of each half (a chase that large gains nothing from settling, and the thrasher nothing
    from it; a walk another tenant disturbed read 257 against 177-187 ns here)."""
    plan = replace(canary.chase_plan(fp.dram, fp.line, fp.shared, acpu, 1, None),
                   settle_walks=2)
    with running_canary(plan, victim_cpu=vcpu, probes=1, victim_priority=prio) as probe:
        p = probe.probe(time.monotonic())
    return min(p.iso_ns[0], p.iso_ns[0] * p.ratios[0])


def probe_cost(fp: Footprints, topo, vcpu: int, acpu: int, pairs: int, prio: int,
               probes: str = "probes") -> tuple[float | None, dict]:
    """A probe's share of a real measurement's wall time, with the harness's own block sizing
    and both probes `intercore measure run` runs (the running canary and the core probe): a
    shared-cache chase against an LLC-sized writer. `probes` names the Outcome field whose
    share is returned ("probes": the canary's, "core_probes"); None when no such probe ran
    (nothing was measured)."""
    victim = VictimSpec("ptrchase", (("size", str(fp.shared_victim)),))
    writer = AggressorSet("writer", (AggressorSpec("bw", "write", fp.llc, "writer", cpu=acpu),))
    plan = Plan(victim, (writer,), pairs, vcpu, victim_priority=prio, aggressor_priority=prio,
                canary=canary.running_plan(topo, vcpu, acpu), core=core_plan(acpu))
    out = run(plan)
    wall = out.finished_at - out.started_at
    taken = getattr(out, probes)
    probing = sum(p.at_ns - p.start_ns for p in taken) / 1e9
    info = {"wall_s": wall, "probes": len(taken), "probing_s": probing,
            "block_pairs": out.block_size.pairs, "block_reason": out.block_size.reason}
    return (probing / wall if taken else None), info


def judge(goals: Goals, agreement: Agreement, cost: float | None) -> None:
    """The goals: agreement and unknown share only when the truth saw both states often
    enough (refused otherwise), the cost always."""
    present, absent = agreement.decided(PRESENT), agreement.decided(ABSENT)
    why = None if min(present, absent) >= MIN_PER_STATE else (
        f"the truth saw interference present in {present} and absent in {absent} of "
        f"{agreement.rounds} rounds (need {MIN_PER_STATE} of each): the host stayed in one "
        "state, so agreement cannot show the probe tells them apart")
    judge_agreement(goals, "canary_probe", agreement, why,
                    f"n {present + absent} truth-decided rounds: {present} present, "
                    f"{absent} absent", cost, COST_GOAL)


def main() -> int:
    args = round_args(__doc__, 30, 2.0)
    if args is None:
        return 2
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    goals = Goals()
    if not acpus:
        goals.refuse("canary_probe_agreement", ">=", AGREEMENT_GOAL,
                     "one online CPU, no cross-core canary to probe")
        return goals.finish()
    acpu = acpus[0]
    fp = Footprints.for_host(topo, vcpu)
    prio = 1 if rt_permitted() else 0
    running = canary.running_plan(topo, vcpu, acpu)
    assert running is not None
    truths = {size: canary.chase_plan(size, fp.line, fp.shared, acpu, canary.TRUTH_PAIRS, None)
              for size in canary.truth_sizes(fp)}
    dram_ns = dram_level(fp, vcpu, acpu, prio)
    print(f"DRAM-resident chase: {dram_ns:.1f} ns per access; truth chases "
          f"{[s >> 10 for s in truths]} KiB; running probe {dict(running.victim.params)}",
          file=sys.stderr)
    rng = random.Random(args.seed)
    rows: list[dict] = []
    with ExitStack() as stack:
        names = ["running", *truths]
        plans = {"running": running, **truths}
        probes = {name: stack.enter_context(running_canary(
            plans[name], victim_cpu=vcpu, probes=args.rounds, victim_priority=prio,
            aggressor_priority=prio, seed=args.seed)) for name in names}
        t0 = time.monotonic()
        for r in range(args.rounds):
            time.sleep(args.gap)
            order = list(names)
            rng.shuffle(order)
            seen, took = {}, {}
            for name in order:
                t = time.monotonic()
                seen[name] = probes[name].probe(t0)
                took[name] = time.monotonic() - t
            chases = [(float(np.median(seen[s].iso_ns)) if seen[s].iso_ns else float("inf"),
                       list(seen[s].ratios)) for s in truths]
            p = seen["running"]
            row = {"t_s": round(time.monotonic() - t0, 1),
                   "truth": canary.classify_truth(chases, dram_ns),
                   "probe": p.regime, "probe_ratios": [round(x, 3) for x in p.ratios],
                   "probe_iso_ns": [round(x, 1) for x in p.iso_ns],
                   "probe_s": round(took["running"], 4),
                   "truth_chases": {f"{s >> 10}K": {"iso_ns": round(iso, 1),
                                                   "ratios": [round(x, 3) for x in ratios]}
                                    for s, (iso, ratios) in zip(truths, chases)}}
            rows.append(row)
            print(f"round {r + 1}/{args.rounds}: truth {row['truth']}, probe {p.regime} "
                  f"(median {np.median(p.ratios):.2f}, iso {np.median(p.iso_ns):.0f} ns); "
                  + ", ".join(f"{k} {v['iso_ns']:.0f} ns x{np.median(v['ratios']):.2f}"
                              for k, v in row["truth_chases"].items()),
                  file=sys.stderr, flush=True)
    agreement = Agreement.of([r["truth"] for r in rows], [r["probe"] for r in rows])
    cost, cost_info = probe_cost(fp, topo, vcpu, acpu, args.cost_pairs, prio)
    probe_s = [r["probe_s"] for r in rows]
    doc = {"rounds": rows, "dram_ns": dram_ns, "confusion": agreement.confusion,
           "agreement": agreement.agreement, "unknown_share": agreement.unknown_share,
           "cost": cost, "cost_run": cost_info,
           "probe_s_median": float(np.median(probe_s)), "probe_s_p90": float(
               np.percentile(probe_s, 90)), "victim_cpu": vcpu, "aggressor_cpu": acpu}
    if args.json:
        print(json.dumps(doc, indent=2))
    print_confusion(agreement, REGIMES, 12)
    shown = "-" if cost is None else f"{cost:.3f}"
    print(f"canary_probe_cost: {shown} of a {cost_info['wall_s']:.1f} s measurement "
          f"({cost_info['probes']} probes, median {doc['probe_s_median'] * 1e3:.0f} ms, "
          f"p90 {doc['probe_s_p90'] * 1e3:.0f} ms; blocks of {cost_info['block_pairs']} pairs)")
    judge(goals, agreement, cost)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
