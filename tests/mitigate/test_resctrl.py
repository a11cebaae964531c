"""resctrl: the pure rules, and the kernel boundary against a fake tree (tests/_resctrl_fake.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _resctrl_fake import FakeKernel, Hardware, build_tree

from intercore.base.errors import HostUnsupported
from intercore.mitigate.bandwidth.resctrl import (
    MB_AMD,
    MB_MBPS,
    MB_PERCENT,
    MbInfo,
    Resctrl,
    ResctrlError,
    cbm_problem,
    colours_to_cbm,
    format_schemata,
    mb_mode,
    mb_setting,
    parse_schemata,
)


def test_schemata_parse_and_format_round_trip():
    text = "    L3:0=7ff;1=7ff\n    MB:0=100;1= 50\n"
    parsed = parse_schemata(text)
    assert parsed == {"L3": {"0": "7ff", "1": "7ff"}, "MB": {"0": "100", "1": "50"}}
    assert format_schemata("L3", parsed["L3"]) == "L3:0=7ff;1=7ff\n"


@pytest.mark.parametrize("colours, s, cbm_mask, expected", [
    (0b00001111, 8, 0xFF, 0x0F),          # one way per colour
    (0b11110000, 8, 0x7FF, 0x7E0),        # 11 ways: colours 4-7 -> ways 5-10
    (0b00001111, 8, 0x7FF, 0x01F),        #          colours 0-3 -> ways 0-4
    (0b0001, 4, 0xFFFFF, 0x1F),           # 20 ways, 4 colours: 5 ways each
    (0b0110, 4, 0xFFFFF, 0x07FE0),
    (0b11, 2, 0xFF0, 0xFF0),              # a mask that does not start at bit 0
    (0b01, 2, 0xFF0, 0x0F0),
])
def test_colours_map_to_contiguous_ways(colours, s, cbm_mask, expected):
    assert colours_to_cbm(colours, s, cbm_mask) == expected


def test_every_colour_gets_a_way_and_colours_partition_the_mask():
    for width in range(4, 21):
        mask = (1 << width) - 1
        for s in range(1, width + 1):
            per_colour = [colours_to_cbm(1 << c, s, mask) for c in range(s)]
            assert all(per_colour)
            assert sum(per_colour) == mask  # disjoint and complete


def test_more_colours_than_ways_is_refused():
    with pytest.raises(ValueError, match="cannot map"):
        colours_to_cbm(1, 16, 0x7FF)


def test_cbm_problems_are_the_kernels():
    assert cbm_problem(0x1F, 0x7FF, 1) is None
    assert "outside" in cbm_problem(0x1000, 0x7FF, 1)
    assert "min_cbm_bits" in cbm_problem(0x1, 0x7FF, 2)
    assert "contiguous" in cbm_problem(0x5, 0x7FF, 1)
    assert cbm_problem(0x5, 0x7FF, 1, sparse=True) is None


def test_intel_percentages_round_up_to_the_granularity():
    mb = MbInfo(min_bandwidth=10, bandwidth_gran=10, num_closids=8, mode=MB_PERCENT)
    assert mb_setting(25, "percent", mb).expected == 30
    assert mb_setting(30, "percent", mb).value == 30
    assert mb_setting(100, "percent", mb).expected == 100
    with pytest.raises(ValueError, match="outside 10..100"):
        mb_setting(5, "percent", mb)
    with pytest.raises(ValueError, match="mba_MBps"):
        mb_setting(500, "MBps", mb)


def test_mba_mbps_takes_the_rate_itself():
    mb = MbInfo(10, 10, 8, MB_MBPS)
    s = mb_setting(750, "MBps", mb)
    assert (s.value, s.expected, s.expected_mbps) == (750, 750, 750)
    with pytest.raises(ValueError, match="MBps"):
        mb_setting(50, "percent", mb)


def test_amd_units_are_eighths_of_a_gigabyte_per_second_rounded_down():
    mb = MbInfo(0, 1, 16, MB_AMD)
    assert (mb_setting(1000, "MBps", mb).value, mb_setting(1000, "MBps", mb).expected_mbps) \
        == (8, 1000)
    assert (mb_setting(1100, "MBps", mb).value, mb_setting(1100, "MBps", mb).expected_mbps) \
        == (8, 1000)  # never a looser limit than asked for
    assert mb_setting(256_000, "MBps", mb).value == 2048
    with pytest.raises(ValueError, match="granularity"):
        mb_setting(100, "MBps", mb)
    with pytest.raises(ValueError, match="largest"):
        mb_setting(300_000, "MBps", mb)
    with pytest.raises(ValueError, match="MBps"):
        mb_setting(50, "percent", mb)


def test_mb_mode_from_vendor_and_mount_options():
    assert mb_mode("GenuineIntel", ("rw",)) == MB_PERCENT
    assert mb_mode("GenuineIntel", ("rw", "mba_MBps")) == MB_MBPS
    assert mb_mode("AuthenticAMD", ("rw",)) == MB_AMD
    assert mb_mode("HygonGenuine", ()) == MB_AMD
    assert mb_mode("ARM", ()) == MB_PERCENT  # MPAM's memory bandwidth maximum


def test_info_is_read_from_the_tree(tmp_path):
    root = build_tree(tmp_path, Hardware(cbm_mask=0xFFFFF, min_cbm_bits=2, num_closids=8,
                                         min_bandwidth=20, bandwidth_gran=5))
    r = Resctrl(root, vendor="GenuineIntel", mount_options=("rw", "mba_MBps"))
    cache = r.cache_info()
    assert (cache.resources, cache.cbm_mask, cache.width, cache.min_cbm_bits,
            cache.num_closids) == (("L3",), 0xFFFFF, 20, 2, 8)
    assert r.mb_info() == MbInfo(20, 5, 8, MB_MBPS)
    assert r.domains("L3") == ["0", "1"] and r.domains("MB") == ["0", "1"]
    assert r.last_cmd_status() == "ok"


def test_code_data_prioritisation_exposes_two_l3_resources(tmp_path):
    root = build_tree(tmp_path, Hardware(cdp=True, mb=False))
    r = Resctrl(root)
    assert r.cache_info().resources == ("L3CODE", "L3DATA")
    assert r.mb_info() is None


def test_group_lifecycle_writes_schemata_and_moves_tasks(tmp_path):
    k = FakeKernel.on_new_tree(tmp_path)
    k.create_group("g")
    k.write_schemata("g", "L3:0=1f;1=1f\nMB:0=25;1=25\n")
    assert k.read_schemata("g") == {"L3": {"0": "1f", "1": "1f"}, "MB": {"0": "30", "1": "30"}}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        k.add_task("g", child.pid)
        assert k.tasks("g") == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert k.groups() == ["g"]
    k.remove_group("g")
    assert k.groups() == [] and not (tmp_path / "g").exists()
    k.remove_group("g")  # already gone: nothing to do


def test_a_refused_write_surfaces_last_cmd_status(tmp_path):
    k = FakeKernel.on_new_tree(tmp_path)
    k.create_group("g")
    with pytest.raises(ResctrlError) as info:
        k.write_schemata("g", "MB:0=5;1=5\n")
    assert "info/last_cmd_status: MB value 5 out of range [10,100]" in str(info.value)
    assert "Invalid argument" in str(info.value)
    with pytest.raises(ResctrlError, match="non-consecutive"):
        k.write_schemata("g", "L3:0=5;1=5\n")
    assert isinstance(info.value, HostUnsupported)  # exit code 3 at the CLI


def test_moving_a_dead_pid_and_running_out_of_closids_are_failures(tmp_path):
    k = FakeKernel.on_new_tree(tmp_path, Hardware(num_closids=2))
    k.create_group("a")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pytest.raises(ResctrlError, match=f"No task {dead.pid}"):
        k.add_task("a", dead.pid)
    with pytest.raises(ResctrlError, match="every CLOSID is in use.*Out of CLOSIDs"):
        k.create_group("b")


def test_real_kernel_writes_need_an_existing_file(tmp_path):
    # The production write path opens without O_CREAT, as a kernel file always exists.
    root = build_tree(tmp_path)
    r = Resctrl(root)
    os.mkdir(root / "g")
    with pytest.raises(ResctrlError, match="No such file"):
        r.write_schemata("g", "L3:0=1;1=1\n")


def test_from_system_refuses_a_missing_mount(tmp_path):
    with pytest.raises(HostUnsupported, match="no resctrl mounted at"):
        Resctrl.from_system(tmp_path / "nothing")
    r = Resctrl.from_system(build_tree(tmp_path), vendor="AuthenticAMD", mount_options=())
    assert r.mb_info().mode == MB_AMD
