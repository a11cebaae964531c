"""Topology parsing and placement on synthetic machines, one class per machine."""

import shutil

import pytest
from fake_host import big_little, hybrid_x86_vm, pi4, single_cpu, xeon_cat_v2

from intercore.base.errors import InputError
from intercore.host.topology import (default_placement, largest_private, llc, private_caches,
                                     read_topology, shared_caches, validate_cpu)

KiB = 1024
MiB = 1024 * KiB


class TestHybridX86Vm:
    @pytest.fixture
    def topo(self, tmp_path):
        hybrid_x86_vm(tmp_path)
        return read_topology(tmp_path)

    def test_cpus_and_identity(self, topo):
        assert topo.online_cpus == (0, 1)
        assert [(c.core_id, c.package_id) for c in topo.cpus] == [(0, 0), (1, 0)]
        assert topo.model_name == "Intel(R) Xeon(R) Processor"
        assert topo.vendor == "GenuineIntel"
        assert topo.hypervisor == "KVM"  # named by the kvm-clock clocksource

    def test_caches_parsed(self, topo):
        l1d, l1i, l2, l3 = topo.cpu(1).caches
        assert (l1d.level, l1d.type, l1d.size, l1d.ways, l1d.sets, l1d.line) == \
            (1, "Data", 48 * KiB, 12, 64, 64)
        assert (l1i.type, l1i.size) == ("Instruction", 32 * KiB)
        assert (l2.size, l2.shared_cpus) == (2 * MiB, (1,))
        assert (l3.size, l3.ways, l3.sets, l3.shared_cpus) == (260 * MiB, 20, 212992, (0, 1))

    def test_each_physical_cache_listed_once(self, topo):
        assert len(topo.caches()) == 7  # 2x(L1d, L1i, L2) + one L3
        assert shared_caches(topo) == (llc(topo),)

    def test_llc_and_private(self, topo):
        assert llc(topo).level == 3
        assert llc(topo, 0) == llc(topo, 1) == llc(topo)
        assert [c.level for c in private_caches(topo, 1)] == [1, 1, 2]
        assert largest_private(topo, 1).size == 2 * MiB

    def test_default_placement(self, topo):
        victim, aggressors = default_placement(topo)
        assert (victim, aggressors) == (1, (0,))
        assert default_placement(topo).note is None

    def test_validate_cpu(self, topo):
        assert validate_cpu(topo, 0, "--victim-cpu") == 0
        with pytest.raises(InputError, match=r"^--victim-cpu: CPU 2 does not exist.*0-1"):
            validate_cpu(topo, 2, "--victim-cpu")


class TestPi4:
    @pytest.fixture
    def topo(self, tmp_path):
        pi4(tmp_path)
        return read_topology(tmp_path)

    def test_identity_from_arm_cpuinfo(self, topo):
        assert topo.model_name == "Raspberry Pi 4 Model B Rev 1.4"
        assert topo.vendor == "ARM"
        assert topo.hypervisor is None
        assert "asimd" in topo.flags

    def test_missing_geometry_is_none(self, topo):
        for cache in topo.caches():
            assert (cache.ways, cache.sets, cache.line) == (None, None, None)
        assert llc(topo).size == 1 * MiB

    def test_shared_l2_is_the_llc(self, topo):
        l2 = llc(topo)
        assert (l2.level, l2.type, l2.shared_cpus) == (2, "Unified", (0, 1, 2, 3))
        assert shared_caches(topo) == (l2,)
        assert largest_private(topo, 3).size == 32 * KiB  # L1d; instruction caches don't count

    def test_placement_on_the_shared_l2(self, topo):
        assert default_placement(topo) == (3, (1, 2, 0))


class TestXeonCatSmt:
    @pytest.fixture
    def topo(self, tmp_path):
        xeon_cat_v2(tmp_path)
        return read_topology(tmp_path)

    def test_no_private_caches_under_smt(self, topo):
        assert private_caches(topo, 7) == ()
        assert largest_private(topo, 7) is None

    def test_placement_avoids_smt_sibling_and_cpu0(self, topo):
        victim, aggressors = default_placement(topo)
        assert victim == 7
        assert 3 not in aggressors  # core 3's other thread shares L1/L2 with the victim
        assert aggressors == (1, 2, 4, 5, 6, 0)

    def test_bare_metal(self, topo):
        assert topo.hypervisor is None


class TestBigLittle:
    def test_placement_stays_inside_the_victims_cluster(self, tmp_path):
        big_little(tmp_path)
        topo = read_topology(tmp_path)
        victim, aggressors = default_placement(topo)
        assert (victim, aggressors) == (5, (4,))
        cache = llc(topo, victim)
        assert cache.level == 2 and set(aggressors) | {victim} <= set(cache.shared_cpus)

    def test_two_clusters_two_shared_l2(self, tmp_path):
        big_little(tmp_path)
        topo = read_topology(tmp_path)
        assert [(c.size, c.shared_cpus) for c in shared_caches(topo)] == \
            [(512 * KiB, (0, 1, 2, 3)), (1 * MiB, (4, 5))]
        assert llc(topo) == shared_caches(topo)[0]  # machine-wide: the most widely shared
        assert llc(topo, 4).shared_cpus == (4, 5)
        assert topo.vendor == "ARM" and topo.model_name == "Arm CPU part 0xd03"

    def test_offline_cpu(self, tmp_path):
        big_little(tmp_path, cpu5_online=False)
        topo = read_topology(tmp_path)
        cpu5 = topo.cpu(5)
        assert (cpu5.online, cpu5.core_id, cpu5.caches) == (False, None, ())
        assert topo.online_cpus == (0, 1, 2, 3, 4)
        with pytest.raises(InputError, match=r"^--aggressor-cpus: CPU 5 is offline"):
            validate_cpu(topo, 5, "--aggressor-cpus")
        # Nothing online shares CPU 4's L2 any more: fall back to any other online CPU.
        assert default_placement(topo) == (4, (1, 2, 3, 0))


class TestSingleCpu:
    def test_no_aggressor_and_says_so(self, tmp_path):
        single_cpu(tmp_path)
        placement = default_placement(read_topology(tmp_path))
        assert placement == (0, ())
        assert "only one online CPU" in placement.note


class TestSparseTrees:
    def test_empty_root_gives_empty_topology(self, tmp_path):
        topo = read_topology(tmp_path)
        assert topo.cpus == () and topo.model_name is None and llc(topo) is None
        with pytest.raises(InputError, match="no online CPU"):
            default_placement(topo)
        with pytest.raises(InputError, match="--cpu: CPU 0 does not exist.*none"):
            validate_cpu(topo, 0)

    def test_no_global_online_list_falls_back_to_per_cpu_files(self, tmp_path):
        host = pi4(tmp_path)
        (tmp_path / "sys/devices/system/cpu/online").unlink()
        host.write("sys/devices/system/cpu/cpu2/online", "0")
        host.write("sys/devices/system/cpu/cpu3/online", "1")
        assert read_topology(tmp_path).online_cpus == (0, 1, 3)

    def test_cache_without_size_or_shared_list(self, tmp_path):
        host = pi4(tmp_path)
        (tmp_path / "sys/devices/system/cpu/cpu1/cache/index2/size").unlink()
        (tmp_path / "sys/devices/system/cpu/cpu1/cache/index2/shared_cpu_list").unlink()
        l2 = read_topology(tmp_path).cpu(1).caches[2]
        assert (l2.size, l2.shared_cpus) == (None, (1,))
        host.write("sys/devices/system/cpu/cpu1/cache/index0/level", "")  # unreadable index
        assert [c.level for c in read_topology(tmp_path).cpu(1).caches] == [1, 2]

    def test_cpu_dirs_missing_use_present_list(self, tmp_path):
        host = single_cpu(tmp_path)
        host.cpus("0-3", "0-3")
        assert [c.id for c in read_topology(tmp_path).cpus] == [0]  # the cpu0 dir wins
        shutil.rmtree(tmp_path / "sys/devices/system/cpu/cpu0")
        assert [c.id for c in read_topology(tmp_path).cpus] == [0, 1, 2, 3]
