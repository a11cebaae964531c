"""Linux resctrl: cache allocation (`L3:` CBMs) and memory-bandwidth allocation (`MB:`).

The boundary to the kernel is the `Resctrl` class, which only reads and writes files under the
resctrl mount (`/sys/fs/resctrl`, or a fake tree in the tests). Everything it decides is a pure
function here: how S colours become bits of the capacity bitmask, what an `MB:` value means on
this host (Intel and Arm MPAM percentages, the `mba_MBps` software controller, AMD's 1/8 GB/s
units), and what the kernel is expected to apply. After every write the schemata are read back,
so a report shows the value requested, the value written and the value the kernel applied; a
rejected write raises `ResctrlError` carrying `info/last_cmd_status`.

Reference: Documentation/filesystems/resctrl.rst (formerly x86/resctrl.rst) of the kernel.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import HostUnsupported
from ...host.cpuinfo import read_cpuinfo
from ...host.mounts import filesystem_supported, read_mounts
from ...host.sysfs import read_text

DEFAULT_ROOT = Path("/sys/fs/resctrl")
# Entries of a resctrl directory that are not control groups.
_NOT_GROUPS = {"info", "mon_groups", "mon_data"}

# AMD's MB: values count 1/8 GB/s (GB = 10^9 bytes), i.e. 125 MB/s; 2048 means unlimited
# (the kernel's MAX_MBA_BW_AMD).
AMD_UNIT_MBPS = 125
AMD_MAX_UNITS = 2048

MB_PERCENT = "percent"   # Intel MBA and Arm MPAM: a percentage of the peak bandwidth
MB_MBPS = "MBps"         # the mba_MBps software controller: a rate the kernel aims for
MB_AMD = "amd"           # AMD: an absolute rate in 1/8 GB/s


class ResctrlError(HostUnsupported):
    """The kernel refused a resctrl write; the message carries info/last_cmd_status."""


# ---- pure functions ----------------------------------------------------------------------------

def parse_schemata(text: str) -> dict[str, dict[str, str]]:
    """`"    L3:0=7ff;1=7ff\\n    MB:0=100;1=100"`
    -> {"L3": {"0": "7ff", "1": "7ff"}, "MB": ...}."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        resource, sep, rest = line.strip().partition(":")
        if not sep:
            continue
        domains = {}
        for item in rest.split(";"):
            dom, eq, value = item.strip().partition("=")
            if eq:
                domains[dom.strip()] = value.strip()
        out[resource.strip()] = domains
    return out


def format_schemata(resource: str, values: dict[str, str]) -> str:
    return f"{resource}:" + ";".join(f"{d}={v}" for d, v in values.items()) + "\n"


def cbm_bits(cbm_mask: int) -> list[int]:
    """Bit positions of the capacity bitmask the hardware implements, lowest first."""
    return [i for i in range(cbm_mask.bit_length()) if cbm_mask >> i & 1]


def colours_to_cbm(colour_mask: int, colours: int, cbm_mask: int) -> int:
    """Cache colours -> capacity bitmask: colour i of S takes CBM bits ⌊i·W/S⌋ … ⌊(i+1)·W/S⌋−1.

    W is the CBM width (ways). With W a multiple of S every colour is W/S ways; otherwise some
    colours get one way more, and contiguous colours still give a contiguous mask. S > W would
    leave colours without a way, so it is refused.
    """
    bits = cbm_bits(cbm_mask)
    width = len(bits)
    if colours > width:
        raise ValueError(f"{colours} colours cannot map onto a {width}-bit capacity bitmask")
    cbm = 0
    for colour in range(colours):
        if colour_mask >> colour & 1:
            for i in range(colour * width // colours, (colour + 1) * width // colours):
                cbm |= 1 << bits[i]
    return cbm


def cbm_problem(cbm: int, cbm_mask: int, min_cbm_bits: int, sparse: bool = False) -> str | None:
    """Why the kernel would refuse `cbm`, or None."""
    if cbm & ~cbm_mask:
        return f"CBM {cbm:#x} has bits outside cbm_mask {cbm_mask:#x}"
    if cbm.bit_count() < min_cbm_bits:
        return f"CBM {cbm:#x} has fewer than min_cbm_bits={min_cbm_bits} bits"
    low = cbm & -cbm
    if not sparse and cbm and (cbm + low) & cbm:
        return f"CBM {cbm:#x} is not contiguous and this CPU needs contiguous masks"
    return None


@dataclass(frozen=True)
class CacheInfo:
    """info/L3 (or info/L3DATA with code/data prioritisation)."""

    resources: tuple[str, ...]  # ("L3",) or ("L3CODE", "L3DATA") under CDP
    cbm_mask: int
    min_cbm_bits: int
    num_closids: int
    sparse_masks: bool

    @property
    def width(self) -> int:
        return len(cbm_bits(self.cbm_mask))


@dataclass(frozen=True)
class MbInfo:
    """info/MB, plus what its values mean here (`mode`)."""

    min_bandwidth: int
    bandwidth_gran: int
    num_closids: int
    mode: str  # MB_PERCENT | MB_MBPS | MB_AMD


@dataclass(frozen=True)
class MbSetting:
    """One budget as resctrl takes it: the value written and what the kernel will apply."""

    value: int            # written to MB:
    expected: int         # the value the kernel applies (Intel rounds up to bandwidth_gran)
    expected_mbps: int | None  # the applied rate in MB/s, when the unit is absolute
    note: str


def mb_setting(budget: int, unit: str, mb: MbInfo) -> MbSetting:
    """The `MB:` value for a budget in `unit` ("percent" or "MBps"); ValueError if impossible."""
    if mb.mode == MB_PERCENT:
        if unit != "percent":
            raise ValueError("this host's MB: takes percentages of the peak bandwidth; give "
                             "budgets in percent, or mount resctrl with -o mba_MBps")
        if not mb.min_bandwidth <= budget <= 100:
            raise ValueError(f"{budget}% is outside {mb.min_bandwidth}..100 (info/MB/"
                             "min_bandwidth)")
        gran = max(mb.bandwidth_gran, 1)
        applied = min(100, -(-budget // gran) * gran)  # the kernel rounds up to the granularity
        return MbSetting(budget, applied, None,
                         "percentage of peak bandwidth, applied per core as a request delay")
    if unit != "MBps":
        raise ValueError("this host's MB: takes an absolute rate (mba_MBps or AMD); give "
                         "budgets in MBps")
    if mb.mode == MB_MBPS:
        return MbSetting(budget, budget, budget,
                         "MBps target of the kernel's software controller (adjusts about "
                         "once a second; counts 2^20-byte units)")
    units = budget // AMD_UNIT_MBPS  # rounded down: never a looser limit than asked for
    if units < 1:
        raise ValueError(f"{budget} MBps is below AMD's granularity of {AMD_UNIT_MBPS} MBps "
                         "(1/8 GB/s)")
    if units > AMD_MAX_UNITS:
        raise ValueError(f"{budget} MBps exceeds AMD's largest value {AMD_MAX_UNITS} "
                         f"({AMD_MAX_UNITS * AMD_UNIT_MBPS} MBps)")
    return MbSetting(units, units, units * AMD_UNIT_MBPS, "AMD units of 1/8 GB/s")


def mb_mode(vendor: str | None, mount_options: tuple[str, ...]) -> str:
    if vendor in ("AuthenticAMD", "HygonGenuine"):
        return MB_AMD
    return MB_MBPS if "mba_MBps" in mount_options else MB_PERCENT


# ---- the kernel boundary -----------------------------------------------------------------------

def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return None if text is None else int(text, base)
    except ValueError:
        return None


class Resctrl:
    """A mounted resctrl filesystem at `root`."""

    def __init__(self, root: Path = DEFAULT_ROOT, *, vendor: str | None = None,
                 mount_options: tuple[str, ...] = ()):
        self.root = Path(root)
        self.vendor = vendor
        self.mount_options = tuple(mount_options)

    @classmethod
    def from_system(cls, root: Path = DEFAULT_ROOT, *, vendor: str | None = None,
                    mount_options: tuple[str, ...] | None = None) -> Resctrl:
        """The resctrl at `root`; mount options and CPU vendor from the live system unless
        given. HostUnsupported (with what to do) when nothing is mounted there."""
        root = Path(root)
        if not (root / "info").is_dir():
            raise HostUnsupported(_absent_reason(root))
        if mount_options is None:
            mount_options = next((m.options for m in read_mounts(Path("/"))
                                  if m.fstype == "resctrl" and Path(m.path) == root), ())
        if vendor is None:
            vendor = read_cpuinfo(Path("/")).vendor
        return cls(root, vendor=vendor, mount_options=tuple(mount_options))

    # -- info/
    def cache_info(self) -> CacheInfo | None:
        info = self.root / "info"
        resources = ("L3",) if (info / "L3").is_dir() else \
            ("L3CODE", "L3DATA") if (info / "L3DATA").is_dir() else ()
        if not resources:
            return None
        d = info / resources[-1]
        mask = _int(read_text(d / "cbm_mask"), 16)
        if mask is None:
            return None
        return CacheInfo(resources, mask, _int(read_text(d / "min_cbm_bits")) or 1,
                         _int(read_text(d / "num_closids")) or 1,
                         read_text(d / "sparse_masks") == "1")

    def mb_info(self) -> MbInfo | None:
        d = self.root / "info" / "MB"
        if not d.is_dir():
            return None
        return MbInfo(_int(read_text(d / "min_bandwidth")) or 0,
                      _int(read_text(d / "bandwidth_gran")) or 1,
                      _int(read_text(d / "num_closids")) or 1,
                      mb_mode(self.vendor, self.mount_options))

    def last_cmd_status(self) -> str:
        return read_text(self.root / "info" / "last_cmd_status") or "(no last_cmd_status)"

    def domains(self, resource: str) -> list[str]:
        """Domain ids of `resource`, from the default group's schemata."""
        return list(parse_schemata(read_text(self.root / "schemata") or "").get(resource, {}))

    def groups(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and p.name not in _NOT_GROUPS)

    # -- groups
    def create_group(self, name: str) -> Path:
        path = self.root / name
        try:
            self._mkdir(path)
        except OSError as exc:
            hint = " (every CLOSID is in use)" if exc.errno == errno.ENOSPC else ""
            raise self._failure(f"mkdir {path}{hint}", exc) from None
        return path

    def remove_group(self, name: str) -> None:
        """Remove a control group; its tasks fall back to the default group."""
        try:
            self._rmdir(self.root / name)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._failure(f"rmdir {self.root / name}", exc) from None

    def write_schemata(self, group: str, text: str) -> None:
        self._write(self.root / group / "schemata", text)

    def read_schemata(self, group: str) -> dict[str, dict[str, str]]:
        return parse_schemata(read_text(self.root / group / "schemata") or "")

    def add_task(self, group: str, pid: int) -> None:
        """Move thread `pid` into `group` (its later children follow it there)."""
        self._write(self.root / group / "tasks", f"{pid}\n")

    def tasks(self, group: str) -> list[int]:
        text = read_text(self.root / group / "tasks") or ""
        return [int(t) for t in text.split() if t.isdigit()]

    def _write(self, path: Path, text: str) -> None:
        try:
            self._write_file(path, text)
        except OSError as exc:
            raise self._failure(f"writing {text.strip()!r} to {path}", exc) from None

    # The only system calls; a test's fake tree overrides them to act as the kernel does.
    def _mkdir(self, path: Path) -> None:
        os.mkdir(path)

    def _rmdir(self, path: Path) -> None:
        os.rmdir(path)

    def _write_file(self, path: Path, text: str) -> None:
        # One write() per call: the kernel parses each write on its own.
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def _failure(self, what: str, exc: OSError) -> ResctrlError:
        return ResctrlError(f"resctrl refused {what}: {exc.strerror}; "
                            f"info/last_cmd_status: {self.last_cmd_status()}")


def _absent_reason(root: Path) -> str:
    if root != DEFAULT_ROOT:
        return f"no resctrl mounted at {root}"
    if filesystem_supported(Path("/"), "resctrl"):
        return (f"resctrl is not mounted at {root} (the kernel supports it: "
                f"mount -t resctrl resctrl {root})")
    return "this host has no resctrl (the kernel or CPU offers no cache/bandwidth allocation)"
