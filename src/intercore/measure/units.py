"""Sizes and durations as people type them: 4K, 2MiB, 1G; 500ms, 10s, 2m.

Binary units throughout, matching the native tools' parser (native/common/ic_common.h).
"""

from __future__ import annotations

import re

from ..errors import InputError

_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str, *, field: str) -> int:
    m = _SIZE.match(str(text))
    if not m or (m.group(3) and m.group(3).lower() not in ("b", "ib")):
        raise InputError(f"cannot parse size {text!r} (examples: 4096, 32K, 4MiB, 1G)",
                         field=field)
    value = int(m.group(1)) * _SCALE[m.group(2).upper()]
    if value <= 0:
        raise InputError(f"size {text!r} must be positive", field=field)
    return value


def format_size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 1024 or 1) == 0:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"
