"""Host features a measurement depends on: resctrl (cache/bandwidth partitioning), real-time
scheduling, huge pages and physical addresses through pagemap.

Readers take `root` so tests can point them at a fake tree; the two probes (`probe_rt`,
`probe_pagemap`) act on this very process and so always use the live kernel."""

from __future__ import annotations

import ctypes
import mmap
import os
import re
import resource
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from .mounts import filesystem_supported, read_mounts
from .sysfs import read_int, read_text

# ---- resctrl -----------------------------------------------------------------------------------

RDT_FLAGS = ("rdt_a", "cat_l3", "cat_l2", "cdp_l3", "mba", "cqm", "cqm_llc", "cqm_occup_llc",
             "cqm_mbm_total", "cqm_mbm_local")


@dataclass(frozen=True)
class ResctrlInfo:
    kernel_support: bool  # "resctrl" in /proc/filesystems
    mount: str | None
    cpu_flags: tuple[str, ...]  # the RDT flags this CPU advertises
    l3: dict[str, str] | None  # info/L3/* when mounted (cbm_mask, min_cbm_bits, num_closids ...)
    mb: dict[str, str] | None  # info/MB/* when mounted (bandwidth_gran, min_bandwidth ...)

    @property
    def status(self) -> str:
        if self.mount:
            return f"available, mounted at {self.mount}"
        # x86 and Arm (MPAM) register the filesystem only when the hardware can partition.
        if self.kernel_support:
            return "supported but not mounted (mount -t resctrl resctrl /sys/fs/resctrl)"
        return "not supported by this host"


def _info_dir(path: Path) -> dict[str, str] | None:
    if not path.is_dir():
        return None
    return {f.name: text for f in sorted(path.iterdir())
            if f.is_file() and (text := read_text(f)) is not None}


def read_resctrl(root: Path = Path("/"), cpu_flags: frozenset[str] = frozenset()) -> ResctrlInfo:
    mount = next((m.path for m in read_mounts(root) if m.fstype == "resctrl"), None)
    info = root / mount.lstrip("/") / "info" if mount else None
    return ResctrlInfo(
        kernel_support=filesystem_supported(root, "resctrl"),
        mount=mount,
        cpu_flags=tuple(f for f in RDT_FLAGS if f in cpu_flags),
        l3=_info_dir(info / "L3") if info else None,
        mb=_info_dir(info / "MB") if info else None,
    )


# ---- real-time scheduling ----------------------------------------------------------------------

@dataclass(frozen=True)
class RtInfo:
    root: bool
    rlimit_rtprio: int
    rt_runtime_us: int | None  # -1: no RT throttling
    rt_period_us: int | None
    fifo_ok: bool
    reason: str | None  # why SCHED_FIFO failed; None when it worked

    @property
    def throttled_us(self) -> int | None:
        """Microseconds per period an RT task is stalled by RT throttling, if it is on."""
        if self.rt_runtime_us is None or self.rt_period_us is None or self.rt_runtime_us < 0:
            return None
        return self.rt_period_us - self.rt_runtime_us


def probe_fifo() -> str | None:
    """Try SCHED_FIFO 1 in a short-lived thread (the setting is per thread, so the caller keeps
    its own policy). None on success, else the error. Needs the real attempt: an RT cgroup with
    no runtime budget refuses even root."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except OSError as exc:
            outcome.append(f"sched_setscheduler(SCHED_FIFO, 1) failed: {exc.strerror}")
            return
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        outcome.append(None)

    thread = threading.Thread(target=attempt, name="intercore-rt-probe")
    thread.start()
    thread.join()
    return outcome[0]


def read_rt(root: Path = Path("/")) -> RtInfo:
    reason = probe_fifo()
    return RtInfo(
        root=os.geteuid() == 0,
        rlimit_rtprio=resource.getrlimit(resource.RLIMIT_RTPRIO)[0],
        rt_runtime_us=read_int(root / "proc/sys/kernel/sched_rt_runtime_us"),
        rt_period_us=read_int(root / "proc/sys/kernel/sched_rt_period_us"),
        fifo_ok=reason is None,
        reason=reason,
    )


# ---- huge pages --------------------------------------------------------------------------------

@dataclass(frozen=True)
class HugePageInfo:
    nr_hugepages: int | None
    free: int | None
    page_size: int | None  # bytes of the default hugetlb page
    thp: str | None  # always / madvise / never


def parse_meminfo(text: str) -> dict[str, int]:
    """Values in /proc/meminfo; "kB" ones in bytes, counts as they are."""
    values = {}
    for line in text.splitlines():
        match = re.match(r"^([\w()]+):\s+(\d+)(\s*kB)?", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * (1024 if match.group(3) else 1)
    return values


def selected_choice(text: str | None) -> str | None:
    """The bracketed choice in a sysfs menu: "always [madvise] never" -> "madvise"."""
    match = re.search(r"\[([^\]]+)\]", text or "")
    return match.group(1) if match else None


def read_hugepages(root: Path = Path("/")) -> HugePageInfo:
    meminfo = parse_meminfo(read_text(root / "proc/meminfo") or "")
    return HugePageInfo(
        nr_hugepages=read_int(root / "proc/sys/vm/nr_hugepages"),
        free=meminfo.get("HugePages_Free"),
        page_size=meminfo.get("Hugepagesize"),
        thp=selected_choice(read_text(root / "sys/kernel/mm/transparent_hugepage/enabled")),
    )


# ---- pagemap -----------------------------------------------------------------------------------

PAGEMAP_PRESENT = 1 << 63
PAGEMAP_PFN_MASK = (1 << 55) - 1


@dataclass(frozen=True)
class PagemapInfo:
    readable: bool
    pfn_visible: bool
    reason: str | None  # why physical addresses cannot be had; None when they can


def decode_pagemap_entry(entry: int) -> tuple[bool, int]:
    """(present, PFN) of one 64-bit /proc/PID/pagemap entry (Documentation/admin-guide/mm)."""
    return bool(entry & PAGEMAP_PRESENT), entry & PAGEMAP_PFN_MASK


def _touched_page_address(buf: bytearray) -> int:
    """Virtual address of a page inside `buf`, written to so that it is mapped."""
    base = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    page = (base + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
    buf[page - base] = 1
    return page


def probe_pagemap() -> PagemapInfo:
    """Read this process's pagemap entry for a page it has touched. The kernel zeroes PFNs for
    readers without CAP_SYS_ADMIN, so a readable file is not enough: the PFN must be nonzero."""
    buf = bytearray(2 * mmap.PAGESIZE)
    address = _touched_page_address(buf)
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(address // mmap.PAGESIZE * 8)
            raw = pagemap.read(8)
    except OSError as exc:
        return PagemapInfo(False, False, f"/proc/self/pagemap unreadable: {exc.strerror}")
    if len(raw) != 8:
        return PagemapInfo(False, False, "/proc/self/pagemap returned a short read")
    present, pfn = decode_pagemap_entry(struct.unpack("=Q", raw)[0])
    if not present:
        return PagemapInfo(True, False, "the touched page is not present in pagemap")
    if pfn == 0:
        return PagemapInfo(True, False, "PFNs are hidden (reading them needs CAP_SYS_ADMIN)")
    return PagemapInfo(True, True, None)
