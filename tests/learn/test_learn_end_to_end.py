"""From nothing: `learn dataset --small` -> train -> evaluate -> heatmap, real kernels traced
and measured on this host; then the store holds the generation, and a resume is a no-op."""

from __future__ import annotations

import json
import sqlite3

import pytest

from intercore.host.topology import read_topology
from intercore.learn.dataset import load

from _learnkit import intercore, needs_tracer

pytestmark = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")


@needs_tracer
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_dataset_train_evaluate_heatmap(tmp_path):
    db, ds, model = tmp_path / "x.db", tmp_path / "ds", tmp_path / "model"
    done = intercore("dataset", "--small", "--out", str(ds), "--db", str(db), "--name", "t",
                     "--json", timeout=1800)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["recorded"] == summary["planned"] == summary["programs"] == 6
    data = load(ds)
    assert data.meta["label_regime"] == "any" and len(data.examples()) >= 12
    # --small: 4 pairs an attempt, 8 wanted per region: every program is measured twice, and
    # its labels pool both attempts
    assert summary["closed"] == 6 and summary["attempts"] == 12
    assert all(e.label.n == 8 for e in data.examples())
    assert all(len(p.measure["attempts"]) == 2 and p.measure["closed"]["reason"] == "target"
               for p in data.programs)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM learn_programs").fetchone()[0] == 6
        assert conn.execute("SELECT COUNT(*) FROM learn_attempts").fetchone()[0] == 12
        assert conn.execute("SELECT COUNT(DISTINCT invocation_id) FROM samples").fetchone()[0] == 12
    again = intercore("dataset", "--resume", "t", "--out", str(ds), "--db", str(db), "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout)["attempts_this_run"] == 0

    # The transformer, by name: the default is the held-out winner (linear-l2 today), which
    # has coefficients, not parameters to bound.
    done = intercore("train", "--dataset", str(ds), "--out", str(model), "--budget", "60",
                     "--learner", "transformer", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["params"] < 1_000_000

    done = intercore("evaluate", "--dataset", str(ds), "--folds", "3", "--budget", "30",
                     "--json", timeout=1800)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report["learners"]) == {"transformer", "linear-l2", "forest", "quantile",
                                       "analytic", "constant"}
    for s in report["learners"].values():
        assert s["n"] == len(data.examples()) and 0 <= s["acc@10"] <= 1
        assert set(s["ci"]) >= {"rho_within", "top3", "exceedance"}
    assert report["winner"] in report["learners"]

    exe = ds / "build" / data.programs[0].spec.name
    done = intercore("heatmap", "--model", str(model), "--out", str(tmp_path / "h"),
                     "--warmup", "1", "--json", str(exe), "--", "gen", "--reps", "1")
    assert done.returncode == 0, done.stderr
    heat = json.loads((tmp_path / "h" / "heatmap.json").read_text())
    assert heat["format"] == "intercore.heatmap/1"
    assert {r["id"] for r in heat["regions"]} == {r.id for r in data.programs[0].spec.regions}
    assert any(r["lines"] for r in heat["regions"])
    assert "<pre" in (tmp_path / "h" / "heatmap.html").read_text()
    from intercore.compile.weights import load_heatmap  # the compiler reads it as it is
    assert len(load_heatmap(tmp_path / "h" / "heatmap.json").regions) == len(heat["regions"])



@needs_tracer
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_dataset_draws_as_many_programs_as_asked(tmp_path):
    """--programs without --small: the option was once shadowed by the module of the same name
    (a TypeError before anything was drawn), which --small, setting its own count, hid. At
    most one short attempt, and no wait for the host to share its cache: both traced all the
    same, whatever the host does meanwhile."""
    done = intercore("dataset", "--programs", "2", "--families", "chase", "--pairs", "2",
                     "--min-pairs", "2", "--target-pairs", "2", "--max-attempts", "1",
                     "--limit", "1", "--wait-limit", "0", "--out", str(tmp_path / "ds"),
                     "--db", str(tmp_path / "x.db"), "--json", timeout=900)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["programs"] == summary["planned"] == summary["recorded"] == 2
