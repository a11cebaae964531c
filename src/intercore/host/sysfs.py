"""Small readers for one-value kernel files. A missing or unreadable file is None, never a crash:
arm64 boards, containers and older kernels each leave out different files."""

from __future__ import annotations

from pathlib import Path


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def kernel_release(root: Path) -> str | None:
    return read_text(root / "proc/sys/kernel/osrelease")
