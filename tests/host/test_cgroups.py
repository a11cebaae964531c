import pytest
from fake_host import FakeHost, hybrid_x86_vm, pi4, xeon_cat_v2

from intercore.host.cgroups import read_cgroups


def test_hybrid_vm(tmp_path):
    hybrid_x86_vm(tmp_path)
    info = read_cgroups(tmp_path)
    assert info.mode == "hybrid"
    assert info.v1_mounts["freezer"] == "/sys/fs/cgroup/freezer"
    assert info.v1_mounts["name=systemd"] == "/sys/fs/cgroup/systemd"
    assert set(info.v1_mounts) == {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer",
                                   "blkio", "pids", "name=systemd"}
    assert info.v2_mount == "/sys/fs/cgroup/unified"
    assert info.v2_controllers == ("hugetlb",)
    assert info.freezer == "v2"  # the unified hierarchy freezes too, and does it per cgroup
    assert info.kill is True


def test_legacy_v1_on_old_kernel(tmp_path):
    pi4(tmp_path)
    info = read_cgroups(tmp_path)
    assert info.mode == "v1"
    assert info.v1_mounts == {"cpu": "/sys/fs/cgroup/cpu,cpuacct",
                              "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
                              "freezer": "/sys/fs/cgroup/freezer"}
    assert (info.v2_mount, info.v2_controllers) == (None, ())
    assert (info.freezer, info.kill) == ("v1", False)


def test_pure_v2(tmp_path):
    xeon_cat_v2(tmp_path)
    info = read_cgroups(tmp_path)
    assert info.mode == "v2"
    assert info.v1_mounts == {}
    assert info.v2_mount == "/sys/fs/cgroup"
    assert info.v2_controllers == ("cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma",
                                   "misc")
    assert (info.freezer, info.kill) == ("v2", True)


@pytest.mark.parametrize("release, child_files, freezer, kill", [
    ("5.10.0", (), "v2", False),                        # freeze since 5.2, kill since 5.14
    ("5.10.0", ("cgroup.freeze", "cgroup.kill"), "v2", True),  # a backport, seen in a child
    ("4.19.0", (), None, False),
    ("4.19.0", ("cgroup.freeze",), "v2", False),
    ("5.14.0", (), "v2", True),
])
def test_v2_freeze_and_kill_by_kernel_or_child(tmp_path, release, child_files, freezer, kill):
    host = xeon_cat_v2(tmp_path)
    host.kernel(release, "x86_64")
    for name in child_files:
        host.write(f"sys/fs/cgroup/system.slice/{name}", "0")
    info = read_cgroups(tmp_path)
    assert (info.freezer, info.kill) == (freezer, kill)


def test_no_cgroups_at_all(tmp_path):
    FakeHost(tmp_path).mounts("proc /proc proc rw 0 0")
    info = read_cgroups(tmp_path)
    assert (info.mode, info.v1_mounts, info.v2_mount, info.freezer, info.kill) == \
        ("none", {}, None, None, False)


def test_v2_root_missing_on_disk(tmp_path):
    # /proc/mounts names a cgroup2 mount the tree does not have (e.g. another mount namespace).
    FakeHost(tmp_path).mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0")
    info = read_cgroups(tmp_path)
    assert (info.mode, info.v2_controllers, info.freezer) == ("v2", (), None)
