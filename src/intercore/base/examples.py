"""The checkout's examples/ folder, which the demo's tours use: in the working directory
(`make demo` runs in the checkout, with intercore installed into .venv), else next to src/
when running from a source tree. An installed package alone carries no examples."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def example(relative: str | Path, what: str) -> Path:
    """examples/`relative` (a file, or a folder), or an error naming `what` is missing."""
    relative = Path("examples") / relative
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (base / relative).exists():
            return base / relative
    raise InputError(f"{what} ({relative}) is not here; run the demo from the intercore "
                     "checkout (as `make demo` does)")
