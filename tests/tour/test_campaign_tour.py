"""The campaign stage of the demo: a quick campaign run, stored and reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from intercore.base.errors import InputError
from intercore.host.topology import read_topology
from intercore.tour import campaign as tour

from _campaigns import write_campaign

needs_two_cpus = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                    reason="needs two online CPUs (victim + engine)")


@needs_two_cpus
@pytest.mark.slow
def test_tour_runs_a_campaign_quickly_and_writes_its_report(tmp_path):
    path = write_campaign(tmp_path / "c.yaml", reps=20)
    phases: list[str] = []
    out = tour.run(tmp_path / "s.db", tmp_path / "out", phases.append, campaign=path,
                   canary=False)
    assert out["campaign"].startswith("tiny-demo-")
    assert Path(out["report"]).parent == tmp_path / "out"
    assert Path(out["report"]).read_text().startswith("<!DOCTYPE html>")
    assert out["session"]["complete"] and out["session"]["total"] == 6
    # quick mode: 5 repetitions per interference run, 2 rounds
    assert {(s["setup"], s["n"]) for s in out["slowdowns"]} == {
        ("interf_write_64KiB", 10), ("interf_write_256KiB", 10)}
    assert any("quick mode" in w for w in out["warnings"])
    assert any(p.startswith("campaign: run 1/6") for p in phases)
    assert phases[-1] == "campaign: report"


def test_tour_says_when_the_campaign_is_missing(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        tour.run(tmp_path / "s.db", tmp_path, campaign=tmp_path / "missing.yaml")
    assert not (tmp_path / "s.db").exists()
