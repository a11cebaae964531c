"""Which memory-traffic sources this host offers, each with the reason when it does not.

Three kinds, in the order the profiler prefers them:

- perf events of the CPU model's table (measure/bandwidth/events.py): uncore memory-controller
  counters first (they count the whole socket and are read without disturbing the profiled
  core), then core counters of the target CPU (reading a core counter of another CPU costs
  that CPU an interrupt per sample: fine at 1 ms, felt at 10 µs);
- resctrl MBM (`mbm_total_bytes` of the default group in the target CPU's L3 domain);
- the latency probe (measure/bandwidth/probe.py), always present, bandwidth only through a usable
  calibration;
- the kernel's page-fault counter of the profiled command (`sw:page-faults`), present
  wherever perf is: bytes of first-touched pages, which is real traffic (the kernel zeroes
  or copies each page) but only that part of it. Never chosen by default; it is what shows a
  command's allocation bursts on hosts whose hardware counts nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...host.sysfs import read_text
from . import events as bwevents
from .profile import Source

RESCTRL = Path("sys/fs/resctrl")


@dataclass(frozen=True)
class SourceStatus:
    name: str
    kind: str
    source: Source | None       # None: unavailable
    reason: str | None
    preference: int             # lower is preferred

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "available": self.source is not None,
                "reason": self.reason,
                "spec": self.source.spec if self.source else None,
                "bytes_per_count": self.source.bytes_per_count if self.source else None,
                "direction": self.source.direction if self.source else None}


def perf_sources(report: bwevents.EventReport) -> list[SourceStatus]:
    out = []
    reason = bwevents.no_model_reason(report)
    if reason:
        return [SourceStatus("perf", "perf", None, reason, 9)]
    for ev in report.events:
        name = f"perf:{ev.name}"
        pref = 0 if ev.event.scope == "package" else 2
        if ev.event.bytes is None:
            pref += 5  # counts, not bytes: shown, never chosen by default
        if ev.available:
            out.append(SourceStatus(name, "perf", Source(name, "perf", ev.source_spec(),
                                                         ev.event.bytes, ev.event.direction,
                                                         ev.event.note), None, pref))
        else:
            out.append(SourceStatus(name, "perf", None, ev.reason, pref))
    return out


def l3_domain(cpu: int, root: Path = Path("/")) -> str | None:
    """The id of the L3 cache of `cpu` (resctrl names its domains by it)."""
    base = root / f"sys/devices/system/cpu/cpu{cpu}/cache"
    try:
        indexes = sorted(base.glob("index*"))
    except OSError:
        return None
    for index in indexes:
        if read_text(index / "level") == "3":
            return read_text(index / "id")
    return None


def mbm_source(cpu: int, root: Path = Path("/")) -> SourceStatus:
    resctrl = root / RESCTRL
    name = "mbm:mbm_total_bytes"
    if not (resctrl / "info").is_dir():
        return SourceStatus(name, "mbm", None, "no resctrl mounted at /sys/fs/resctrl (this "
                            "CPU or kernel has no memory bandwidth monitoring, or it is not "
                            "mounted: mount -t resctrl resctrl /sys/fs/resctrl)", 1)
    features = (read_text(resctrl / "info/L3_MON/mon_features") or "").split()
    if "mbm_total_bytes" not in features:
        return SourceStatus(name, "mbm", None, "resctrl offers no mbm_total_bytes (info/L3_MON/"
                            "mon_features lacks it: no MBM on this CPU)", 1)
    domain = l3_domain(cpu, root)
    if domain is None:
        return SourceStatus(name, "mbm", None, f"CPU {cpu} has no L3 cache in sysfs to name "
                            "its MBM domain", 1)
    path = resctrl / f"mon_data/mon_L3_{int(domain):02d}/mbm_total_bytes"
    if not path.is_file():
        return SourceStatus(name, "mbm", None, f"{path} is missing", 1)
    return SourceStatus(name, "mbm", Source(name, "mbm", f"file:/{path.relative_to(root)}", 1.0,
                                            "both", f"resctrl MBM of the default group, L3 "
                                                    f"domain {domain}"), None, 1)


PAGE_FAULTS = Source("sw:page-faults", "software", "perf:1:2/task",
                     float(os.sysconf("SC_PAGE_SIZE")), "write",
                     "page faults of the profiled command x the base page size: the traffic of "
                     "first touches only (a transparent huge page counts as one page)")


def page_fault_source() -> SourceStatus:
    from ...host.perf import EventSpec, PERF_TYPE_SOFTWARE, probe_event, read_paranoid

    status = probe_event(EventSpec("page-faults", PERF_TYPE_SOFTWARE, 2), read_paranoid())
    if not status.available:
        return SourceStatus(PAGE_FAULTS.name, "software", None, status.reason, 8)
    return SourceStatus(PAGE_FAULTS.name, "software", PAGE_FAULTS, None, 8)


def host_sources(cpu: int, probe: Source, root: Path = Path("/")) -> list[SourceStatus]:
    """Every source for target CPU `cpu`, preferred first; `probe` is the probe's Source."""
    found = perf_sources(bwevents.host_report(cpu, root)) + [mbm_source(cpu, root)]
    found.append(SourceStatus("probe", "probe", probe, None, 3))
    found.append(page_fault_source())
    return sorted(found, key=lambda s: s.preference)


def choose(statuses: list[SourceStatus], wanted: str) -> SourceStatus:
    """`auto`: the preferred available byte source; else the source named `wanted`."""
    if wanted == "auto":
        return next(s for s in statuses if s.source is not None and s.kind != "software")
    for s in statuses:
        if s.name == wanted or (wanted == "mbm" and s.kind == "mbm"):
            return s
    known = ", ".join(s.name for s in statuses)
    from ...base.errors import InputError
    raise InputError(f"no source {wanted!r} (this host's: {known}; see intercore measure counters "
                     "list)", field="--source")
