#!/usr/bin/env python3
"""Compile time (issue 23): `intercore compile build PROGRAM --emit c` as a user runs it (a fresh
process: start-up, parsing, planning, emitting), for every example and for a generated
200-node graph (intercore.compile.synthetic).

    python bench/compile_time.py [--runs 5] [--json]

Printed per program: n, the median wall time and [min, max]. One goal per program, each
median <= 5 s. It fails closed (bench/_goals.py): a compile that fails or was not run is
MISSING (exit 1), never 0. Run it under `flock /tmp/intercore-heavy.lock` on a shared host.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from intercore.compile import synthetic
from intercore.base.examples import example

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import Goals  # noqa: E402  (bench/ is a directory of scripts, not a package)

GOAL_S = 5.0
NODES = 200


def once(program: Path) -> float | None:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(program),
                           "--emit", "c"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(f"bench: {program} failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="compiles per program (default 5)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        programs = {p.parent.name: p for p in sorted(example("apps", "the example apps")
                                                     .glob("*/*.comp"))}
        programs[f"generated-{NODES}"] = synthetic.write(Path(tmp), NODES)[0]
        rows: dict[str, list[float | None]] = {name: [] for name in programs}
        for _ in range(args.runs):   # interleaved: the host's load drifts over the runs
            for name, program in programs.items():
                rows[name].append(once(program))
    goals = Goals()
    doc = {}
    for name, walls in rows.items():
        ok = [w for w in walls if w is not None]
        median = statistics.median(ok) if len(ok) == len(walls) else None
        doc[name] = {"n": len(ok), "median_s": median, "min_s": min(ok, default=None),
                     "max_s": max(ok, default=None)}
        if not args.json and median is not None:
            print(f"  {name:<14} n={len(ok)} median {median:.2f} s [{min(ok):.2f}, "
                  f"{max(ok):.2f}]")
        goals.check(f"compile_s_{name}", median, "<=", GOAL_S, "a compile failed")
    if args.json:
        print(json.dumps(doc, indent=2))
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
