"""The label distribution report (`learn dataset --report`): per family and per level where
the working sets live, hand-computed."""

from __future__ import annotations

import json

import pytest

from intercore.learn.dataset import Dataset, Label, ProgramRecord
from intercore.learn.distribution import ALL, distribution
from intercore.learn.programs import ProgramSpec, RegionSpec

from _learnkit import intercore
from _synthetic import HIER  # 48K / 1M / 32M

KIB, MIB = 1024, 1024 * 1024


def _program(name: str, family: str, regions: list[tuple[int, float]]) -> ProgramRecord:
    """A program whose region i has a working set of regions[i][0] bytes and Δ regions[i][1]."""
    specs = tuple(RegionSpec(i + 1, "v", "u32", "L1d", 1.0, {"bytes": b, "ops": 1, "passes": 1})
                  for i, (b, _) in enumerate(regions))
    labels = {i + 1: Label(10, d, (d, d), d, 1000.0, "shared", {"shared": 10})
              for i, (_, d) in enumerate(regions)}
    return ProgramRecord(ProgramSpec(name, family, "O2", specs), (), labels)


def _dataset() -> Dataset:
    tenth = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9]
    return Dataset({"hierarchy": HIER.to_dict()}, [
        _program("chase-0", "chase", [(KIB, 1.0), (8 * MIB, 1.3), (64 * MIB, 1.25)]),
        _program("chase-1", "chase", [(48 * KIB, 1.1), (32 * MIB, 2.5)]),
        _program("triad-0", "triad", [(512 * KIB, 1.0)]),
        _program("gather-0", "gather", [(2 * MIB, d) for d in tenth]),
    ])


def test_rows_by_family_and_level_hand_computed():
    rows = {(r.family, r.level): r for r in distribution(_dataset())}
    # a working set lives in the innermost level that holds it (48 KiB: L1d, 32 MiB: L3)
    chase = rows["chase", ALL]
    assert (chase.n, chase.median, chase.p90) == (5, 1.25, None)  # no p90 below 10
    assert chase.above == (3 / 5, 1 / 5)
    assert rows["chase", "L3"].median == pytest.approx(1.9)
    assert (rows["chase", "L1d"].n, rows["chase", "DRAM"].n) == (2, 1)
    gather = rows["gather", "L3"]
    assert gather.median == pytest.approx(1.45) and gather.p90 == pytest.approx(1.81)
    assert gather.above == (0.7, 0.0)  # 1.2 itself is not above 1.2
    assert rows[ALL, "L3"].n == 12 and rows[ALL, "L2"].n == 1
    everything = rows[ALL, ALL]
    assert everything.n == 16 and everything.above == (10 / 16, 1 / 16)
    assert ("triad", "L3") not in rows  # no empty cells


def test_rows_come_family_by_family_levels_inwards_out_totals_last():
    order = [(r.family, r.level) for r in distribution(_dataset())]
    assert order[:5] == [("chase", "L1d"), ("chase", "L3"), ("chase", "DRAM"),
                         ("chase", ALL), ("gather", "L3")]
    assert order[-3:] == [(ALL, "L3"), (ALL, "DRAM"), (ALL, ALL)]


@pytest.mark.slow
def test_report_option_prints_the_distribution_and_generates_nothing(tmp_path):
    ds = _dataset()
    ds.meta = {**ds.meta, "name": "t"}
    ds.save(tmp_path / "ds")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    done = intercore("dataset", "--report", "--out", str(tmp_path / "ds"), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {(r["family"], r["level"]): r["n"] for r in doc["rows"]}[ALL, ALL] == 16
    assert doc["rows"][-1]["above_1.2"] == 10 / 16
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    missing = intercore("dataset", "--report", "--out", str(tmp_path / "none"))
    assert missing.returncode == 2 and "error:" in missing.stderr
    assert not (tmp_path / "none").exists()
