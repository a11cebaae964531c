#!/usr/bin/env python3
"""Back ends compared with one C compiler (issue 23 item 7): examples/apps/signal built by
the C and the MLIR back end, with each compiler named by --cc compiling the user's C and the
runtime for both, run interleaved in a random order each round.

    python bench/backends.py [--runs 60] [--cc cc --cc clang-19] [--json]

Printed per build: median wall [min, max]; per compiler: wall C / MLIR, the median of the
paired ratios with a 95 % bootstrap CI. With one compiler for the user's C, what is left
between the back ends is theirs: the generated code's compiler and the OpenMP runtime the
build links (gcc's libgomp for the C back end built by gcc, libomp for the MLIR one).

Fails closed (exit 1): a build or run that fails, outputs that differ between builds, or a
ratio that could not be formed. Refused (exit 3) on a host with one CPU, where the tasks
would only take turns. Wrap it in `flock /tmp/intercore-heavy.lock` on a shared host.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

from intercore.compile import pipeline
from intercore.tour import compile as tour
from intercore.compile.runs import timed_run
from intercore.measure.harness.stats import bootstrap_delta_ci, delta

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import Goals  # noqa: E402  (bench/ is a directory of scripts, not a package)

BACKENDS = ("c", "mlir")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--cc", action="append", help="compiler for the user's C (repeatable; "
                                                  "default: cc and clang-19)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2 (a ratio's CI needs pairs)")
    goals = Goals()
    if len(os.sched_getaffinity(0)) < 2:
        goals.refuse("c_over_mlir", ">", 0, "one CPU: the tasks would only take turns")
        return goals.finish()
    compilers = args.cc or ["cc", "clang-19"]
    app = tour.example()
    with tempfile.TemporaryDirectory(prefix="ic-backends-") as tmp:
        compiled = pipeline.compile_file(app / "signal.comp")
        builds, said = {}, {}
        for cc in compilers:
            for backend in BACKENDS:
                name = f"{cc}/{backend}"
                out = Path(tmp) / f"{len(builds)}-{backend}"
                built = pipeline.build(compiled, out, [app / "signal.c"], backend, cc)
                builds[name], said[name] = built.binary, built.said
        walls: dict[str, list[float]] = {n: [] for n in builds}
        outputs = set()
        env = {"INTERCORE_RT_QUIET": "1"}
        for _ in range(args.runs):
            for name in random.sample(list(builds), len(builds)):
                run = timed_run(builds[name], env=env)
                walls[name].append(run.wall_s)
                outputs.add(run.stdout)
    doc = figures(walls, {n: said[n] for n in builds}, compilers, len(outputs) == 1)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        for name, b in doc["builds"].items():
            w = b["wall_ms"]
            print(f"{name}: median {w['median']:.1f} ms [{w['min']:.1f}, {w['max']:.1f}], "
                  f"n={args.runs}; {b['built']}")
        for cc, r in doc["ratios"].items():
            print(f"{cc}: wall C / MLIR {r['c_over_mlir']:.3f} [95% CI {r['ci95'][0]:.3f}, "
                  f"{r['ci95'][1]:.3f}], n={args.runs} paired rounds")
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        return check(doc).finish()


def figures(walls: dict[str, list[float]], said: dict[str, str], compilers: list[str],
            same_output: bool) -> dict:
    """Per build its wall times; per compiler median(C) / median(MLIR), paired by round."""
    doc = {"runs": min(map(len, walls.values())), "same_output": same_output, "builds": {},
           "ratios": {}}
    for name, w in walls.items():
        doc["builds"][name] = {"built": said[name], "wall_ms": {
            "median": statistics.median(w) * 1e3, "min": min(w) * 1e3, "max": max(w) * 1e3}}
    for cc in compilers:
        c, m = walls[f"{cc}/c"], walls[f"{cc}/mlir"]
        lo, hi = bootstrap_delta_ci(m, c)
        doc["ratios"][cc] = {"c_over_mlir": delta(m, c), "ci95": [lo, hi]}
    return doc


def check(doc: dict) -> Goals:
    goals = Goals()
    goals.check("same_output", 1.0 if doc["same_output"] else 0.0, "==", 1)
    for cc, r in doc["ratios"].items():  # a ratio or a CI bound that is NaN is MISSING
        goals.check_all(f"c_over_mlir[{cc}] formed", [r["c_over_mlir"], *r["ci95"]], ">", 0,
                        worst=min)
    return goals


if __name__ == "__main__":
    sys.exit(main())
