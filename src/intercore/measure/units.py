"""Sizes as people type them on the command line: 4K, 2MiB, 1G (binary units, matching the
native tools' parser in native/common/ic_common.h). The grammar itself is host.parse's."""

from __future__ import annotations

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
