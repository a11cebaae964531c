"""Paper 003's MBA design of experiments against a resctrl tree that acts as the kernel does
(tests/_resctrl_fake.py: schemata parsed and checked, Intel percentages rounded up to
bandwidth_gran, groups and tasks as directories). The victims run for real through the
campaign runner; only the throttling itself is absent, because no hardware here has it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercore.base.errors import HostUnsupported, InputError
from intercore.host.topology import read_topology
from intercore.mitigate.bandwidth import mba
from intercore.mitigate.bandwidth.resctrl import MB_AMD, MB_PERCENT, MbInfo

from _resctrl_fake import FakeKernel, Hardware

TOPO = read_topology()


def test_levels_follow_the_hosts_granularity():
    intel = MbInfo(min_bandwidth=10, bandwidth_gran=10, num_closids=8, mode=MB_PERCENT)
    assert [lv.delay for lv in mba.levels(intel)] == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    coarse = MbInfo(min_bandwidth=20, bandwidth_gran=20, num_closids=8, mode=MB_PERCENT)
    assert [(lv.delay, lv.value) for lv in mba.levels(coarse)] == [(20, 80), (40, 60), (60, 40),
                                                                    (80, 20)]
    amd = MbInfo(min_bandwidth=0, bandwidth_gran=1, num_closids=16, mode=MB_AMD)
    assert [lv.value for lv in mba.levels(amd)][:3] == [125, 250, 500]
    with pytest.raises(InputError, match="min_bandwidth"):
        mba.levels(coarse, delays=(90,))
    with pytest.raises(InputError, match="absolute rate"):
        mba.levels(amd, delays=(50,))


def test_table_iv_follows_the_papers_formula():
    cells = {
        "solo@RI": mba.Cell("RI", "d0", None, None, {}, (1000.0, 1100.0)),
        "solo_mbr-fetch-20pct@RI": mba.Cell("RI", "d80", 20, 20, {"0": "20"}, (1333.3, 1500.0)),
        "solo_mbr-fetch-20pct@WII": mba.Cell("WII", "d80", 20, 20, {"0": "20"}, (2000.0,)),
    }
    iv = mba.table_iv(cells)
    assert iv["T_ns"] == 1000.0
    rows = {(r["workload"], r["level"]): r for r in iv["rows"]}
    assert rows[("RI", "d0")]["max_bw_pct"] == pytest.approx(100.0)
    assert rows[("RI", "d80")]["max_bw_ops"] == pytest.approx(mba.LINES * 1000 / 1333.3)
    assert rows[("WII", "d80")]["max_bw_pct"] == pytest.approx(50.0)
    assert rows[("WII", "d80")]["writes_double"]
    f, how = mba.sync_fraction(iv, 80)
    assert f == pytest.approx(0.75, rel=1e-3) and how.startswith("measured")
    assert mba.sync_fraction(None, 90) == (0.1, "nominal (100 - d)/100: no single-core results")


def test_a_host_without_resctrl_is_told_so(tmp_path):
    with pytest.raises(HostUnsupported, match="no resctrl mounted"):
        mba.host_mba(mba.Resctrl.from_system(tmp_path / "nothing"))
    no_mb = FakeKernel.on_new_tree(tmp_path / "r", Hardware(mb=False))
    with pytest.raises(HostUnsupported, match="no info/MB"):
        mba.host_mba(no_mb)


@pytest.mark.slow
def test_cli_exits_3_with_the_reason_where_resctrl_is_absent(tmp_path):
    try:
        mba.host_mba()
        pytest.skip("this host has resctrl with MBA")
    except HostUnsupported as exc:
        reason = str(exc)
    got = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "mba", "doe", "--db",
                          str(tmp_path / "r.db"), "-o", str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert got.returncode == 3
    assert reason in got.stderr
    assert not (tmp_path / "r.db").exists()
