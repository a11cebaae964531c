"""Weights measured from a thread-per-node build (runs.stage_weights): what the fusion bench
and the demo plan the fused build from, so that the planner balances what the stages cost
rather than how many there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercore.base.errors import NativeError
from intercore.compile import pipeline
from intercore.compile.runs import stage_weights

SIGNAL = Path(__file__).resolve().parents[2] / "examples" / "apps" / "signal"
STAGES = {"source", "window", "fir", "fft", "magnitude", "sink"}


def test_every_stage_is_weighed_by_its_cpu_and_the_file_plans_a_build(tmp_path) -> None:
    c = pipeline.compile_file(SIGNAL / "signal.comp",
                              pipeline.Options(no_fuse=True, schedule="threads"))
    binary = pipeline.build(c, tmp_path / "unfused", [SIGNAL / "signal.c"]).binary
    path = stage_weights(binary, tmp_path / "w.json", runs=2)
    doc = json.loads(path.read_text())
    assert doc["format"] == "intercore.heatmap/1"
    weights = {r["region"]: r["weight"] for r in doc["regions"]}
    assert set(weights) == STAGES
    assert all(w > 0 for w in weights.values())
    assert {r["delta"] for r in doc["regions"]} == {1.0}   # a cost, not a slowdown
    planned = pipeline.compile_file(SIGNAL / "signal.comp", pipeline.Options(weights=path))
    assert planned.weight_source == "weights"
    assert {w.source for w in planned.graph.weights.values()} == \
        {f"weights: {name}" for name in STAGES}


def test_a_program_without_stage_threads_is_refused(tmp_path) -> None:
    with pytest.raises(NativeError, match="no stage thread"):
        stage_weights(Path("/bin/true"), tmp_path / "w.json", runs=1)
    assert not (tmp_path / "w.json").exists()
    with pytest.raises(NativeError, match="exited with 1"):
        stage_weights(Path("/bin/false"), tmp_path / "w.json", runs=1)
