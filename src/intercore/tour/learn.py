"""The demo's learning stage: a model trained briefly on the reference dataset, and the
heatmap of paper 000's K-sweep matmul drawn with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..base.errors import HostUnsupported, InputError
from ..learn import dataset, evaluate, heatmap, reference, saved, tracer
from ..learn.extract import extract, victim_argv
from ..learn.programs import build, k_sweep


def run(out: Path, budget_cpu_s: float, on_phase: Callable[[str], None] | None = None
        ) -> dict[str, Any]:
    """The stage's summary, or {"skipped": reason} where this install or host cannot run it
    (no reference dataset, no learning extra, no tracer)."""
    try:
        return _run(out, budget_cpu_s, on_phase or (lambda text: None))
    except HostUnsupported as exc:
        return {"skipped": str(exc)}


def _run(out: Path, budget_cpu_s: float, say: Callable[[str], None]) -> dict[str, Any]:
    try:
        data = dataset.load(reference.path())
    except InputError as exc:
        return {"skipped": str(exc)}
    reason = tracer.available()
    if reason:
        return {"skipped": reason}
    say("learn: training on the reference dataset")
    split = evaluate.split_programs(data.examples(), 0)
    fitted = evaluate.fit(evaluate.DEFAULT_LEARNER, split, data.hierarchy, alpha=0.05, seed=0,
                          budget_cpu_s=budget_cpu_s)
    model = saved.from_fitted(fitted, data.hierarchy, {"dataset_hash": data.hash, "seed": 0,
                                       "labelled_for": data.labelled_for()})
    model.save(out / "model")
    spec = k_sweep()[-1]
    say(f"learn: tracing {spec.name}")
    exe = build(spec, out / "build")
    argv = victim_argv(exe)
    regions, t = extract(argv, data.hierarchy, skip=1, include_total=False)
    med, safe, received = model.predict(regions)
    doc = heatmap.build(argv, regions, med, safe, received, model.describe())
    heatmap.write_json(doc, out / "heatmap.json")
    heatmap.write_html(doc, out / "heatmap.html")
    return {"model": str(out / "model"), "dataset": data.hash,
            "train_cpu_s": fitted.info["train_cpu_s"],
            "learner": evaluate.DEFAULT_LEARNER, "params": fitted.info.get("params"),
            "program": spec.name, "trace_s": t.seconds,
            "json": str(out / "heatmap.json"), "html": str(out / "heatmap.html"),
            "regions": [{k: r[k] for k in ("id", "region", "delta", "delta_safe",
                                           "delta_shown")} for r in doc["regions"]],
            "first_line": doc["files"][0] if doc["files"] else None}
