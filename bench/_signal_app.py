"""The signal pipeline the compile benches run (bench/fusion.py, bench/schedule.py): its
builds at a chosen length, a paired ratio between two of their conditions, and the report."""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from pathlib import Path

from intercore.compile import pipeline
from intercore.tour import compile as tour
import numpy as np

from intercore.measure.harness.stats import bootstrap_delta_ci, delta


def build(workdir: Path, blocks: int, builds: dict[str, pipeline.Options]) -> dict[str, Path]:
    """signal.comp with BLOCKS = `blocks`, built once per named set of options."""
    app = tour.example()
    text = (app / "signal.comp").read_text()
    text, n = re.subn(r"const int BLOCKS = \d+;", f"const int BLOCKS = {blocks};", text)
    if n != 1:
        sys.exit("bench: signal.comp no longer declares `const int BLOCKS = N;`")
    comp = workdir / "signal.comp"
    comp.write_text(text)
    out = {}
    for name, opts in builds.items():
        c = pipeline.compile_file(comp, opts)
        out[name] = pipeline.build(c, workdir / name, [app / "signal.c"]).binary
        print(f"{name}: {len(c.processes)} task(s), schedule {c.schedule} ({c.schedule_why}) "
              f"on {len(c.variants[0].tasks)} thread(s): "
              + ", ".join(t.name for t in c.variants[0].tasks), file=sys.stderr)
    return out


def ratio(base: list[float], other: list[float]) -> dict:
    """median(other) / median(base) with n and a paired bootstrap 95 % CI; value None (with
    the reason) when it cannot be formed: too few pairs, a zero, a non-finite bound."""
    try:
        d = delta(base, other)
        lo, hi = bootstrap_delta_ci(base, other)
    except ValueError as exc:
        return {"n": len(base), "value": None, "why": str(exc)}
    ok = all(math.isfinite(x) for x in (d, lo, hi))
    return {"n": len(base), "value": d if ok else None, "ci": [lo, hi]}


def condition(wall: list[float], nivcsw: list[int], nvcsw: list[int]) -> dict:
    """One condition's n, wall median [min, max] and its involuntary (preempted) and voluntary
    (blocked) context switches, median [min, max], all threads of each run (issue 23)."""
    out = {"n": len(wall), "wall_median_s": float(np.median(wall)), "wall_min_s": min(wall),
           "wall_max_s": max(wall)}
    for name, values in (("nivcsw", nivcsw), ("nvcsw", nvcsw)):
        out |= {f"{name}_median": float(np.median(values)), f"{name}_min": min(values),
                f"{name}_max": max(values)}
    return out


def finish(doc: dict, goals, json_out: bool, title: str) -> int:
    """Print `doc` (its conditions and figures) as one JSON document or as text, then one
    line per goal (on stderr with --json, so stdout stays JSON); the goals' exit status."""
    if json_out:
        print(json.dumps({**doc, "goals": [g.__dict__ for g in goals.goals]}, indent=2))
        with contextlib.redirect_stdout(sys.stderr):
            return goals.finish()
    print(title)
    width = max(map(len, doc["conditions"]))
    for name, m in doc["conditions"].items():
        print(f"  {name:<{width}} n={m['n']} wall median {m['wall_median_s'] * 1e3:8.1f} ms "
              f"[{m['wall_min_s'] * 1e3:.1f}, {m['wall_max_s'] * 1e3:.1f}]  switches median "
              f"involuntary {m['nivcsw_median']:.0f} [{m['nivcsw_min']}, {m['nivcsw_max']}] "
              f"voluntary {m['nvcsw_median']:.0f} [{m['nvcsw_min']}, {m['nvcsw_max']}]")
    for name, r in doc["figures"].items():
        if r["value"] is None:
            continue
        ci = f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" if "ci" in r else \
            f" (p99 {r['p99_default_s'] * 1e3:.1f} ms -> {r['p99_managed_s'] * 1e3:.1f} ms)"
        print(f"{name}: {r['value']:.3f}{ci} n={r['n']}")
    return goals.finish()
