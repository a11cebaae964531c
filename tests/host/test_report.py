import json
from dataclasses import replace

import pytest
from fake_host import FakeHost, big_little, hybrid_x86_vm, pi4, single_cpu, xeon_cat_v2

from intercore.host.features import PagemapInfo, RtInfo
from intercore.host.perf import EventStatus
from intercore.host.report import fingerprint, host_report
from intercore.host.topology import read_topology

NO_PMU = "not supported by this CPU or hypervisor (no PMU)"
HW_EVENTS = ("cycles", "instructions", "cache-references", "cache-misses",
             "L1-dcache-load-misses", "LLC-load-misses")


def events(available: bool, reason: str | None = None):
    hw = tuple(EventStatus(n, available, None if available else reason) for n in HW_EVENTS)
    return hw + (EventStatus("task-clock", True, None),)


def report_for(root, **changes):
    """A report of the fake tree, with live probe results pinned so warnings are predictable."""
    base = host_report(root)
    pinned = dict(perf=events(True), pagemap=PagemapInfo(True, True, None),
                  rt=replace(base.rt, fifo_ok=True, reason=None))
    return replace(base, **{**pinned, **changes})


def test_to_dict_is_json_and_complete(tmp_path):
    hybrid_x86_vm(tmp_path)
    data = host_report(tmp_path).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {"fingerprint", "kernel_release", "arch", "cpu", "placement", "cgroups",
                         "perf", "resctrl", "rt", "hugepages", "pagemap"}
    assert data["kernel_release"] == "6.18.44-fc-v669" and data["arch"] == "x86_64"
    assert data["cpu"]["hypervisor"] == "KVM"
    l3 = data["cpu"]["caches"][-1]
    assert (l3["level"], l3["size"], l3["shared_cpus"], l3["shared_cpu_list"]) == \
        (3, 266240 * 1024, [0, 1], "0-1")
    assert data["placement"] == {"victim": 1, "aggressors": [0], "note": None}
    assert data["cgroups"]["mode"] == "hybrid"
    assert data["resctrl"]["status"] == "not supported by this host"
    assert data["rt"]["throttled_us"] == 50000
    assert [e["name"] for e in data["perf"]] == [*HW_EVENTS, "task-clock"]


def test_vm_warnings_name_the_shared_cache(tmp_path):
    hybrid_x86_vm(tmp_path)
    warnings = report_for(tmp_path, perf=events(False, NO_PMU)).warnings
    assert warnings[0] == ("virtual machine (KVM): the L3 (260 MiB) is shared with other "
                           "tenants; cross-core interference may come and go")
    assert "no PMU: counters unavailable, CPU time and wall time are used" in warnings
    assert ("no resctrl: cache/bandwidth partitioning cannot be enforced on this host"
            in warnings)
    assert any(w.startswith("RT throttling is on") and "50000 us" in w for w in warnings)


def test_well_equipped_host_has_only_the_throttling_warning(tmp_path):
    xeon_cat_v2(tmp_path)
    warnings = report_for(tmp_path).warnings
    assert len(warnings) == 1 and warnings[0].startswith("RT throttling is on")


def test_partial_and_paranoid_perf(tmp_path):
    xeon_cat_v2(tmp_path)
    paranoid = "perf_event_paranoid=3 forbids it"
    warnings = report_for(tmp_path, perf=events(False, paranoid)).warnings
    assert f"hardware counters unavailable ({paranoid}): CPU time and wall time are used" \
        in warnings
    some = events(True)[:4] + events(False, NO_PMU)[4:]
    warnings = report_for(tmp_path, perf=some).warnings
    assert any(w.startswith("perf events unavailable: L1-dcache-load-misses, LLC-load-misses")
               for w in warnings)


def test_rt_pagemap_freezer_and_hugepage_warnings(tmp_path):
    pi4(tmp_path)
    (tmp_path / "proc/mounts").write_text("")
    rt = RtInfo(False, 0, -1, 1000000, False, "sched_setscheduler(SCHED_FIFO, 1) failed: x")
    warnings = report_for(tmp_path, rt=rt,
                          pagemap=PagemapInfo(True, False, "PFNs are hidden")).warnings
    joined = "\n".join(warnings)
    assert "no real-time priority (sched_setscheduler(SCHED_FIFO, 1) failed: x)" in joined
    assert "RT throttling" not in joined
    assert "no cgroup freezer" in joined
    assert "no physical addresses (PFNs are hidden)" in joined
    assert "no huge pages (0 hugetlb pages, THP never)" in joined
    assert "virtual machine" not in joined


def test_single_cpu_and_unshared_caches(tmp_path):
    single_cpu(tmp_path)
    assert any("only one online CPU" in w for w in report_for(tmp_path).warnings)
    assert report_for(tmp_path).to_dict()["placement"]["aggressors"] == []

    other = tmp_path / "unshared"
    host = FakeHost(other)
    host.cpus("0-1", "0-1")
    for cpu in (0, 1):
        host.cache(cpu, 0, 2, "Unified", "512K", str(cpu))
    assert any("no cache is shared" in w for w in report_for(other).warnings)


def test_no_cpus_at_all(tmp_path):
    report = report_for(tmp_path)
    assert "no online CPU found in sysfs" in report.warnings
    assert report.to_dict()["placement"] is None


class TestFingerprint:
    def test_stable_and_short(self, tmp_path):
        hybrid_x86_vm(tmp_path)
        first = host_report(tmp_path).fingerprint()
        assert first == host_report(tmp_path).fingerprint()
        assert len(first) == 16 and int(first, 16) >= 0

    @pytest.mark.parametrize("change", [
        lambda h: h.kernel("6.19.0", "x86_64"),
        lambda h: h.cache(1, 3, 3, "Unified", "131072K", "0-1"),
        lambda h: h.cpus("0", "0-1"),
        lambda h: h.proc("cpuinfo", "model name\t: Another CPU"),
    ])
    def test_changes_with_what_identifies_a_host(self, tmp_path, change):
        host = hybrid_x86_vm(tmp_path)
        before = fingerprint(read_topology(tmp_path), "6.18.44-fc-v669")
        change(host)
        after = host_report(tmp_path).fingerprint()
        assert before != after

    def test_ignores_what_does_not(self, tmp_path):
        host = hybrid_x86_vm(tmp_path)
        before = host_report(tmp_path).fingerprint()
        host.memory(nr_hugepages=64, free=64, thp="[always] madvise never")
        host.rt(-1)
        assert host_report(tmp_path).fingerprint() == before

    def test_differs_between_machines(self, tmp_path):
        prints = set()
        for i, build in enumerate((hybrid_x86_vm, pi4, xeon_cat_v2, big_little)):
            build(tmp_path / str(i))
            prints.add(host_report(tmp_path / str(i)).fingerprint())
        assert len(prints) == 4
