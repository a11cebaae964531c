"""The signal pipeline the compile benches run (bench/fusion.py, bench/schedule.py): its
builds at a chosen length, and a paired ratio between two of their conditions."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from intercore.compile import pipeline, tour
from intercore.measure.stats import bootstrap_delta_ci, delta


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
