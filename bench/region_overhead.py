#!/usr/bin/env python3
"""Region overhead: what one IC_REGION_BEGIN/IC_REGION_END pair costs on this host, with the
CPU-time source the victims use here (perf_mmap: no system call; clock_gettime: two).

    python bench/region_overhead.py [--pairs N] [--rounds R]

Runs ic-region-bench, which times n marker pairs against n empty loop iterations per round.
Last line: `region_marker_pair_ns: <median>` (goal <= 50 ns).
"""

from __future__ import annotations

import argparse
import json
import subprocess

from intercore.native import tool


def main() -> None:
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
    r = json.loads(proc.stdout.splitlines()[-1])
    print(f"cpu time mode: {r['cputime_mode']}")
    print(f"n:      {r['pairs']} pairs x {r['rounds']} rounds")
    print(f"median: {r['median_ns']:.1f} ns")
    print(f"min:    {r['min_ns']:.1f} ns")
    print(f"max:    {r['max_ns']:.1f} ns")
    print(f"region_marker_pair_ns: {r['median_ns']:.1f}")


if __name__ == "__main__":
    main()
