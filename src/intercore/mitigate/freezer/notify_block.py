"""The regions a periodic runner published in its notification block (docs/native-contract.md,
"Notification block" and "Region windows"), read from the file so that `--window-region`
names are checked before a monitor starts."""

from __future__ import annotations

import struct
from pathlib import Path

from ...base.errors import InputError

MAGIC = b"ICN1"
VERSION = 1
STATE_INIT = 0
NREGIONS_AT = 104
NAMES_AT = 128
MAX_REGIONS = 16
NAME_LEN = 48
SIZE = 4096


def published_regions(path: str | Path) -> tuple[str, ...] | None:
    """The region names by id ("" for an id the runner named none) of the runner that
    initialised the block; () when its work has no markers; None when no runner has
    initialised it yet (nothing to check against)."""
    data = Path(path).read_bytes()
    if len(data) != SIZE or data[:4] != MAGIC or struct.unpack_from("<I", data, 4)[0] != VERSION:
        return None
    if struct.unpack_from("<I", data, 16)[0] == STATE_INIT:
        return None
    count = min(struct.unpack_from("<I", data, NREGIONS_AT)[0], MAX_REGIONS)
    names = (data[NAMES_AT + i * NAME_LEN:NAMES_AT + (i + 1) * NAME_LEN] for i in range(count))
    return tuple(n.split(b"\0", 1)[0].decode(errors="replace") for n in names)


def check_window_regions(path: str | Path, wanted: tuple[str, ...]) -> bool:
    """Raises InputError (exit 2) for a name the running task does not publish; returns
    False when its work has no markers at all (the monitor then follows its releases)."""
    regions = published_regions(path)
    if regions is None or not wanted:
        return True
    if not any(regions):
        return False
    named = [r for r in regions if r]
    for name in wanted:
        if name not in named:
            raise InputError(f"the task publishing {path} has no region {name!r} (its "
                             f"regions: {', '.join(named)})", field="--window-region")
    return True
