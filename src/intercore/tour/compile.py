"""The demo's compile stage: the signal pipeline unfused, then fused as planned from what its
stages cost unfused, run alternately, and what fusion changed (tasks, wall time, involuntary
context switches, same output)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable

from ..base import examples
from ..compile.runs import stage_weights, timed_run


def example() -> Path:
    return examples.example("apps/signal/signal.comp", "the signal pipeline example").parent


def run(out: Path, runs: int, on_phase: Callable[[str], None] | None = None) -> dict:
    # Deferred: the compiler's IR library (xdsl) would cost every command's start-up.
    from ..compile import pipeline
    say = on_phase or (lambda text: None)
    app = example()
    sources = [app / "signal.c"]
    out.mkdir(parents=True, exist_ok=True)
    binaries, tasks = {}, {}
    # unfused is a thread per node (the default schedule would partition it over the CPUs);
    # the fused build is planned from what each of its stages cost there
    for name in ("unfused", "fused"):
        opts = pipeline.Options(no_fuse=True, schedule="threads") if name == "unfused" else \
            pipeline.Options(weights=stage_weights(binaries["unfused"], out / "weights.json"))
        say(f"compile: building the {name} signal pipeline")
        c = pipeline.compile_file(app / "signal.comp", opts)
        binaries[name] = pipeline.build(c, out / f"signal-{name}", sources).binary
        tasks[name] = [f"{p.name}" for p in c.processes]
    samples: dict[str, list] = {"unfused": [], "fused": []}
    for i in range(runs):  # interleaved, so both see the same host
        for name in (("unfused", "fused") if i % 2 == 0 else ("fused", "unfused")):
            say(f"compile: run {i + 1}/{runs}, {name}")
            samples[name].append(timed_run(binaries[name]))
    outputs = {r.stdout for rs in samples.values() for r in rs}
    result = {"example": str(app), "runs": runs, "same_output": len(outputs) == 1,
              "output": sorted(outputs)[0].strip() if outputs else ""}
    for name, rs in samples.items():
        walls = [r.wall_s for r in rs]
        result[name] = {"tasks": tasks[name], "binary": str(binaries[name]),
                        "wall_s": {"median": statistics.median(walls), "min": min(walls),
                                   "max": max(walls)},
                        "nivcsw_median": statistics.median(r.nivcsw for r in rs),
                        "nvcsw_median": statistics.median(r.nvcsw for r in rs)}
    u, f = result["unfused"], result["fused"]
    result["speedup"] = u["wall_s"]["median"] / f["wall_s"]["median"]
    return result
