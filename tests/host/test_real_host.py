"""The readers against this machine, checked with independent reads of the same files."""

import os
import re
from pathlib import Path

import pytest

from intercore.host.cgroups import read_cgroups
from intercore.host.features import read_hugepages, read_rt
from intercore.host.report import host_report
from intercore.host.topology import default_placement, llc, read_topology

CPU = Path("/sys/devices/system/cpu")


@pytest.fixture(scope="module")
def topo():
    return read_topology()


def sysfs_cache_indexes(cpu: int) -> list[Path]:
    return sorted((CPU / f"cpu{cpu}/cache").glob("index*"), key=lambda p: int(p.name[5:]))


def test_online_cpus(topo):
    assert len(topo.online_cpus) == os.cpu_count()
    assert set(os.sched_getaffinity(0)) <= set(topo.online_cpus)


def test_cache_sizes_match_sysfs(topo):
    for cpu in topo.online_cpus:
        indexes = sysfs_cache_indexes(cpu)
        caches = topo.cpu(cpu).caches
        assert len(caches) == len(indexes)
        for cache, index in zip(caches, indexes):
            number, unit = re.fullmatch(r"(\d+)([KMG]?)", (index / "size").read_text().strip()
                                        ).groups()
            assert cache.size == int(number) * {"": 1, "K": 1 << 10, "M": 1 << 20,
                                                "G": 1 << 30}[unit]
            assert cache.level == int((index / "level").read_text())
            assert cpu in cache.shared_cpus


def test_geometry_consistent_where_reported(topo):
    for cache in topo.caches():
        if None not in (cache.ways, cache.sets, cache.line, cache.size):
            assert cache.ways * cache.sets * cache.line == cache.size


def test_llc_is_the_deepest_level(topo):
    deepest = max(int((i / "level").read_text()) for i in sysfs_cache_indexes(0))
    assert llc(topo).level == deepest


def test_placement_uses_online_cpus(topo):
    victim, aggressors = default_placement(topo)
    others = set(topo.online_cpus) - {victim}
    assert victim == max(topo.online_cpus)
    assert set(aggressors) <= others and bool(aggressors) == bool(others)
    cache = llc(topo, victim)
    sharing = others & set(cache.shared_cpus) if cache else set()
    if sharing:
        assert set(aggressors) <= sharing


def test_vm_flag(topo):
    flags = re.search(r"^(?:flags|Features)\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    if flags and "hypervisor" in flags.group(1).split():
        assert topo.hypervisor is not None


def test_cgroup_mounts_exist():
    info = read_cgroups()
    for path in info.v1_mounts.values():
        assert os.path.ismount(path)
    if info.v2_mount:
        assert os.path.ismount(info.v2_mount)
        text = Path(info.v2_mount, "cgroup.controllers").read_text()
        assert info.v2_controllers == tuple(text.split())
    assert info.mode in {"v1", "v2", "hybrid", "none"}


def test_memory_settings():
    hp = read_hugepages()
    assert hp.nr_hugepages == int(Path("/proc/sys/vm/nr_hugepages").read_text())
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        assert f"[{hp.thp}]" in thp.read_text()


def test_rt_settings():
    rt = read_rt()
    assert rt.rt_runtime_us == int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())


def test_whole_report(topo):
    report = host_report()
    assert report.topology == topo
    assert report.kernel_release == os.uname().release
    assert report.arch == os.uname().machine
    assert all(isinstance(w, str) and w for w in report.warnings)
