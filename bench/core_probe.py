#!/usr/bin/env python3
"""Core probe: does the core probe tell one core's hardware threads from separate cores, and
what does it cost?

    python bench/core_probe.py [--rounds N] [--gap S] [--cost-pairs N] [--json]

The probe (measure/regime/core.py): register-only work (ic-victim spin) on one CPU, timed alone and
beside a register-only spinner on the other, the fastest of two walks per half, two to five
pairs; `same-core` at a median slowdown >= 1.2, `separate-cores` below 1.1.

The truth is sysfs (topology/thread_siblings_list), where it can be one: on bare metal, a pair
of CPUs that are one core's threads is `same-core` and a pair on different cores is
`separate-cores`. Every round probes each such pair once, in a shuffled order, after --gap
seconds with the CPUs idle. Prints every round, the confusion matrix (truth rows, probe
columns), `core_probe_agreement`, the probe's `unknown` share and its cost: the core probes'
share of the wall time of a real measurement that runs both probes (bench/canary_probe.py's
cost run), and the goal lines (bench/_goals.py): agreement >= 0.9, unknown <= 0.2,
cost <= 0.02.

Agreement and unknown are refused, with the reason, under a hypervisor (a VM may put two vCPUs
on one core's threads and show them as separate cores: sysfs is no truth there; the rounds
still show what the probe said) and where sysfs offers no pair of one kind (no SMT, or one
core); the cost is measured wherever two CPUs are online.
"""

from __future__ import annotations

import json
import random
import sys
import time

import numpy as np
from _goals import Goals
from _rounds import (AGREEMENT_GOAL, UNKNOWN_GOAL, judge_agreement, print_confusion,
                     round_args)
from canary_probe import probe_cost

from intercore.host.topology import Topology, core_siblings, default_placement, read_topology
from intercore.measure.regime.canary import Agreement
from intercore.measure.regime.core import run_core_probe
from intercore.measure.harness.paired import CORE_STATES, SAME_CORE, SEPARATE_CORES, UNKNOWN
from intercore.measure.aggressors.presets import Footprints
from intercore.measure.harness.session import rt_permitted

MIN_PER_STATE = 5
COST_GOAL = 0.02
AS_PROBE = {SAME_CORE: SAME_CORE, SEPARATE_CORES: SEPARATE_CORES}


def truth_pairs(topo: Topology) -> dict[str, tuple[int, int]]:
    """(victim CPU, other CPU) per state sysfs can vouch for: none under a hypervisor."""
    if topo.hypervisor:
        return {}
    online = topo.online_cpus
    pairs: dict[str, tuple[int, int]] = {}
    for v in sorted(online, reverse=True):
        for o in online:
            if o != v:
                state = SAME_CORE if o in core_siblings(topo, v) else SEPARATE_CORES
                pairs.setdefault(state, (v, o))
    return pairs


def judge(goals: Goals, agreement: Agreement, cost: float | None, why_not: str | None) -> None:
    """Agreement and unknown share only where sysfs is a truth and each state was probed
    MIN_PER_STATE times (refused otherwise, `why_not` or the counts saying why); cost always."""
    same, apart = agreement.decided(SAME_CORE), agreement.decided(SEPARATE_CORES)
    if why_not is None and min(same, apart) < MIN_PER_STATE:
        why_not = (f"sysfs vouched for {same} same-core and {apart} separate-core probes "
                   f"(need {MIN_PER_STATE} of each)")
    judge_agreement(goals, "core_probe", agreement, why_not,
                    f"n {same + apart} rounds: {same} same-core, {apart} separate-cores", cost,
                    COST_GOAL)


def main() -> int:
    args = round_args(__doc__, 20, 1.0)
    if args is None:
        return 2
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    goals = Goals()
    if not acpus:
        for name, op, goal in (("core_probe_agreement", ">=", AGREEMENT_GOAL),
                               ("core_probe_unknown_share", "<=", UNKNOWN_GOAL),
                               ("core_probe_cost", "<=", COST_GOAL)):
            goals.refuse(name, op, goal, "one online CPU: no other CPU to share a core with")
        return goals.finish()
    prio = 1 if rt_permitted() else 0
    pairs = truth_pairs(topo)
    why_not = (f"under {topo.hypervisor}, sysfs is no truth: a VM may run two vCPUs on one "
               "core's threads and show separate cores" if topo.hypervisor else
               None if len(pairs) == 2 else
               f"sysfs offers only {', '.join(pairs) or 'no'} CPU pairs (no SMT or one core)")
    # Under a hypervisor there is no truth, but the probe's verdicts on the measuring pair
    # are still shown, as `unknown` truth.
    probed = pairs or {UNKNOWN: (vcpu, acpus[0])}
    rng = random.Random(args.seed)
    rows: list[dict] = []
    t0 = time.monotonic()
    for r in range(args.rounds):
        time.sleep(args.gap)
        order = list(probed)
        rng.shuffle(order)
        for truth in order:
            v, o = probed[truth]
            t = time.monotonic()
            p = run_core_probe(v, o, priority=prio, seed=args.seed + r)
            rows.append({"t_s": round(time.monotonic() - t0, 1), "truth": truth, "cpus": [v, o],
                         "probe": p.regime, "ratios": [round(x, 3) for x in p.ratios],
                         "iso_ms": [round(x / 1e6, 3) for x in p.iso_ns],
                         "probe_ms": round((p.at_ns - p.start_ns) / 1e6, 1),
                         "with_start_s": round(time.monotonic() - t, 3)})
            print(f"round {r + 1}/{args.rounds}: CPUs {v},{o} truth {truth}, probe {p.regime} "
                  f"(pairs {rows[-1]['ratios']}, {rows[-1]['probe_ms']} ms)", file=sys.stderr,
                  flush=True)
    agreement = Agreement.of([r["truth"] for r in rows], [r["probe"] for r in rows], AS_PROBE,
                             CORE_STATES)
    fp = Footprints.for_host(topo, vcpu)
    cost, cost_info = probe_cost(fp, topo, vcpu, acpus[0], args.cost_pairs, prio, "core_probes")
    probe_ms = [r["probe_ms"] for r in rows]
    doc = {"rounds": rows, "confusion": agreement.confusion, "agreement": agreement.agreement,
           "unknown_share": agreement.unknown_share, "truth_refused": why_not, "cost": cost,
           "cost_run": cost_info, "probe_ms_median": float(np.median(probe_ms)),
           "probe_ms_p90": float(np.percentile(probe_ms, 90)),
           "verdicts": {s: sum(r["probe"] == s for r in rows) for s in CORE_STATES}}
    if args.json:
        print(json.dumps(doc, indent=2))
    print_confusion(agreement, CORE_STATES, 16)
    shown = "-" if cost is None else f"{cost:.3f}"
    print(f"core_probe_cost: {shown} of a {cost_info['wall_s']:.1f} s measurement "
          f"({cost_info['probes']} core probes; probe median {doc['probe_ms_median']:.0f} ms, "
          f"p90 {doc['probe_ms_p90']:.0f} ms; blocks of {cost_info['block_pairs']} pairs)")
    judge(goals, agreement, cost, why_not)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
