#!/usr/bin/env python3
"""Region overhead: what one IC_REGION_BEGIN/IC_REGION_END pair costs on this host, with the
CPU-time source the victims use here (perf_mmap: no system call; clock_gettime: two).

    python bench/region_overhead.py [--pairs N] [--rounds R]

Runs ic-region-bench, which times n marker pairs against n empty loop iterations per round.
Prints `region_marker_pair_ns: <median>`, then its goal line (<= 50 ns, bench/_goals.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _goals import Goals
from intercore.native import tool

GOAL_NS = 50


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", help="marker pairs per round (default: about 0.2 s worth)")
    ap.add_argument("--rounds", type=int, default=11, help="rounds (default 11)")
    args = ap.parse_args()
    cmd = [str(tool("ic-region-bench")), "--rounds", str(args.rounds)]
    if args.pairs:
        cmd += ["--pairs", args.pairs]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"ic-region-bench failed ({proc.returncode}): {proc.stderr.strip()}")
    lines = proc.stdout.splitlines()
    r = json.loads(lines[-1]) if lines else {}
    print(f"cpu time mode: {r.get('cputime_mode')}")
    print(f"n:      {r.get('pairs')} pairs x {r.get('rounds')} rounds")
    for key in ("median_ns", "min_ns", "max_ns"):
        print(f"{key[:-3] + ':':8}{r.get(key)} ns")
    print(f"region_marker_pair_ns: {r.get('median_ns')}")
    goals = Goals()
    goals.check("region_marker_pair_ns", r.get("median_ns"), "<=", GOAL_NS)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
