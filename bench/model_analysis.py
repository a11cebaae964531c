#!/usr/bin/env python3
"""Interference-calculus time on a generated platform: 16 initiators with 8 transactions each.

    python bench/model_analysis.py [--initiators 16] [--transactions 8] [--repeat 3]

The platform: cores in clusters of four, each core with a private L1D and TLB, each cluster
an inclusive L2 with a prefetcher, a shared bus, LLC, DDR controller and 8-bank DRAM, and
every refinement rule on. Per core: L1, L2, LLC and DRAM transactions, load and store, with
refills, write-backs and page walks. The model goes through the real loader; the time is
building footprints and relation, enumerating and classifying every non-exclusive k-set and
computing each channel (best of --repeat runs). Goals: k = 2 within 1 s, k = 3 within 10 s.

Last line: `model_analysis ... k2_s=<seconds> k3_s=<seconds>`.
"""

from __future__ import annotations

import argparse
import time

import yaml

from intercore.model.calculus import build, classify
from intercore.model.channels import build_table
from intercore.model.loader import loads

GOALS_S = {2: 1.0, 3: 10.0}
LEVELS = ("l1", "l2", "llc", "ddr")


def generated_model(initiators: int, per_initiator: int) -> str:
    components: dict = {
        "bus": {"kind": "transporter", "role": "bus", "rw_independent": True},
        "llc": {"kind": "target", "role": "cache", "level": 3, "size": "8M",
                "prefetch_via": ["memctrl"]},
        "memctrl": {"kind": "transporter", "role": "controller"},
        "dram": {"kind": "target", "role": "memory", "banks": 8},
    }
    links = ["bus>llc", "bus>memctrl", "memctrl>dram"]
    transactions: dict = {}
    apps, data = {}, {}
    clusters = (initiators + 3) // 4
    for k in range(clusters):
        members = [c for c in range(initiators) if c // 4 == k]
        components[f"l2_{k}"] = {"kind": "target", "role": "cache", "level": 2, "size": "1M",
                                 "inclusive_of": [f"l1d{c}" for c in members],
                                 "prefetch_via": ["bus"]}
        components[f"scu{k}"] = {"kind": "transporter", "role": "controller"}
        links += [f"scu{k}>l2_{k}", f"scu{k}>bus"]
    for c in range(initiators):
        k = c // 4
        components[f"core{c}"] = {"kind": "initiator", "role": "core"}
        components[f"l1d{c}"] = {"kind": "target", "role": "cache", "level": 1,
                                 "size": "32K", "private_to": f"core{c}"}
        components[f"tlb{c}"] = {"kind": "target", "role": "tlb", "private_to": f"core{c}",
                                 "walk_via": [f"l1d{c}", f"l2_{k}"]}
        links += [f"core{c}>l1d{c}", f"core{c}>tlb{c}", f"core{c}>scu{k}"]
        apps[f"app{c}"] = f"core{c}"
        data[f"d{c}"] = {"at": "dram", "banks": [c % 8]}
        refills = {"l1": [], "l2": [f"l1d{c}"], "llc": [f"l2_{k}", f"l1d{c}"],
                   "ddr": ["llc", f"l2_{k}", f"l1d{c}"]}
        targets = {"l1": f"l1d{c}", "l2": f"l2_{k}", "llc": "llc"}
        for n in range(per_initiator):
            level, op = LEVELS[(n // 2) % len(LEVELS)], ("load", "store")[n % 2]
            tx = {"app": f"app{c}", "op": op, "refill": refills[level]}
            if level == "ddr":
                tx.update(data=f"d{c}", writeback=op == "store", page_walk=True)
            else:
                tx["target"] = targets[level]
            transactions[f"t{c}_{n}"] = tx
    model = {"platform": "generated", "components": components, "links": links,
             "config": {"prefetch": {f"l2_{k}": True for k in range(clusters)}},
             "apps": apps, "data": data, "transactions": transactions}
    return yaml.safe_dump(model, sort_keys=False)


def timed(platform, k: int, repeat: int) -> tuple[float, dict]:
    best, counts = float("inf"), {}
    for _ in range(repeat):
        start = time.perf_counter()
        analysis = classify(build(platform), k)
        best = min(best, time.perf_counter() - start)
        counts = analysis.counts
    return best, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--initiators", type=int, default=16)
    ap.add_argument("--transactions", type=int, default=8, help="per initiator")
    ap.add_argument("--repeat", type=int, default=3, help="runs per k; the best is kept")
    args = ap.parse_args()
    platform = loads(generated_model(args.initiators, args.transactions), "generated")
    times = {}
    for k in (2, 3):
        seconds, counts = timed(platform, k, args.repeat)
        times[k] = seconds
        goal = GOALS_S[k]
        print(f"k={k}: {counts['k_sets']} non-exclusive sets ({counts['interference']} "
              f"interference, {counts['free']} free, {counts['redundant']} redundant) in "
              f"{seconds:.3f} s (goal <= {goal:g} s, {'met' if seconds <= goal else 'MISSED'})")
    start = time.perf_counter()
    rows = build_table(classify(build(platform), 2), platform)
    print(f"channel table at k=2 (provenance of {len(rows.channels)} rows, not part of the "
          f"goal): {time.perf_counter() - start:.3f} s")
    print(f"model_analysis {args.initiators} initiators x {args.transactions} transactions: "
          f"k2_s={times[2]:.3f} k3_s={times[3]:.3f}")


if __name__ == "__main__":
    main()
