"""Sizes and durations as people type them: 4K, 2MiB, 1G (binary units, matching the native
tools' parser in native/common/ic_common.h; the size grammar itself is base.parse's), and
100ms, 1.5s, 250us."""

from __future__ import annotations

import math
import os
import re
from fractions import Fraction

from .errors import InputError
from .parse import human_size
from .parse import parse_size as _parse_size


def parse_size(text: str, *, field: str) -> int:
    """A user-given size; bad or zero input is an InputError naming `field`."""
    try:
        value = _parse_size(text)
    except ValueError:
        raise InputError(f"cannot parse size {text!r} (examples: 4096, 32K, 4MiB, 1G)",
                         field=field) from None
    if value <= 0:
        raise InputError(f"size {text!r} must be positive", field=field)
    return value


def memory_bytes() -> int:
    """Physical memory of this host: no workload can be larger."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def workload_size(text: str, *, field: str) -> int:
    """A working-set size: a size (parse_size) that fits in this host's memory; a larger
    one would fail only once the native tool tries to allocate it, mid-measurement."""
    value = parse_size(text, field=field)
    memory = memory_bytes()
    if value > memory:
        raise InputError(f"size {text!r} is larger than this host's memory "
                         f"({memory / 2**30:.1f} GiB)", field=field)
    return value


def size_arg(n: int) -> str:
    """A size written so that parse_size reads back exactly n ("8MiB", "1536B")."""
    return human_size(n).replace(" ", "")


# The native tools' duration grammar (native/common/ic_parse.c), with the unit made mandatory:
# in a file read months later, "100" is a bug waiting to happen.
_UNIT_NS = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000,
            "h": 3_600_000_000_000}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s|m|h)$")
# The native tools keep nanoseconds in 64 bits; a year is beyond anything measured or waited.
MAX_DURATION_NS = 366 * 24 * _UNIT_NS["h"]


def parse_duration_ns(text: str) -> int:
    """`100ms` -> 100_000_000; `1.5s`, `250us`, `2m` too. ValueError names the grammar."""
    match = _DURATION.match(str(text).strip()) if not isinstance(text, bool) else None
    if not match:
        raise ValueError(f"{text!r} is not a duration (examples: 100ms, 1.5s, 250us)")
    ns = Fraction(match.group(1)) * _UNIT_NS[match.group(2)]
    if ns.denominator != 1:
        raise ValueError(f"{text!r} is finer than a nanosecond")
    if ns > MAX_DURATION_NS:
        raise ValueError(f"{text!r} is longer than a year")
    return int(ns)


def duration_text(ns: int) -> str:
    """ns in the largest unit that writes it exactly: 1_000_000 -> "1ms" (parse_duration_ns
    reads it back)."""
    for unit in ("h", "m", "s", "ms", "us"):
        if ns % _UNIT_NS[unit] == 0:
            return f"{ns // _UNIT_NS[unit]}{unit}"
    return f"{ns // 1000}.{ns % 1000:03d}".rstrip("0") + "us"


def duration(text: str, *, field: str, lo_ns: int = 0, hi_ns: int = MAX_DURATION_NS) -> int:
    """A user-given duration in ns within [lo_ns, hi_ns]; bad input is an InputError naming
    `field`."""
    try:
        ns = parse_duration_ns(text)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None
    if not lo_ns <= ns <= hi_ns:
        raise InputError(f"{text!r} is outside {duration_text(lo_ns)} .. "
                         f"{duration_text(hi_ns)}", field=field)
    return ns


def max_freeze(text: str, *, field: str) -> str:
    """The monitor's freeze cap as ic-monitor reads it: a share of the period in (0%, 100%],
    a duration above 0, or none. Checked here so that a typo fails before any run starts."""
    text = str(text).strip()
    if text == "none":
        return text
    if text.endswith("%"):
        try:
            share = float(text[:-1])
        except ValueError:
            share = math.nan
        if not 0 < share <= 100:
            raise InputError(f"{text!r} is not a share in (0%, 100%]", field=field)
        return text
    duration(text, field=field, lo_ns=1)
    return text
