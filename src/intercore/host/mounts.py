"""/proc/mounts, parsed once for cgroups and resctrl."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .sysfs import read_text


@dataclass(frozen=True)
class Mount:
    source: str
    path: str
    fstype: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in paths as \ooo octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> tuple[Mount, ...]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        mounts.append(Mount(_unescape(fields[0]), _unescape(fields[1]), fields[2],
                            tuple(fields[3].split(","))))
    return tuple(mounts)


def read_mounts(root: Path) -> tuple[Mount, ...]:
    return parse_mounts(read_text(root / "proc/mounts") or "")


def filesystem_supported(root: Path, fstype: str) -> bool:
    """Whether the running kernel knows `fstype` (built in or loaded) per /proc/filesystems."""
    text = read_text(root / "proc/filesystems") or ""
    return any(line.split()[-1:] == [fstype] for line in text.splitlines())
