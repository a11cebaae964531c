"""Builders for fake sysfs/procfs trees, one function per synthetic machine.

Every reader in intercore.host takes `root`; these trees stand in for hosts this machine is not
(Arm boards, bare-metal servers with CAT, pure cgroup v2). Values mirror what the kernel prints."""

from __future__ import annotations

from pathlib import Path

CPU = "sys/devices/system/cpu"

X86_FLAGS = "fpu vme de pse tsc msr pae sse sse2 ht syscall nx lm constant_tsc avx2"


class FakeHost:
    def __init__(self, root: Path):
        self.root = root

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")

    def cpus(self, online: str, present: str) -> None:
        self.write(f"{CPU}/online", online)
        self.write(f"{CPU}/present", present)
        self.write(f"{CPU}/possible", present)

    def cpu(self, cpu: int, core_id: int, package_id: int = 0,
            thread_siblings: str | None = None) -> None:
        self.write(f"{CPU}/cpu{cpu}/topology/core_id", str(core_id))
        self.write(f"{CPU}/cpu{cpu}/topology/physical_package_id", str(package_id))
        if thread_siblings is not None:
            self.write(f"{CPU}/cpu{cpu}/topology/thread_siblings_list", thread_siblings)

    def offline_cpu(self, cpu: int) -> None:
        # The kernel removes topology/ and cache/ of an offline CPU and keeps its `online` file.
        self.write(f"{CPU}/cpu{cpu}/online", "0")

    def cache(self, cpu: int, index: int, level: int, ctype: str, size: str, shared: str,
              ways: int | None = None, sets: int | None = None, line: int | None = 64) -> None:
        base = f"{CPU}/cpu{cpu}/cache/index{index}"
        self.write(f"{base}/level", str(level))
        self.write(f"{base}/type", ctype)
        self.write(f"{base}/size", size)
        self.write(f"{base}/shared_cpu_list", shared)
        for name, value in (("ways_of_associativity", ways), ("number_of_sets", sets),
                            ("coherency_line_size", line)):
            if value is not None:
                self.write(f"{base}/{name}", str(value))

    def proc(self, rel: str, text: str) -> None:
        self.write(f"proc/{rel}", text)

    def kernel(self, release: str, arch: str) -> None:
        self.proc("sys/kernel/osrelease", release)
        self.proc("sys/kernel/arch", arch)

    def mounts(self, *lines: str) -> None:
        self.proc("mounts", "\n".join(lines))

    def filesystems(self, *names: str) -> None:
        self.proc("filesystems", "\n".join(f"nodev\t{n}" for n in ("sysfs", "proc", *names)))

    def memory(self, nr_hugepages: int, free: int, thp: str) -> None:
        self.proc("sys/vm/nr_hugepages", str(nr_hugepages))
        self.proc("meminfo", f"MemTotal:        8000000 kB\nHugePages_Total:   {nr_hugepages}\n"
                             f"HugePages_Free:    {free}\nHugepagesize:       2048 kB")
        self.write("sys/kernel/mm/transparent_hugepage/enabled", thp)

    def rt(self, runtime_us: int, period_us: int = 1000000) -> None:
        self.proc("sys/kernel/sched_rt_runtime_us", str(runtime_us))
        self.proc("sys/kernel/sched_rt_period_us", str(period_us))


def x86_cpuinfo(ncpu: int, model: str, flags: str) -> str:
    return "\n\n".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
        f"model name\t: {model}\nflags\t\t: {flags}" for i in range(ncpu))


def hybrid_x86_vm(root: Path) -> FakeHost:
    """Like the development host: 2 vCPUs under KVM, private L1/L2, one L3 shared by both,
    cgroup v1 controllers with cgroup2 at /sys/fs/cgroup/unified, no resctrl."""
    host = FakeHost(root)
    host.cpus("0-1", "0-1")
    for cpu in (0, 1):
        host.cpu(cpu, core_id=cpu)
        host.cache(cpu, 0, 1, "Data", "48K", str(cpu), ways=12, sets=64)
        host.cache(cpu, 1, 1, "Instruction", "32K", str(cpu), ways=8, sets=64)
        host.cache(cpu, 2, 2, "Unified", "2048K", str(cpu), ways=16, sets=2048)
        host.cache(cpu, 3, 3, "Unified", "266240K", "0-1", ways=20, sets=212992)
    host.proc("cpuinfo", x86_cpuinfo(2, "Intel(R) Xeon(R) Processor", X86_FLAGS + " hypervisor"))
    host.write("sys/devices/system/clocksource/clocksource0/available_clocksource",
               "tsc kvm-clock ")
    host.kernel("6.18.44-fc-v669", "x86_64")
    v1 = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids")
    host.mounts("sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0",
                "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0",
                *(f"cgroup /sys/fs/cgroup/{c} cgroup rw,relatime,{c} 0 0" for c in v1),
                "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0",
                "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0")
    host.write("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb")
    host.filesystems("cgroup", "cgroup2", "tmpfs")
    host.memory(nr_hugepages=0, free=0, thp="always [madvise] never")
    host.rt(950000)
    return host


PI4_CPUINFO = "\n\n".join(
    f"processor\t: {i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
    f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\n"
    f"CPU revision\t: 3" for i in range(4)
) + "\n\nRevision\t: c03114\nSerial\t\t: 100000001\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4"


def pi4(root: Path) -> FakeHost:
    """Raspberry Pi 4-like: 4x Cortex-A72 sharing a 1 MiB L2, no L3; the device tree gives no
    ways/sets/line files. Legacy cgroup v1 on a 5.10 kernel."""
    host = FakeHost(root)
    host.cpus("0-3", "0-3")
    for cpu in range(4):
        host.cpu(cpu, core_id=cpu)
        host.cache(cpu, 0, 1, "Data", "32K", str(cpu), line=None)
        host.cache(cpu, 1, 1, "Instruction", "48K", str(cpu), line=None)
        host.cache(cpu, 2, 2, "Unified", "1024K", "0-3", line=None)
    host.proc("cpuinfo", PI4_CPUINFO)
    host.kernel("5.10.103-v8+", "aarch64")
    host.mounts("tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0",
                "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0",
                "cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,nodev,noexec,freezer 0 0")
    host.filesystems("cgroup")
    host.memory(nr_hugepages=0, free=0, thp="always madvise [never]")
    host.rt(-1)
    return host


def xeon_cat_v2(root: Path) -> FakeHost:
    """Bare-metal 4-core/8-thread Xeon with CAT and MBA, resctrl mounted, pure cgroup v2 on
    5.15. SMT siblings are cpuN and cpuN+4 and share L1/L2; all eight share the L3."""
    host = FakeHost(root)
    host.cpus("0-7", "0-7")
    for cpu in range(8):
        core = cpu % 4
        siblings = f"{core},{core + 4}"
        host.cpu(cpu, core_id=core)
        host.cache(cpu, 0, 1, "Data", "32K", siblings, ways=8, sets=64)
        host.cache(cpu, 1, 1, "Instruction", "32K", siblings, ways=8, sets=64)
        host.cache(cpu, 2, 2, "Unified", "1024K", siblings, ways=16, sets=1024)
        host.cache(cpu, 3, 3, "Unified", "11264K", "0-7", ways=11, sets=16384)
    rdt = "rdt_a cat_l3 cdp_l3 mba cqm cqm_llc cqm_occup_llc"
    host.proc("cpuinfo", x86_cpuinfo(8, "Intel(R) Xeon(R) Silver 4110 CPU @ 2.10GHz",
                                     f"{X86_FLAGS} {rdt}"))
    host.kernel("5.15.0-91-generic", "x86_64")
    host.mounts("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0",
                "resctrl /sys/fs/resctrl resctrl rw,relatime 0 0")
    host.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc")
    host.filesystems("cgroup", "cgroup2", "resctrl")
    info = "sys/fs/resctrl/info"
    for name, value in (("cbm_mask", "7ff"), ("min_cbm_bits", "1"), ("num_closids", "16"),
                        ("shareable_bits", "0")):
        host.write(f"{info}/L3/{name}", value)
    for name, value in (("bandwidth_gran", "10"), ("min_bandwidth", "10"), ("num_closids", "8"),
                        ("delay_linear", "1")):
        host.write(f"{info}/MB/{name}", value)
    host.memory(nr_hugepages=512, free=500, thp="[always] madvise never")
    host.rt(950000)
    return host


def big_little(root: Path, cpu5_online: bool = True) -> FakeHost:
    """RK3399-like: four little cores sharing one 512 KiB L2 and two big cores sharing their
    own 1 MiB L2, no L3; arm64 ACPI-less sysfs without ways/sets."""
    host = FakeHost(root)
    host.cpus("0-5" if cpu5_online else "0-4", "0-5")
    for cpu in range(6):
        if cpu == 5 and not cpu5_online:
            host.offline_cpu(cpu)
            continue
        big = cpu >= 4
        host.cpu(cpu, core_id=cpu % 4, package_id=int(big))
        host.cache(cpu, 0, 1, "Data", "32K", str(cpu), line=None)
        host.cache(cpu, 1, 1, "Instruction", "48K" if big else "32K", str(cpu), line=None)
        host.cache(cpu, 2, 2, "Unified", "1024K" if big else "512K", "4-5" if big else "0-3",
                   line=None)
    host.proc("cpuinfo", "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
                         "CPU part\t: 0xd03\n\nprocessor\t: 4\nFeatures\t: fp asimd\n"
                         "CPU implementer\t: 0x41\nCPU part\t: 0xd08")
    host.kernel("6.1.0", "aarch64")
    return host


def single_cpu(root: Path) -> FakeHost:
    host = FakeHost(root)
    host.cpus("0", "0")
    host.cpu(0, core_id=0)
    host.cache(0, 0, 1, "Data", "32K", "0")
    host.cache(0, 1, 2, "Unified", "512K", "0")
    host.proc("cpuinfo", x86_cpuinfo(1, "Tiny", X86_FLAGS))
    return host
