#!/usr/bin/env python3
"""Interference-calculus time on generated platforms, against the goals of issues 4 and 15.

    python bench/model_analysis.py [--repeat 5]

1. The generated 16-initiator model (8 transactions each; clusters of four cores, private
   L1D and TLB, inclusive L2 with prefetcher, bus, LLC, DDR controller, 8-bank DRAM, every
   rule on): enumerating and classifying every k-set for k = 2 and 3 (goals 1 s and 10 s),
   and its k = 4 channel table, counts and pattern rows (goal 1 s).
2. A generated 32-initiator, 64-transaction SoC in the new forms (soc_model below): the
   counts for k = 2..10 from the symmetry quotient, each k timed on its own (goals: every
   k <= 6 within 10 s, every k <= 10 within 60 s), and the peak memory of the process
   (goal 2 GiB).

Every time is the median of --repeat runs, printed with n and the spread (min-max). The
benchmark fails closed: a figure it could not measure, or a goal missed, exits 1.
Last line: `model_analysis gen_k2_s=... gen_k4_table_s=... soc_k10_s=... peak_mib=...`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import yaml

from intercore.model.calculus import build, classify
from intercore.model.counting import count
from intercore.model.loader import loads
from intercore.model.table import channel_table

GOALS_S = {2: 1.0, 3: 10.0}
TABLE_K4_GOAL_S = 1.0
SOC_GOALS_S = {**{k: 10.0 for k in range(2, 7)}, **{k: 60.0 for k in range(7, 11)}}
PEAK_GOAL_MIB = 2048
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


def soc_model() -> str:
    """A many-core SoC of 32 initiators and 64 transactions, in the new forms: 16 cores in 4
    clusters (an L2 load refilling the L1; a DDR store with refills and write-back), 8 DSPs
    (a local TCM load; a store to their SRAM bank across a bridge), 8 DMA engines (two
    copies each, DDR to SRAM and back, as two-leg transactions), a NoC whose read and write
    networks are declared independent, DDR reached through one port per initiator class by
    platform routing rules, and banked DDR and SRAM."""
    comps = {
        "noc": {"kind": "transporter", "role": "bus",
                "non_interfering": [{"pairs": [["load", "store"]],
                                     "why": "separate request and response networks",
                                     "ref": "generated"}]},
        "port[0-1]": {"kind": "transporter", "role": "port"},
        "bridge": {"kind": "transporter", "role": "bus"},
        "ddrc": {"kind": "transporter", "role": "controller"},
        "ddr": {"kind": "target", "role": "memory", "banks": 8},
        "sram": {"kind": "target", "role": "memory", "banks": 4},
    }
    links = ["noc>port[0-1]", "port[*]>ddrc", "ddrc>ddr", "noc>sram", "bridge>sram"]
    apps, data, txs = {}, {}, {}
    for k in range(4):
        comps[f"l2_{k}"] = {"kind": "target", "role": "cache", "level": 2, "size": "1M",
                            "inclusive_of": [f"l1d{4*k+i}" for i in range(4)]}
        comps[f"scu{k}"] = {"kind": "transporter", "role": "controller"}
        links += [f"scu{k}>l2_{k}", f"scu{k}>noc"]
    for c in range(16):
        k = c // 4
        comps[f"core{c}"] = {"kind": "initiator", "role": "core"}
        comps[f"l1d{c}"] = {"kind": "target", "role": "cache", "level": 1, "size": "32K",
                            "private_to": f"core{c}"}
        links += [f"core{c}>l1d{c}", f"core{c}>scu{k}"]
        apps[f"a{c}"] = f"core{c}"
        txs[f"c{c}_l2"] = {"app": f"a{c}", "op": "load", "target": f"l2_{k}", "refill": [f"l1d{c}"]}
        txs[f"c{c}_ddr"] = {"app": f"a{c}", "op": "store", "data": "heap",
                            "refill": [f"l2_{k}", f"l1d{c}"], "writeback": True}
    data["heap"] = "ddr"
    for d in range(8):
        comps[f"dsp{d}"] = {"kind": "initiator", "role": "accelerator"}
        comps[f"tcm{d}"] = {"kind": "target", "role": "memory", "private_to": f"dsp{d}"}
        links += [f"dsp{d}>tcm{d}", f"dsp{d}>bridge"]
        apps[f"s{d}"] = f"dsp{d}"
        data[f"buf{d}"] = {"at": "sram", "banks": [d // 4]}
        txs[f"s{d}_tcm"] = {"app": f"s{d}", "op": "load", "target": f"tcm{d}"}
        txs[f"s{d}_buf"] = {"app": f"s{d}", "op": "store", "data": f"buf{d}"}
    for e in range(8):
        comps[f"dma{e}"] = {"kind": "initiator", "role": "device"}
        links += [f"dma{e}>noc"]
        apps[f"m{e}"] = f"dma{e}"
        txs[f"m{e}_in"] = {"app": f"m{e}", "legs": [
            {"name": "read", "op": "load", "data": "heap"},
            {"name": "write", "op": "store", "data": f"io{e%2}"}]}
        txs[f"m{e}_out"] = {"app": f"m{e}", "legs": [
            {"name": "read", "op": "load", "data": f"io{e%2}"},
            {"name": "write", "op": "store", "data": "heap"}]}
    data["io0"] = {"at": "sram", "banks": [2]}
    data["io1"] = {"at": "sram", "banks": [3]}
    routing = [{"id": "cores-port0", "roles": ["core"], "to": ["ddr"], "via": ["port0"],
                "why": "address map"},
               {"id": "dma-port1", "roles": ["device"], "to": ["ddr"], "via": ["port1"],
                "why": "address map"}]
    model = {"platform": "soc32", "components": comps, "links": links, "apps": apps, "data": data,
             "transactions": txs, "routing": routing}
    return yaml.safe_dump(model, sort_keys=False)


def measure(fn, repeat: int) -> tuple[dict, object]:
    """Median, min and max seconds of `repeat` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return {"n": len(times), "median": statistics.median(times), "min": min(times),
            "max": max(times)}, result


def shown(t: dict) -> str:
    return f"{t['median']:.3f} s (n={t['n']}, {t['min']:.3f}-{t['max']:.3f})"


def verdict(seconds: float | None, goal: float, failures: list[str], what: str) -> str:
    if seconds is None:
        failures.append(f"{what}: not measured")
        return "NOT MEASURED"
    if seconds > goal:
        failures.append(f"{what}: {seconds:.3f} s > {goal:g} s")
        return f"MISSED (goal <= {goal:g} s)"
    return f"met (goal <= {goal:g} s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure (median kept)")
    args = ap.parse_args()
    failures: list[str] = []
    figures: dict[str, float] = {}

    gen = loads(generated_model(16, 8), "generated")
    print("generated model: 16 initiators x 8 transactions, enumerated")
    for k in (2, 3):
        t, analysis = measure(lambda k=k: classify(build(gen), k), args.repeat)
        c = analysis.counts
        figures[f"gen_k{k}_s"] = t["median"]
        print(f"  k={k}: {c['k_sets']} sets ({c['interference']} interference, {c['free']} "
              f"free, {c['redundant']} redundant) in {shown(t)}: "
              f"{verdict(t['median'], GOALS_S[k], failures, f'generated k={k}')}")
    problem = build(gen)
    t, table = measure(lambda: channel_table(gen, 4, problem=problem), args.repeat)
    figures["gen_k4_table_s"] = t["median"]
    c = table.counts
    print(f"  k=4 channel table: {c['k_sets']} sets ({c['interference']} interference), "
          f"{len(table.channels)} interference patterns shown of "
          f"{table.patterns['total']['interference'] if table.patterns else '?'}, in "
          f"{shown(t)}: {verdict(t['median'], TABLE_K4_GOAL_S, failures, 'k=4 table')}")

    soc = loads(soc_model(), "soc32")
    problem = build(soc)
    print(f"generated SoC: {len(soc.initiators)} initiators, {len(soc.transactions)} "
          "transactions, counted on the symmetry quotient")
    for k in range(2, 11):
        t, counted = measure(lambda k=k: count(problem, k), args.repeat)
        c = counted.at(k)
        figures[f"soc_k{k}_s"] = t["median"]
        print(f"  k={k:2}: {c['k_sets']} sets = {c['interference']} interference + "
              f"{c['free']} free + {c['redundant']} redundant; {counted.supports} patterns "
              f"over {len(counted.symmetry.groups)} groups in {shown(t)}: "
              f"{verdict(t['median'], SOC_GOALS_S[k], failures, f'SoC k={k}')}")
        if c["interference"] + c["free"] + c["redundant"] != c["k_sets"] or c["k_sets"] <= 0:
            failures.append(f"SoC k={k}: counts do not add up")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["peak_mib"] = peak_mib
    ok = peak_mib <= PEAK_GOAL_MIB
    if not ok:
        failures.append(f"peak memory {peak_mib:.0f} MiB > {PEAK_GOAL_MIB} MiB")
    print(f"peak memory of the process: {peak_mib:.0f} MiB (goal <= {PEAK_GOAL_MIB} MiB, "
          f"{'met' if ok else 'MISSED'})")
    print("model_analysis " + " ".join(f"{k}={v:.3f}" for k, v in figures.items()))
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
