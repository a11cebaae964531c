"""The bundled board models: they analyse, they mark what is unverified, and the Raspberry Pi
4 shows the channels paper 000 §4.1 reports."""

from pathlib import Path

import pytest
from model_builders import row, table, verdicts

from intercore.model.calculus import analyze
from intercore.model.loader import load, with_rules

PLATFORMS = Path(__file__).resolve().parents[2] / "examples" / "platforms"
BOARDS = ("rpi4", "jetson-nano", "zcu104", "xeon-cascade-lake")


def test_the_four_boards_and_the_format_example_are_bundled():
    assert sorted(p.stem for p in PLATFORMS.glob("*.yaml")) == sorted([*BOARDS, "noc-soc"])


def test_the_format_example_uses_every_new_form():
    p = load(PLATFORMS / "noc-soc.yaml")
    assert any(t.multi_path for t in p.transactions.values())
    assert p.non_interfering and p.routing and all(r.applied_to for r in p.routing)
    shared = p.transactions["arm0_ld_ddr"]
    assert shared.derived and shared.apps == ("control", "monitor")
    assert load(PLATFORMS / "noc-soc.yaml", "flight").dropped
    degraded = load(PLATFORMS / "noc-soc.yaml", "degraded")
    assert set(degraded.dropped) == {"dma0_in", "dma1_in", "dma0_out", "dma1_out"}
    row = next(r for r in table(p).channels if "dma0_in" in r.transactions and r.legs)
    assert row.legs[0].startswith("dma0_in.")


@pytest.mark.parametrize("board", BOARDS)
def test_board_analyses_at_k2_and_k3_and_marks_unverified_facts(board):
    p = load(PLATFORMS / f"{board}.yaml")
    assert any(not c.verified for c in p.components.values())
    for k in (2, 3):
        counts = analyze(p, k).counts
        assert counts["interference"] > 0 and counts["free"] > 0
        assert counts["interference"] + counts["free"] + counts["redundant"] == \
            counts["k_sets"]
    t = table(p)
    assert "not verified" in t.to_markdown() and t.warnings
    assert t.to_html_page().startswith("<!DOCTYPE html>")


@pytest.fixture(scope="module")
def rpi4():
    return load(PLATFORMS / "rpi4.yaml")


def _channels_touching(p, *components):
    return [r for r in table(p).channels if set(components) <= set(r.components)]


def test_rpi4_flags_the_shared_l2_subsystem(rpi4):
    l2_vs_l2 = row(rpi4, "c0_l2", "c1_l2")
    assert l2_vs_l2.rule == "shared" and {"l2", "scu"} <= set(l2_vs_l2.components)


def test_rpi4_flags_the_amba_bus_and_the_lpddr(rpi4):
    ddr = row(rpi4, "c0_ddr_ld", "c1_ddr_ld")
    assert {"axi", "ddrc", "lpddr4"} <= set(ddr.components)
    assert set(ddr.unverified) == {"axi", "ddrc", "lpddr4"}  # the fact sheet's "verify"
    # the VideoCore writing its frame buffer meets the cores on the bus and in DRAM
    gpu = row(rpi4, "c0_ddr_st", "g_fb")
    assert {"axi", "ddrc", "lpddr4"} <= set(gpu.components)


def test_rpi4_flags_every_private_l1_through_the_inclusive_l2(rpi4):
    for core in range(4):
        other = (core + 1) % 4
        r = row(rpi4, f"c{core}_l1", f"c{other}_ddr_ld")
        assert r.rule == "inclusive_cache", r
        assert f"l1d{core}.load" in r.services and "l2.store" in r.services
    # without the rule, a core running only L1 hits would wrongly look free
    without = verdicts(with_rules(rpi4, disable=["inclusive_cache"]))
    assert without[frozenset({"c0_l1", "c1_ddr_ld"})] == "free"


def test_rpi4_expected_free_combinations(rpi4):
    v = verdicts(rpi4)
    assert v[frozenset({"c0_l1", "c1_l1"})] == "free"          # L1-only on different cores
    assert v[frozenset({"c0_l1", "g_fb"})] == "free"           # L1-only vs GPU -> DDR
    assert v[frozenset({"c0_sh_st", "c1_sh_ld"})] == "itf"     # but shared data is not
    assert row(rpi4, "c0_sh_st", "c1_sh_ld").rule == "coherence"
