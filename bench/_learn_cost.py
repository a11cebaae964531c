"""What `learn train` and `learn predict` cost (issue 22, item 7), for bench/learn.py.

Training: the CPU time (resource.getrusage of this process, every thread, user + system) of
`evaluate.fit`, the fit and the calibration's inner-fold trainings that `learn train` runs,
repeated `train_reps` times on the whole dataset.

Prediction, split the way a user meets it:
  start-up     a fresh interpreter importing the model code, loading the saved model and
               making its first prediction, each part timed (the transformer's XLA compile
               lands in the last, once per process): in `startup_reps` child processes;
  per region   SavedModel.predict on one program's regions, the call `learn predict` times,
               once warm: each of `programs` programs `reps` times in a child, the time of a
               call over its regions.
The trace that precedes a prediction is the tracer's cost (its own progress and estimate),
not the model's, and is not counted here.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from intercore.measure.harness.stats import min_n_for, percentile


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def spread(values: list[float]) -> dict[str, Any]:
    """n, median, p90 (from 10 values on, as every tail figure), min and max: a figure
    without its spread is not one."""
    if not values:
        return {"n": 0, "median": None, "p90": None, "min": None, "max": None}
    return {"n": len(values), "median": percentile(values, 50),
            "p90": percentile(values, 90) if len(values) >= min_n_for(90) else None,
            "min": min(values), "max": max(values)}


def measure(ds, learner: str, *, train_reps: int, startup_reps: int, programs: int,
            reps: int, budget_cpu_s: float, seed: int = 0) -> dict[str, Any]:
    from intercore.learn import evaluate, saved

    split = evaluate.split_programs(ds.examples(), seed)
    train_cpu, fitted = [], None
    for _ in range(train_reps):
        c0 = _cpu_s()
        fitted = evaluate.fit(learner, split, ds.hierarchy, alpha=0.05, seed=seed,
                              budget_cpu_s=budget_cpu_s)
        train_cpu.append(_cpu_s() - c0)
    out: dict[str, Any] = {"learner": learner, "train_cpu_s": spread(train_cpu)}
    if fitted is None:
        return out
    with tempfile.TemporaryDirectory(prefix="learn-cost-") as tmp:
        model = Path(tmp) / "model"
        saved.from_fitted(fitted, ds.hierarchy, {}).save(model)
        regions = Path(tmp) / "regions.json"
        regions.write_text(json.dumps([[r.to_dict() for r in p.regions]
                                       for p in ds.programs[:programs]]))
        runs = [_child(model, regions, reps if i == 0 else 0) for i in range(startup_reps)]
    out["startup_s"] = spread([r["startup_s"] for r in runs])
    for key in ("import_s", "load_s", "first_predict_s"):
        out[key] = spread([r[key] for r in runs])
    out["predict_ms_per_region"] = spread(runs[0]["ms_per_region"] if runs else [])
    return out


def _child(model: Path, regions: Path, reps: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, str(model), str(regions), str(reps)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def child(model: Path, regions: Path, reps: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    from intercore.learn import saved
    from intercore.learn.features import RegionFeatures

    t_import = time.perf_counter() - t0
    m = saved.load(model)
    t_load = time.perf_counter() - t0 - t_import
    programs = [[RegionFeatures.from_dict(r) for r in p] for p in json.loads(regions.read_text())]
    t1 = time.perf_counter()
    m.predict(programs[0])
    first = time.perf_counter() - t1
    # Every batch shape once more before timing: what is left is the per-call cost.
    for p in programs:
        m.predict(p)
    per_region = []
    for _ in range(reps):
        for p in programs:
            t = time.perf_counter()
            med, safe, _ = m.predict(p)
            per_region.append((time.perf_counter() - t) * 1000 / len(p))
            assert np.all(np.isfinite(med)) and np.all(safe >= med)
    return {"import_s": t_import, "load_s": t_load, "first_predict_s": first,
            "startup_s": t_import + t_load + first,
            "ms_per_region": per_region}


if __name__ == "__main__":
    print(json.dumps(child(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))))
