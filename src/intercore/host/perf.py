"""Which perf events this process can open, found by calling perf_event_open for each.

A real open is the only reliable test: the PMU may be missing (most VMs), hidden by the
hypervisor, or blocked by perf_event_paranoid, and each needs a different fix."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from .sysfs import read_int

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_HW_CACHE = 3

PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_COUNT_HW_CACHE_REFERENCES = 2
PERF_COUNT_HW_CACHE_MISSES = 3
PERF_COUNT_SW_TASK_CLOCK = 1

PERF_COUNT_HW_CACHE_L1D = 0
PERF_COUNT_HW_CACHE_LL = 2
PERF_COUNT_HW_CACHE_OP_READ = 0
PERF_COUNT_HW_CACHE_RESULT_MISS = 1

# perf_event_attr.flags bits (the C struct declares them as one u64 of bitfields).
ATTR_DISABLED = 1 << 0
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6

PERF_ATTR_SIZE_VER5 = 112

SYSCALL_NUMBERS = {"x86_64": 298, "aarch64": 241, "arm64": 241, "armv7l": 364, "armv6l": 364,
                   "riscv64": 241}


class PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (linux/perf_event.h)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved_2", ctypes.c_uint16),
    ]


def hw_cache_config(cache: int, op: int, result: int) -> int:
    return cache | (op << 8) | (result << 16)


@dataclass(frozen=True)
class EventSpec:
    name: str
    type: int
    config: int


EVENTS = (
    EventSpec("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    EventSpec("instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
    EventSpec("cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES),
    EventSpec("cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES),
    EventSpec("L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
              hw_cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                              PERF_COUNT_HW_CACHE_RESULT_MISS)),
    EventSpec("LLC-load-misses", PERF_TYPE_HW_CACHE,
              hw_cache_config(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                              PERF_COUNT_HW_CACHE_RESULT_MISS)),
    # A software event needs no PMU: if it fails too, perf events as a whole are unusable.
    EventSpec("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK),
)
CONTROL_EVENT = "task-clock"


@dataclass(frozen=True)
class EventStatus:
    name: str
    available: bool
    reason: str | None  # why it cannot be opened; None when available


def read_paranoid(root: Path = Path("/")) -> int | None:
    return read_int(root / "proc/sys/kernel/perf_event_paranoid")


def reason_for_errno(err: int, paranoid: int | None) -> str:
    if err in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        return "not supported by this CPU or hypervisor (no PMU)"
    if err in (errno.EACCES, errno.EPERM):
        level = "?" if paranoid is None else paranoid
        return f"perf_event_paranoid={level} forbids it"
    if err == errno.ENOSYS:
        return "kernel built without perf events"
    return f"perf_event_open failed: {os.strerror(err)} (errno {err})"


def _attr(spec: EventSpec) -> PerfEventAttr:
    attr = PerfEventAttr()
    attr.type = spec.type
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = spec.config
    attr.flags = ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV
    return attr


def open_errno(spec: EventSpec, syscall_number: int) -> int:
    """0 when `spec` opens for this process on any CPU, else the errno. The fd is closed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = _attr(spec)
    fd = libc.syscall(ctypes.c_long(syscall_number), ctypes.byref(attr), ctypes.c_int(0),
                      ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def probe_event(spec: EventSpec, paranoid: int | None, machine: str | None = None) -> EventStatus:
    machine = machine or platform.machine()
    number = SYSCALL_NUMBERS.get(machine)
    if number is None:
        return EventStatus(spec.name, False, f"perf_event_open is not wired up for {machine} "
                                             "in intercore")
    err = open_errno(spec, number)
    if err == 0:
        return EventStatus(spec.name, True, None)
    return EventStatus(spec.name, False, reason_for_errno(err, paranoid))


def probe_events(root: Path = Path("/")) -> tuple[EventStatus, ...]:
    paranoid = read_paranoid(root)
    return tuple(probe_event(spec, paranoid) for spec in EVENTS)
