"""Pure parsers for the text formats the kernel uses in sysfs and procfs."""

from __future__ import annotations

import re

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# Linux builds for at most 8192 CPUs (NR_CPUS); a larger id is a typo, and expanding a range
# up to it would take memory without bound.
MAX_CPU_ID = 8191
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """`0-3,8,10-11` -> (0, 1, 2, 3, 8, 10, 11). An empty list (no CPU) is valid."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, sep, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if sep else lo
        except ValueError:
            raise ValueError(f"bad CPU list {text.strip()!r}: {part!r} is not N or N-M") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"bad CPU list {text.strip()!r}: range {part!r} is empty or negative")
        if hi > MAX_CPU_ID:
            raise ValueError(f"bad CPU list {text.strip()!r}: CPU {hi} is beyond the largest "
                             f"id Linux supports ({MAX_CPU_ID})")
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def format_cpu_list(cpus) -> str:
    """Inverse of parse_cpu_list, with runs folded into ranges as the kernel prints them."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def parse_size(text: str) -> int:
    """Sizes as sysfs/procfs print them ("48K", "2048K", "1M", "2048 kB") and as people type
    them ("4MiB", "1G"), binary units, in bytes."""
    match = _SIZE_RE.match(str(text))
    if not match:
        raise ValueError(f"bad size {text.strip()!r}")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]


def kernel_version(release: str) -> tuple[int, int]:
    """`6.18.44-fc-v669` -> (6, 18); (0, 0) when the release string is not N.M..."""
    match = re.match(r"^(\d+)\.(\d+)", release.strip())
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def human_size(size: int | None) -> str:
    """Bytes as the largest exact binary unit: 49152 -> "48 KiB", 272629760 -> "260 MiB"."""
    if size is None:
        return "?"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def proc_stat_steal(text: str) -> dict[int, int]:
    """Per-CPU steal from /proc/stat, in USER_HZ ticks: the eighth number of each `cpuN` line,
    the time the hypervisor ran something else while this CPU had work. A CPU line without
    it (a kernel older than 2.6.11) is left out, so the caller can tell "none" from "0"."""
    steal: dict[int, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        fields = rest.split()
        if len(fields) >= 8:
            steal[int(name[3:])] = int(fields[7])
    return steal
