#!/usr/bin/env python3
"""Fusion benchmark (issue 11): the six-stage signal pipeline of examples/apps, fused (the
cost model's choice for this host, planned from the CPU each stage took in the unfused
build: intercore.compile.runs.stage_weights) and unfused (one task per node), alone and under the
worst aggressor, then the fused pipeline under that aggressor with and without
`intercore compile manage`.

    python bench/fusion.py [--runs 20] [--blocks 3000] [--aggressor PRESET] [--json]

Each condition also prints its n, wall and involuntary and voluntary switches, median [min,
max]. All conditions are measured interleaved in time, in an order drawn at random each round.
Printed, with n, median and a 95% bootstrap CI (paired by round):

    fusion_speedup_alone        median wall unfused / fused, alone          goal >= 1.5
    fusion_speedup_aggressor    the same under the worst aggressor          goal >= 1.5
    fusion_nivcsw_ratio         involuntary switches unfused / fused        goal >= 10
    fusion_nvcsw_ratio          voluntary switches unfused / fused, alone (no goal)
    fusion_vs_sequential_alone  median wall sequential / fused, alone      goal >= 1.0
    fusion_vs_sequential_aggressor  the same under the worst aggressor      goal >= 1.0
    delta_unfused, delta_fused  slowdown under the aggressor / alone
    manager_p99_reduction       1 - p99(managed) / p99(default placement)   goal >= 0.20

The last lines are one per goal (bench/_goals.py), failing closed: a figure that could not
be measured is MISSING and fails (exit 1), never 0; a missed goal fails (exit 1); a figure
the host cannot support is REFUSED with the reason (exit 3 when nothing failed): every
figure on a host without two CPUs, the p99 goal when --runs is under 100 (the p99 of fewer
runs would be their maximum). The worst aggressor is the preset that slows the unfused
pipeline most in a short probe (2 pairs each), unless --aggressor names one. The sequential
program is the same calls in program order in one thread (`compile build --max-tasks 1`): the
fused build must not be slower than it, and with two CPUs free it should be faster.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

from intercore.compile import pipeline
from intercore.compile.runs import stage_weights, timed_run
from intercore.host.topology import default_placement, read_topology
from intercore.measure.harness import paired as harness
from intercore.measure.aggressors.presets import PRESETS, Footprints, parse_set, place
from intercore.base.procs import ProcessGroup
from intercore.base.native import tool
from intercore.compile.manager import why_it_cannot_help

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _signal_app as app  # noqa: E402  (bench/ is a directory of scripts, not a package)
from _goals import Goals  # noqa: E402

P99_MIN_RUNS = 100  # fewer runs have no p99 beyond their maximum
GOALS = (("fusion_speedup_alone", 1.5), ("fusion_speedup_aggressor", 1.5),
         ("fusion_nivcsw_ratio", 10.0), ("fusion_vs_sequential_alone", 1.0),
         ("fusion_vs_sequential_aggressor", 1.0), ("manager_p99_reduction", 0.20))


def build(workdir: Path, blocks: int) -> dict[str, Path]:
    """The unfused build (a thread per node: a static schedule would partition it), and the
    fused one planned from the CPU its stages took there, as paper 000 plans from measured
    costs: with no weights the planner can only balance node counts."""
    unfused = app.build(workdir, blocks,
                        {"unfused": pipeline.Options(no_fuse=True, schedule="threads")})
    weights = stage_weights(unfused["unfused"], workdir / "stage-weights.json")
    return unfused | app.build(workdir, blocks, {"fused": pipeline.Options(weights=weights),
                                                 "sequential": pipeline.Options(max_tasks=1)})


class Aggressor:
    """One resident aggressor, parked (stopped by the kernel: the pipeline is alone) or
    running, switched as the harness does. Not paused: a paused aggressor spins on its CPU
    (the harness's isolated half wants that, its victim pinned to another CPU), and a
    pipeline whose threads use every CPU then ran 'alone' on one CPU's worth, preempted by
    the spinner at every time slice."""

    def __init__(self, spec: str, topo, cpu: int, group: ProcessGroup, tag: str):
        fp = Footprints.for_host(topo, cpu)
        aset = place(parse_set(spec, fp, topo), [cpu])
        self.resident = harness._ResidentSet(aset, group, 0, tag)
        self.running(False)

    def running(self, on: bool) -> None:
        if on:
            self.resident.park(False)
            self.resident.running(True)
        else:
            self.resident.running(False)
            self.resident.park(True)

    def stop(self) -> None:
        self.resident.stop()


def run_once(binary: Path, managed: bool, log: Path | None = None) -> tuple[float, int, int]:
    """Wall seconds, involuntary and voluntary switches of one run."""
    if not managed:
        r = timed_run(binary)
    else:
        r = timed_run([str(tool("ic-manage")), "--interval", "50", "--log",
                       str(log or os.devnull), "--", str(binary)])
    return r.wall_s, r.nivcsw, r.nvcsw


def probe_worst(binaries, topo, cpu, group) -> str:
    best, worst = -math.inf, None
    for name in PRESETS:
        try:
            aggr = Aggressor(name, topo, cpu, group, f"probe-{len(name)}")
        except Exception as exc:  # a preset this host cannot size (e.g. no set group)
            print(f"probe: {name} skipped: {exc}", file=sys.stderr)
            continue
        alone, loaded = [], []
        for _ in range(2):
            aggr.running(False)
            alone.append(run_once(binaries["unfused"], False)[0])
            aggr.running(True)
            loaded.append(run_once(binaries["unfused"], False)[0])
        aggr.stop()
        d = float(np.median(loaded) / np.median(alone))
        print(f"probe: {name}: delta {d:.2f}", file=sys.stderr)
        if d > best:
            best, worst = d, name
    if worst is None:
        sys.exit("bench: no aggressor preset could run here")
    return worst


def p99(values) -> float:
    v = sorted(values)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]


def figures(wall: dict, nivcsw: dict, nvcsw: dict, n: int) -> dict[str, dict]:
    """The ratios with n and a paired bootstrap CI; a figure that cannot be formed (too few
    pairs, a non-finite value) has value None."""
    rows: dict[str, dict] = {}

    def ratio(name, iso, intf):
        rows[name] = app.ratio(iso, intf)

    ratio("fusion_speedup_alone", wall[("fused", False, False)],
          wall[("unfused", False, False)])
    ratio("fusion_speedup_aggressor", wall[("fused", True, False)],
          wall[("unfused", True, False)])
    # a run with no involuntary switch counts 1: the ratio stays finite and errs low
    fused_sw = [max(v, 1) for v in nivcsw[("fused", False, False)]]
    ratio("fusion_nivcsw_ratio", fused_sw, nivcsw[("unfused", False, False)])
    ratio("fusion_nvcsw_ratio", [max(v, 1) for v in nvcsw[("fused", False, False)]],
          nvcsw[("unfused", False, False)])
    ratio("fusion_vs_sequential_alone", wall[("fused", False, False)],
          wall[("sequential", False, False)])
    ratio("fusion_vs_sequential_aggressor", wall[("fused", True, False)],
          wall[("sequential", True, False)])
    ratio("delta_unfused", wall[("unfused", False, False)], wall[("unfused", True, False)])
    ratio("delta_fused", wall[("fused", False, False)], wall[("fused", True, False)])
    default, managed = wall[("fused", True, False)], wall[("fused", True, True)]
    row = {"n": n, "value": None}
    if default and managed and len(default) >= P99_MIN_RUNS:
        row = {"n": n, "value": 1 - p99(managed) / p99(default), "p99_default_s": p99(default),
               "p99_managed_s": p99(managed)}
    rows["manager_p99_reduction"] = row
    return rows


def check(rows: dict[str, dict], n: int, refused: str | None = None,
          manager_off: str | None = None) -> Goals:
    """`manager_off`: why the run-time manager turns itself off on this host (its own check,
    intercore.cli.manage.why_it_cannot_help); its figure is then refused, not measured."""
    goals = Goals()
    for name, target in GOALS:
        if refused:
            goals.refuse(name, ">=", target, refused)
        elif name == "manager_p99_reduction" and manager_off:
            goals.refuse(name, ">=", target, f"the manager turns itself off here: {manager_off}")
        elif name == "manager_p99_reduction" and n < P99_MIN_RUNS:
            goals.refuse(name, ">=", target, f"a p99 needs >= {P99_MIN_RUNS} runs per "
                         f"condition; --runs {n} would report their maximum")
        else:
            r = rows.get(name, {})
            goals.check(name, r.get("value"), ">=", target, r.get("why", "not measured"))
    return goals


def measure(args, topo, cpu: int, conditions: list) -> tuple[str, dict, dict, dict]:
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as tmp, ProcessGroup() as group:
        binaries = build(Path(tmp), args.blocks)
        worst = args.aggressor or probe_worst(binaries, topo, cpu, group)
        aggr = Aggressor(worst, topo, cpu, group, "main")
        samples = {c: [] for c in conditions}
        try:
            for i in range(args.runs):
                order = list(conditions)
                rng.shuffle(order)
                for build_name, loaded, managed in order:
                    aggr.running(loaded)
                    samples[(build_name, loaded, managed)].append(
                        run_once(binaries[build_name], managed))
                print(f"round {i + 1}/{args.runs}", file=sys.stderr)
        finally:
            aggr.running(False)
            aggr.stop()
    wall = {c: [s[0] for s in v] for c, v in samples.items()}
    nivcsw = {c: [s[1] for s in v] for c, v in samples.items()}
    nvcsw = {c: [s[2] for s in v] for c, v in samples.items()}
    return worst, wall, nivcsw, nvcsw


CONDITIONS = [(b, a, False) for b in ("unfused", "fused", "sequential") for a in (False, True)] \
    + [("fused", True, True)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="rounds (default 20)")
    ap.add_argument("--blocks", type=int, default=3000, help="blocks per run (default 3000)")
    ap.add_argument("--aggressor", help="a preset; default: the worst one for this pipeline")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2 (a CI needs two pairs)")
    topo = read_topology()
    if len(topo.online_cpus) < 2:
        print("bench: refused: the pipeline and an aggressor need two CPUs", file=sys.stderr)
        return check({}, args.runs, "the pipeline and an aggressor need two CPUs").finish()
    cpu = default_placement(topo).aggressors[0]
    # The manager is run as a user would run it here: without a heatmap, so it needs a PMU.
    manager_off = why_it_cannot_help(sorted(os.sched_getaffinity(0)), predicted=False)
    conditions = [c for c in CONDITIONS if not (c[2] and manager_off)]
    worst, wall, nivcsw, nvcsw = measure(args, topo, cpu, conditions)
    wall = {c: wall.get(c, []) for c in CONDITIONS}
    nivcsw = {c: nivcsw.get(c, []) for c in CONDITIONS}
    nvcsw = {c: nvcsw.get(c, []) for c in CONDITIONS}
    n = args.runs
    rows = figures(wall, nivcsw, nvcsw, n)
    medians = {f"{b}{'+' + worst if a else ''}{' managed' if m else ''}":
               app.condition(wall[(b, a, m)], nivcsw[(b, a, m)], nvcsw[(b, a, m)])
               for b, a, m in conditions}
    doc = {"aggressor": worst, "runs": n, "blocks": args.blocks,
           "cpus": len(topo.online_cpus), "conditions": medians, "figures": rows}
    return app.finish(doc, check(rows, n, manager_off=manager_off), args.json,
                          f"signal pipeline, {args.blocks} blocks, {n} interleaved rounds, "
                          f"worst aggressor {worst} on CPU {cpu}, {len(topo.online_cpus)} CPUs")

if __name__ == "__main__":
    sys.exit(main())
