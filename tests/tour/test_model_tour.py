"""The model stage of the demo: detect, analyse, validate a short subset, store."""

import sqlite3

import pytest

from intercore.host.topology import read_topology
from intercore.tour import model as tour

from _procs import native_processes


@pytest.mark.slow
@pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                    reason="needs a victim and an aggressor CPU")
def test_tour_detects_analyses_validates_and_stores(tmp_path):
    phases = []
    db, model = tmp_path / "r.db", tmp_path / "host.yaml"
    out = tour.run(db, on_phase=phases.append, quick=True, model_out=model)
    assert set(out) == {"model", "analysis", "validation", "invocation_id"}
    assert out["model"]["platform"] == "host" and model.read_text().startswith("# Platform")
    assert out["analysis"]["counts"]["interference"] > 0
    v = out["validation"]
    assert len(v["verdicts"]) == 3
    # The running canary's first and last probe around each victim's interleaved blocks.
    victims = list(dict.fromkeys(x["victim"]["tx"] for x in v["verdicts"]))
    assert [c["when"] for c in v["canary"]] == [f"{w} {tx}" for tx in victims
                                                for w in ("before", "after")]
    assert all(x["regime"] in ("shared", "not-shared", "unknown", "mixed")
               and x["verdict"] in ("confirmed", "not observed", "contradicted", "unobservable")
               for x in v["verdicts"])
    assert phases[0] == "model: detecting this host"
    assert any("canary" in p for p in phases)
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM model_verdicts WHERE invocation_id = ?",
                       (out["invocation_id"],)).fetchone()[0] == 3
    assert not native_processes()
