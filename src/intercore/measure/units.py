"""Sizes and durations as people type them: 4K, 2MiB, 1G (binary units, matching the native
tools' parser in native/common/ic_common.h; the size grammar itself is host.parse's), and
100ms, 1.5s, 250us."""

from __future__ import annotations

import re
from fractions import Fraction

from ..errors import InputError
from ..host.parse import human_size
from ..host.parse import parse_size as _parse_size


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


def size_arg(n: int) -> str:
    """A size written so that parse_size reads back exactly n ("8MiB", "1536B")."""
    return human_size(n).replace(" ", "")


# The native tools' duration grammar (native/common/ic_parse.c), with the unit made mandatory:
# in a file read months later, "100" is a bug waiting to happen.
_UNIT_NS = {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000,
            "h": 3_600_000_000_000}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s|m|h)$")


def parse_duration_ns(text: str) -> int:
    """`100ms` -> 100_000_000; `1.5s`, `250us`, `2m` too. ValueError names the grammar."""
    match = _DURATION.match(str(text).strip()) if not isinstance(text, bool) else None
    if not match:
        raise ValueError(f"{text!r} is not a duration (examples: 100ms, 1.5s, 250us)")
    ns = Fraction(match.group(1)) * _UNIT_NS[match.group(2)]
    if ns.denominator != 1:
        raise ValueError(f"{text!r} is finer than a nanosecond")
    return int(ns)


def duration(text: str, *, field: str) -> int:
    """A user-given duration in ns; bad input is an InputError naming `field`."""
    try:
        return parse_duration_ns(text)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None
