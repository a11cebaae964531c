"""A resctrl tree in a temporary directory, and a `Resctrl` whose three system calls act on it
the way the kernel acts on /sys/fs/resctrl (Documentation/filesystems/resctrl.rst):

- mkdir creates a control group holding `schemata` (the default group's values) and `tasks`,
  and fails with ENOSPC once every CLOSID is taken;
- a write to `schemata` is parsed line by line and checked (known resource and domain, CBM
  within cbm_mask, contiguous, at least min_cbm_bits; MB within range), Intel MB percentages
  are rounded up to bandwidth_gran, and a rejected write fails with EINVAL after putting the
  reason into info/last_cmd_status;
- a write to `tasks` needs a live pid (ESRCH otherwise) and moves it out of other groups;
- rmdir removes the group with its files.

Used by tests/mitigate/test_resctrl.py and tests/campaign/test_enforce.py; no hardware here
has resctrl, so this is the kernel interface the code is written against.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from intercore.mitigate.bandwidth.resctrl import (
    AMD_MAX_UNITS,
    MB_AMD,
    MB_MBPS,
    Resctrl,
    format_schemata,
    mb_mode,
    parse_schemata,
)


@dataclass(frozen=True)
class Hardware:
    cbm_mask: int = 0x7FF          # 11 ways, as many Xeons have
    min_cbm_bits: int = 1
    num_closids: int = 16
    cdp: bool = False
    mb: bool = True
    min_bandwidth: int = 10
    bandwidth_gran: int = 10
    domains: tuple[str, ...] = ("0", "1")
    reject: str | None = None      # a schemata write fails with this status (e.g. a busy domain)


def build_tree(root: Path, hw: Hardware = Hardware(), *, mb_mode: str = "percent") -> Path:
    info = root / "info"
    caches = ("L3CODE", "L3DATA") if hw.cdp else ("L3",)
    for name in caches:
        d = info / name
        d.mkdir(parents=True)
        for f, v in (("cbm_mask", f"{hw.cbm_mask:x}"), ("min_cbm_bits", hw.min_cbm_bits),
                     ("num_closids", hw.num_closids), ("shareable_bits", "0"),
                     ("sparse_masks", "0")):
            (d / f).write_text(f"{v}\n")
    lines = "".join(format_schemata(name, {d: f"{hw.cbm_mask:x}" for d in hw.domains})
                    for name in caches)
    if hw.mb:
        d = info / "MB"
        d.mkdir(parents=True)
        for f, v in (("min_bandwidth", hw.min_bandwidth), ("bandwidth_gran", hw.bandwidth_gran),
                     ("num_closids", hw.num_closids), ("delay_linear", "1")):
            (d / f).write_text(f"{v}\n")
        full = {"percent": "100", MB_MBPS: str(2 ** 32 - 1), MB_AMD: str(AMD_MAX_UNITS)}[mb_mode]
        lines += format_schemata("MB", {d: full for d in hw.domains})
    (info / "last_cmd_status").write_text("ok\n")
    (root / "schemata").write_text(lines)
    (root / "tasks").write_text("")
    return root


class FakeKernel(Resctrl):
    """Resctrl on a tree from build_tree(), with kernel semantics for mkdir/rmdir/write."""

    def __init__(self, root: Path, hw: Hardware = Hardware(), *, vendor: str = "GenuineIntel",
                 mount_options: tuple[str, ...] = ("rw",)):
        super().__init__(root, vendor=vendor, mount_options=mount_options)
        self.hw = hw
        self.writes: list[tuple[str, str]] = []  # (path relative to root, text), in order

    @classmethod
    def on_new_tree(cls, root: Path, hw: Hardware = Hardware(), **kw) -> FakeKernel:
        kernel = cls(root, hw, **kw)
        build_tree(root, hw, mb_mode=mb_mode(kernel.vendor, kernel.mount_options))
        return kernel

    def _status(self, text: str) -> None:
        (self.root / "info" / "last_cmd_status").write_text(text + "\n")

    def _fail(self, code: int, status: str):
        self._status(status)
        raise OSError(code, os.strerror(code))

    def _mkdir(self, path: Path) -> None:
        if len(self.groups()) + 1 >= self.hw.num_closids:
            self._fail(errno.ENOSPC, "Out of CLOSIDs")
        os.mkdir(path)
        (path / "schemata").write_text((self.root / "schemata").read_text())
        (path / "tasks").write_text("")
        self._status("ok")

    def _rmdir(self, path: Path) -> None:
        shutil.rmtree(path)

    def _write_file(self, path: Path, text: str) -> None:
        self.writes.append((str(path.relative_to(self.root)), text))
        if path.name == "tasks":
            return self._move(path, int(text))
        current = parse_schemata(path.read_text())
        for line in text.splitlines():
            resource, _, values = line.partition(":")
            if resource not in current:
                self._fail(errno.EINVAL, f"Unknown or unsupported resource name '{resource}'")
            for item in values.split(";"):
                dom, _, value = item.partition("=")
                if dom not in current[resource]:
                    self._fail(errno.EINVAL, f"Unknown domain '{dom}'")
                current[resource][dom] = self._check(resource, value)
        if self.hw.reject:
            self._fail(errno.EINVAL, self.hw.reject)
        path.write_text("".join(format_schemata(r, v) for r, v in current.items()))
        self._status("ok")

    def _check(self, resource: str, value: str) -> str:
        if resource.startswith("L3"):
            cbm = int(value, 16)
            if cbm & ~self.hw.cbm_mask:
                self._fail(errno.EINVAL, f"Mask out of range: {value}")
            if cbm and (cbm + (cbm & -cbm)) & cbm:
                self._fail(errno.EINVAL, f"The mask {cbm:x} has non-consecutive 1-bits")
            if cbm.bit_count() < self.hw.min_cbm_bits:
                self._fail(errno.EINVAL, f"Need at least {self.hw.min_cbm_bits} bits in the "
                                         "mask")
            return f"{cbm:x}"
        bw = int(value)
        mode = self.mb_info().mode
        if mode == MB_AMD:
            if bw > AMD_MAX_UNITS:
                self._fail(errno.EINVAL, f"MB value {bw} out of range [0,{AMD_MAX_UNITS}]")
            return str(bw)
        if mode == MB_MBPS:
            return str(bw)
        if not self.hw.min_bandwidth <= bw <= 100:
            self._fail(errno.EINVAL, f"MB value {bw} out of range [{self.hw.min_bandwidth},100]")
        gran = self.hw.bandwidth_gran
        return str(-(-bw // gran) * gran)

    def _move(self, path: Path, pid: int) -> None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            self._fail(errno.ESRCH, f"No task {pid}")
        for group in self.groups():
            other = self.root / group / "tasks"
            if other != path:
                other.write_text("".join(f"{p}\n" for p in self.tasks(group) if p != pid))
        with open(path, "a") as f:
            f.write(f"{pid}\n")
        self._status("ok")
