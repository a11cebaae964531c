"""Capacity against demand on sysfs trees this test writes: refused with the reason of every
missing counter where the task set's CPUs have none (this development VM has no PMU), and
still refused, naming the counters found, where they exist (demand is not counted yet)."""

from __future__ import annotations

from pathlib import Path

from intercore.assess import capacity

from test_dossier import _system


def _mbm(root: Path, cpu: int) -> None:
    cache = root / f"sys/devices/system/cpu/cpu{cpu}/cache/index3"
    cache.mkdir(parents=True)
    (cache / "level").write_text("3\n")
    (cache / "id").write_text("0\n")
    resctrl = root / "sys/fs/resctrl"
    (resctrl / "info/L3_MON").mkdir(parents=True, exist_ok=True)
    (resctrl / "info/L3_MON/mon_features").write_text("llc_occupancy\nmbm_total_bytes\n")
    (resctrl / "mon_data/mon_L3_00").mkdir(parents=True, exist_ok=True)
    (resctrl / "mon_data/mon_L3_00/mbm_total_bytes").write_text("0\n")


def test_capacity_is_refused_with_each_reason_where_no_counter_exists(tmp_path):
    (tmp_path / "sys").mkdir()
    section = capacity.section(_system(tmp_path), tmp_path / "sys")
    assert section["objective"] == "MCP_Resource_Usage_4" and section["cpus"] == [1]
    assert section["refused"].startswith("no counter of memory traffic on the CPUs")
    assert "no resctrl mounted" in section["refused"]
    assert "no memory-traffic events are tabulated" in section["refused"]
    assert not any(s["available"] for s in section["counters"]["1"])


def test_capacity_names_the_counters_it_found_and_does_not_claim_a_result(tmp_path):
    root = tmp_path / "host"
    _mbm(root, 1)
    section = capacity.section(_system(tmp_path), root)
    assert section["refused"].startswith("counters exist here (mbm:mbm_total_bytes)")
    assert "demand" in section["refused"] and "assessed" not in section
