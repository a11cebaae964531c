import ctypes
import os
import pickle
import subprocess

import pytest
from fake_host import hybrid_x86_vm, pi4, xeon_cat_v2

from intercore.host.features import (decode_pagemap_entry, parse_meminfo, probe_fifo,
                                     probe_pagemap, read_hugepages, read_resctrl, read_rt,
                                     selected_choice)
from intercore.host.topology import read_topology

CAP_SYS_ADMIN = 21
PR_SET_DUMPABLE = 4
NOBODY = 65534


def resctrl_of(root):
    return read_resctrl(root, read_topology(root).flags)


class TestResctrl:
    def test_mounted_with_cat_and_mba(self, tmp_path):
        xeon_cat_v2(tmp_path)
        info = resctrl_of(tmp_path)
        assert info.kernel_support and info.mount == "/sys/fs/resctrl"
        assert info.cpu_flags == ("rdt_a", "cat_l3", "cdp_l3", "mba", "cqm", "cqm_llc",
                                  "cqm_occup_llc")
        assert info.l3 == {"cbm_mask": "7ff", "min_cbm_bits": "1", "num_closids": "16",
                           "shareable_bits": "0"}
        assert info.mb["bandwidth_gran"] == "10" and info.mb["num_closids"] == "8"
        assert info.status == "available, mounted at /sys/fs/resctrl"

    def test_supported_but_not_mounted(self, tmp_path):
        host = xeon_cat_v2(tmp_path)
        host.mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0")
        info = resctrl_of(tmp_path)
        assert (info.mount, info.l3, info.mb) == (None, None, None)
        assert info.status.startswith("supported but not mounted")

    def test_mounted_without_mba(self, tmp_path):
        xeon_cat_v2(tmp_path)
        for f in (tmp_path / "sys/fs/resctrl/info/MB").iterdir():
            f.unlink()
        (tmp_path / "sys/fs/resctrl/info/MB").rmdir()
        info = resctrl_of(tmp_path)
        assert info.mb is None and info.l3["num_closids"] == "16"

    @pytest.mark.parametrize("build", [hybrid_x86_vm, pi4])
    def test_not_supported(self, tmp_path, build):
        build(tmp_path)
        info = resctrl_of(tmp_path)
        assert (info.kernel_support, info.mount, info.cpu_flags) == (False, None, ())
        assert info.status == "not supported by this host"


class TestHugePages:
    def test_reserved_pool(self, tmp_path):
        xeon_cat_v2(tmp_path)
        info = read_hugepages(tmp_path)
        assert (info.nr_hugepages, info.free, info.page_size, info.thp) == \
            (512, 500, 2 * 1024 * 1024, "always")

    def test_none_reserved_thp_never(self, tmp_path):
        pi4(tmp_path)
        info = read_hugepages(tmp_path)
        assert (info.nr_hugepages, info.free, info.thp) == (0, 0, "never")

    def test_missing_files(self, tmp_path):
        info = read_hugepages(tmp_path)
        assert (info.nr_hugepages, info.free, info.page_size, info.thp) == (None,) * 4

    def test_parsers(self):
        meminfo = parse_meminfo("MemTotal:  16 kB\nHugePages_Free:   7\nShmem(x):  1 kB\nbad\n")
        assert meminfo == {"MemTotal": 16384, "HugePages_Free": 7, "Shmem(x)": 1024}
        assert selected_choice("always defer defer+madvise [madvise] never") == "madvise"
        assert selected_choice("no brackets") is None
        assert selected_choice(None) is None


class TestRt:
    def test_throttling_from_tree(self, tmp_path):
        hybrid_x86_vm(tmp_path)
        rt = read_rt(tmp_path)
        assert (rt.rt_runtime_us, rt.rt_period_us, rt.throttled_us) == (950000, 1000000, 50000)

    def test_no_throttling(self, tmp_path):
        pi4(tmp_path)
        assert read_rt(tmp_path).throttled_us is None

    def test_fifo_probe_agrees_with_chrt(self):
        chrt = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True)
        reason = probe_fifo()
        assert (reason is None) == (chrt.returncode == 0), reason

    def test_probe_leaves_the_caller_alone(self):
        before = os.sched_getscheduler(0)
        probe_fifo()
        assert os.sched_getscheduler(0) == before

    def test_process_facts(self):
        rt = read_rt()
        assert rt.root == (os.geteuid() == 0)
        assert rt.fifo_ok == (rt.reason is None)


def has_cap_sys_admin() -> bool:
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    return False


def probe_pagemap_as_nobody():
    """probe_pagemap() in a forked child that has dropped root and CAP_SYS_ADMIN."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            # setuid() made the process non-dumpable, which makes /proc/self root's; undo it so
            # that the kernel's PFN hiding, not file ownership, is what gets tested.
            ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            os.write(write_end, pickle.dumps(probe_pagemap()))
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


class TestPagemap:
    def test_decode(self):
        assert decode_pagemap_entry(0) == (False, 0)
        assert decode_pagemap_entry((1 << 63) | 0x12345) == (True, 0x12345)
        # bits 55-62 are flags (soft-dirty, exclusive, file/shared, swapped), not PFN
        assert decode_pagemap_entry((1 << 63) | (1 << 55) | (1 << 61) | 7) == (True, 7)

    def test_real_probe_matches_capabilities(self):
        info = probe_pagemap()
        assert info.readable
        assert info.pfn_visible == has_cap_sys_admin()
        assert (info.reason is None) == info.pfn_visible

    @pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
    def test_unprivileged_reader_sees_no_pfn(self):
        info = probe_pagemap_as_nobody()
        assert (info.readable, info.pfn_visible) == (True, False)
        assert "CAP_SYS_ADMIN" in info.reason
