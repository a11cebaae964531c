"""The demo's learning stage runs from the reference dataset shipped in the package: no
measuring, a model trained for a few CPU seconds, and a heatmap of paper 000's K-sweep matmul."""

from __future__ import annotations

import pytest

import json
from pathlib import Path

from intercore.learn import dataset, reference

from _learnkit import in_child, needs_tracer
import _jaxwork


@pytest.mark.slow
def test_the_reference_dataset_is_what_the_issue_asks():
    ds = dataset.load(reference.path())
    assert len(ds.programs) >= 300 and len(ds.examples()) >= 1000
    assert ds.meta["label_regime"] == "shared"
    assert all(e.label.regime == "shared" and e.label.n >= ds.meta["generator"]["min_pairs"]
               for e in ds.examples())
    size = sum(p.stat().st_size for p in reference.path().iterdir())
    assert size <= 20 * 2**20


@pytest.mark.slow
@needs_tracer
def test_the_demo_stage_draws_a_heatmap_from_the_shipped_dataset(tmp_path):
    doc = in_child(_jaxwork.tour, str(tmp_path), 5.0)
    assert "skipped" not in doc, doc.get("skipped")
    assert doc["dataset"] == dataset.load(reference.path()).hash
    heat = json.loads(Path(doc["json"]).read_text())
    assert [r["id"] for r in heat["regions"]] == [r["id"] for r in doc["regions"]]
    assert len(doc["regions"]) >= 2
    assert all(r["delta_safe"] >= r["delta"] > 0 for r in doc["regions"])
    assert Path(doc["html"]).read_text().count("<") > 10
    # It shows the kernel's own lines, never the instrumentation (issue 22: it opened on the
    # cycle-counter read in ic_arch.h)
    kernel = tmp_path / "build" / f"{doc['program']}.c"
    assert [f["file"] for f in heat["files"]] == [str(kernel)]
    assert doc["first_line"]["file"] == str(kernel)
    assert "ic_arch.h" not in Path(doc["html"]).read_text()
