"""Tegra X1 memory-controller throttling of the integrated GPU (paper 002 §6.3).

The Tegra X1's memory controller can throttle the clients on its arbitration ring 1 (the
GPU among them) at 32 levels: MC_EMEM_ARB_RING1_THROTTLE takes the level in bits 4:0 (and
20:16, the level while over the outstanding-request limit), MC_EMEM_ARB_OUTSTANDING_REQ the
limit in bits 8:0. Stock L4T kernels expose neither; RT-Gang++ and BandWatch load a small
module that does, through debugfs:

    /sys/kernel/debug/throttle/throttle         write a level 0..31
    /sys/kernel/debug/throttle/limit            write an outstanding-request limit 0..511
    /sys/kernel/debug/throttle/throttleAmount   the level last written (read back)
    /sys/kernel/debug/throttle/throttleLimit    the limit last written

This module drives exactly that interface and says plainly why it cannot elsewhere: not a
Tegra X1, debugfs not mounted, or the module not loaded. Every write is read back. The
paths are fixed below the debugfs mount; nothing here follows a path given by the user.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import HostUnsupported, InputError
from ...host.sysfs import read_text

DEBUGFS = Path("/sys/kernel/debug")
THROTTLE_DIR = "throttle"
LEVELS = 32          # 5-bit throttle level
LIMITS = 512         # 9-bit outstanding-request limit
TEGRA_X1 = "nvidia,tegra210"


@dataclass(frozen=True)
class ThrottleState:
    level: int | None
    limit: int | None

    def to_dict(self) -> dict:
        return {"level": self.level, "limit": self.limit}


def soc_compatible(fs_root: Path = Path("/")) -> list[str]:
    """The device tree's `compatible` strings (NUL-separated), e.g. nvidia,p3450-0000."""
    try:
        raw = (fs_root / "proc/device-tree/compatible").read_bytes()
    except OSError:
        return []
    return [s.decode(errors="replace") for s in raw.split(b"\0") if s]


class TegraThrottle:
    """The throttle module's debugfs directory."""

    def __init__(self, directory: Path):
        self.directory = directory

    @classmethod
    def from_system(cls, fs_root: Path = Path("/")) -> TegraThrottle:
        compatible = soc_compatible(fs_root)
        if TEGRA_X1 not in compatible:
            what = ", ".join(compatible) if compatible else "no device tree"
            raise HostUnsupported(f"memory-controller throttling is a Tegra X1 feature "
                                  f"({TEGRA_X1}); this machine is {what}")
        debugfs = fs_root / DEBUGFS.relative_to("/")
        if not debugfs.is_dir() or not any(debugfs.iterdir()):
            raise HostUnsupported(f"debugfs is not mounted at {DEBUGFS} (mount -t debugfs none "
                                  f"{DEBUGFS})")
        directory = debugfs / THROTTLE_DIR
        if not (directory / "throttle").exists():
            raise HostUnsupported(f"{DEBUGFS / THROTTLE_DIR} is absent: load the memory-"
                                  "controller throttle module of RT-Gang++ / BandWatch, which "
                                  "programs MC_EMEM_ARB_RING1_THROTTLE")
        return cls(directory)

    def state(self) -> ThrottleState:
        def value(name: str) -> int | None:
            text = read_text(self.directory / name)
            try:
                return None if text is None else int(text, 0)
            except ValueError:
                return None
        return ThrottleState(value("throttleAmount"), value("throttleLimit"))

    def set(self, level: int | None = None, limit: int | None = None) -> ThrottleState:
        """Write the limit first (it arms ring-1 arbitration), then the level; read both
        back. HostUnsupported when the module does not take them."""
        if level is not None and not 0 <= level < LEVELS:
            raise InputError(f"must be 0..{LEVELS - 1}", field="--level")
        if limit is not None and not 0 <= limit < LIMITS:
            raise InputError(f"must be 0..{LIMITS - 1}", field="--limit")
        if limit is not None:
            self._write("limit", limit)
        if level is not None:
            self._write("throttle", level)
        got = self.state()
        for name, asked, read in (("level", level, got.level), ("limit", limit, got.limit)):
            if asked is not None and read != asked:
                raise HostUnsupported(f"the throttle module reads back {name} {read}, not "
                                      f"{asked}")
        return got

    def _write(self, name: str, value: int) -> None:
        path = self.directory / name
        try:
            self._write_file(path, f"{value}\n")
        except OSError as exc:
            raise HostUnsupported(f"cannot write {value} to {path}: {exc.strerror}") from None

    # The only system call; the tests' fake module overrides it to act as the module does.
    def _write_file(self, path: Path, text: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
