#!/usr/bin/env python3
"""Static schedules (issue 23 item 1): the six-stage signal pipeline unfused, six tasks on
fewer CPUs, run as a thread per task (`--schedule threads`) and as one thread per CPU firing
the cost model's partition in a fixed order (`--schedule static`).

    python bench/schedule.py [--runs 30] [--blocks 3000] [--cpus 2] [--json]

Both builds run on the same --cpus CPUs (the first this process may use), interleaved, in an
order drawn at random each round. Printed, with n, median and a 95 % bootstrap CI (paired by
round):

    static_speedup        median wall threads / static                     goal >= 1.5
    static_nivcsw_ratio   involuntary switches threads / static             goal >= 10
    static_nvcsw_ratio    voluntary switches threads / static (no goal)

Each build also prints its n, wall and involuntary and voluntary switches, median [min, max].
The goals are issue 23's for the fused static build against the thread-per-node one. It
fails closed (bench/_goals.py): a figure that could not be formed is MISSING (exit 1); with
fewer CPUs than --cpus, or --cpus not below the six tasks, every goal is REFUSED (exit 3).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

from intercore.compile import pipeline
from intercore.compile.runs import timed_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _signal_app as app  # noqa: E402  (bench/ is a directory of scripts, not a package)
from _goals import Goals  # noqa: E402

TASKS = 6  # the signal pipeline's nodes, one task each unfused
GOALS = (("static_speedup", 1.5), ("static_nivcsw_ratio", 10.0))
BUILDS = ("threads", "static")


def measure(args, cpus: set[int]) -> dict[str, list]:
    rng = random.Random(23)
    with tempfile.TemporaryDirectory(prefix="bench-schedule-") as tmp:
        binaries = app.build(Path(tmp), args.blocks, {
            b: pipeline.Options(cpus=len(cpus), no_fuse=True, schedule=b) for b in BUILDS})
        runs = {b: [] for b in BUILDS}
        for i in range(args.runs):
            order = list(BUILDS)
            rng.shuffle(order)
            for b in order:
                runs[b].append(timed_run(binaries[b], cpus=cpus))
            print(f"round {i + 1}/{args.runs}", file=sys.stderr)
    outputs = {r.stdout for rs in runs.values() for r in rs}
    if len(outputs) != 1:
        sys.exit("bench: the two schedules printed different results")
    return runs


def figures(runs: dict[str, list]) -> dict[str, dict]:
    t, s = runs["threads"], runs["static"]
    # a run with no switch counts 1: the ratio stays finite and errs low
    return {"static_speedup": app.ratio([r.wall_s for r in s], [r.wall_s for r in t]),
            "static_nivcsw_ratio": app.ratio([max(r.nivcsw, 1) for r in s],
                                                 [r.nivcsw for r in t]),
            "static_nvcsw_ratio": app.ratio([max(r.nvcsw, 1) for r in s],
                                                [r.nvcsw for r in t])}


def check(rows: dict[str, dict], refused: str | None = None) -> Goals:
    goals = Goals()
    for name, target in GOALS:
        if refused:
            goals.refuse(name, ">=", target, refused)
        else:
            r = rows.get(name, {})
            goals.check(name, r.get("value"), ">=", target, r.get("why", "not measured"))
    return goals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="rounds (default 30)")
    ap.add_argument("--blocks", type=int, default=3000, help="blocks per run (default 3000)")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs both builds run on (default 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2 (a CI needs two pairs)")
    if args.blocks < 1:
        ap.error("--blocks must be at least 1")
    if args.cpus < 1:
        ap.error("--cpus must be at least 1")
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < args.cpus or args.cpus >= TASKS:
        why = (f"--cpus {args.cpus}: this process may use {len(allowed)} CPU(s)"
               if len(allowed) < args.cpus else
               f"--cpus {args.cpus}: a static schedule needs fewer CPUs than the {TASKS} tasks")
        print(f"bench: refused: {why}", file=sys.stderr)
        return check({}, why).finish()
    cpus = set(allowed[:args.cpus])
    runs = measure(args, cpus)
    rows = figures(runs)
    medians = {b: app.condition([r.wall_s for r in rs], [r.nivcsw for r in rs],
                                    [r.nvcsw for r in rs]) for b, rs in runs.items()}
    doc = {"runs": args.runs, "blocks": args.blocks, "cpus": sorted(cpus),
           "conditions": medians, "figures": rows}
    return app.finish(doc, check(rows), args.json,
                          f"signal pipeline unfused ({TASKS} tasks), {args.blocks} blocks, "
                          f"{args.runs} interleaved rounds on CPUs {sorted(cpus)}")

if __name__ == "__main__":
    sys.exit(main())
