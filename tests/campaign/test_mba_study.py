"""Paper 003's MBA study run as campaigns against a resctrl tree that acts as the kernel does
(tests/_resctrl_fake.py). The victims run for real through the campaign runner; only the
throttling itself is absent, because no hardware here has it."""

from __future__ import annotations

import pytest

from intercore.campaign import mba_study
from intercore.host.topology import read_topology
from intercore.mitigate.bandwidth import mba

from _resctrl_fake import FakeKernel, Hardware

TOPO = read_topology()


@pytest.mark.slow
@pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="needs two CPUs")
def test_single_core_doe_on_a_fake_resctrl_with_coarse_granularity(tmp_path):
    # Granularity 20: asking for delay 30 (MB 70) makes the kernel apply MB 80 (delay 20).
    kernel = FakeKernel.on_new_tree(tmp_path / "resctrl",
                                    Hardware(min_bandwidth=20, bandwidth_gran=20))
    doc = mba_study.run_doe("single-core", TOPO, db=tmp_path / "r.db", out=tmp_path / "out",
                            reps=3, rounds=1, delays=(30, 60), resctrl=kernel,
                            name="mba-single-core-t")
    rows = {(r["workload"], r["level"]): r for r in doc["tables"]["iv"]["rows"]}
    assert set(rows) == {(k, lv) for k in mba.WORKLOADS for lv in ("d0", "d30", "d60")}
    for k in mba.WORKLOADS:
        asked = rows[(k, "d30")]
        assert asked["requested"] == 70 and asked["written"] == 70
        assert set(asked["applied"].values()) == {"80"}  # rounded up like the kernel
        assert set(rows[(k, "d60")]["applied"].values()) == {"40"}
        assert rows[(k, "d0")]["written"] is None
        assert all(r["n"] >= 3 for r in rows.values())  # solo runs come in isolated pairs
    # Every throttled run went through its own group, removed afterwards.
    made = [w for w in kernel.writes if w[0].endswith("schemata")]
    assert len(made) == 2 * len(mba.WORKLOADS)
    assert kernel.groups() == []
    assert (tmp_path / "out" / "mba-single-core.png").is_file()
    assert (tmp_path / "out" / "mba-single-core-t.yaml").is_file()


@pytest.mark.slow
@pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="needs two CPUs")
def test_multi_core_doe_uses_the_single_core_fractions(tmp_path):
    kernel = FakeKernel.on_new_tree(tmp_path / "resctrl", Hardware())
    db, out = tmp_path / "r.db", tmp_path / "out"
    mba_study.run_doe("single-core", TOPO, db=db, out=out, reps=3, rounds=1, delays=(80, 90),
                      resctrl=kernel, name="mba-single-core-ref")
    doc = mba_study.run_doe("multi-core", TOPO, db=db, out=out, reps=3, rounds=1,
                            resctrl=kernel, name="mba-multi-core-t")
    rows = doc["tables"]["v"]["rows"]
    others = len([c for c in TOPO.online_cpus if c != mba.critical_cpu(TOPO, None)][:3])
    assert len(rows) == 3 * others  # (unthrottled, 80, 90) x cores
    for r in rows:
        if r["delay"]:
            assert r["fraction_source"].startswith("measured")
            assert set(r["applied"].values()) == {str(100 - r["delay"])}
        else:
            assert r["id"] == r["cores"]
