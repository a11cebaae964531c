"""The demo's assess stage on the real kernel: the example system as shipped
(examples/systems/control-demo.yaml) with --quick, its programs (control_task, matrix_task,
image_filter) built from examples/user-program as a user builds them, into a dossier under
the demo's directory."""

from __future__ import annotations

import pytest

import json

from intercore.base.artefact import file_sha256
from intercore.tour import assess as assess_tour


@pytest.mark.slow
def test_the_demo_assesses_the_example_system_into_a_dossier(example, tmp_path, test_root,
                                                              real_cgroups):
    lines: list[str] = []
    doc = assess_tour.run_quick(tmp_path, lines.append, root=test_root)
    out = tmp_path / assess_tour.DOSSIER
    assert json.loads((out / "dossier.json").read_text()) == doc
    assert (out / "dossier.html").is_file() and (out / "store.db").is_file()
    assert doc["system"]["name"] == "control-demo" and doc["system"]["quick"] is True
    assert doc["system"]["sizes"] == {"matrix_rounds": 1, "matrix_block": 500_000_000,
                                      "jobs": 20, "validation_runs": 3, "region_runs": 3,
                                      "search_pairs": 2}
    for name in assess_tour.PROGRAMS:
        program = tmp_path / "user-program" / name
        assert doc["inputs"][str(program)] == file_sha256(program)
    assert [line.split(":")[0] for line in lines if line.startswith("[")] == [
        f"[{i}/8] {s}" for i, s in enumerate(
            ("platform", "channels", "validation", "search", "matrix", "regions", "plan",
             "protection"),
            start=1)]
    assert [t["task"] for t in doc["sections"]["timing"]["tasks"]] == ["ctl", "mm"]
    assert not real_cgroups.roots_named(test_root)
