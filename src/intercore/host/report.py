"""Everything `intercore doctor` knows about the host, as one `HostReport`, plus the
plain-language warnings that tell a user what the missing pieces cost them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cgroups import CgroupInfo, read_cgroups
from .features import (HugePageInfo, PagemapInfo, ResctrlInfo, RtInfo, probe_pagemap,
                       read_hugepages, read_resctrl, read_rt)
from ..base.parse import format_cpu_list, human_size
from .perf import CONTROL_EVENT, EventStatus, probe_events
from .sysfs import kernel_release, read_text
from .topology import Cache, Topology, default_placement, llc, read_topology, shared_caches


@dataclass(frozen=True)
class HostReport:
    kernel_release: str | None
    arch: str
    topology: Topology
    cgroups: CgroupInfo
    perf: tuple[EventStatus, ...]
    resctrl: ResctrlInfo
    rt: RtInfo
    hugepages: HugePageInfo
    pagemap: PagemapInfo

    def fingerprint(self) -> str:
        return fingerprint(self.topology, self.kernel_release)

    @property
    def warnings(self) -> list[str]:
        return host_warnings(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint(),
            "kernel_release": self.kernel_release,
            "arch": self.arch,
            "cpu": _topology_dict(self.topology),
            "placement": _placement_dict(self.topology),
            "cgroups": _plain(self.cgroups),
            "perf": [_plain(e) for e in self.perf],
            "resctrl": {**_plain(self.resctrl), "status": self.resctrl.status},
            "rt": {**_plain(self.rt), "throttled_us": self.rt.throttled_us},
            "hugepages": _plain(self.hugepages),
            "pagemap": _plain(self.pagemap),
        }


def host_report(root: Path = Path("/")) -> HostReport:
    topology = read_topology(root)
    return HostReport(
        kernel_release=kernel_release(root),
        arch=read_text(root / "proc/sys/kernel/arch") or platform.machine(),
        topology=topology,
        cgroups=read_cgroups(root),
        perf=probe_events(root),
        resctrl=read_resctrl(root, topology.flags),
        rt=read_rt(root),
        hugepages=read_hugepages(root),
        pagemap=probe_pagemap(),
    )


# ---- serialisation -----------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """Dataclasses, tuples and frozensets as JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(_plain(v) for v in value)
    return value


def cache_dict(cache: Cache) -> dict[str, Any]:
    return {**_plain(cache), "shared_cpu_list": format_cpu_list(cache.shared_cpus)}


def _topology_dict(topo: Topology) -> dict[str, Any]:
    return {
        "model_name": topo.model_name,
        "vendor": topo.vendor,
        "hypervisor": topo.hypervisor,
        "online": list(topo.online_cpus),
        "cpus": [{"id": c.id, "online": c.online, "core_id": c.core_id,
                  "package_id": c.package_id} for c in topo.cpus],
        "caches": [cache_dict(c) for c in topo.caches()],
    }


def _placement_dict(topo: Topology) -> dict[str, Any] | None:
    if not topo.online_cpus:
        return None
    placement = default_placement(topo)
    return {"victim": placement.victim, "aggressors": list(placement.aggressors),
            "note": placement.note}


def fingerprint(topo: Topology, kernel: str | None) -> str:
    """Stable id of a host configuration for the results store: CPU model, cache hierarchy,
    kernel release and online CPU count. Measurements taken under different ids are not
    comparable without saying so."""
    identity = {
        "model_name": topo.model_name,
        "kernel": kernel,
        "online_cpus": len(topo.online_cpus),
        "caches": [[c.level, c.type, c.size, c.ways, c.sets, c.line, list(c.shared_cpus)]
                   for c in topo.caches()],
    }
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- warnings ----------------------------------------------------------------------------------

def _vm_warning(topo: Topology) -> list[str]:
    if topo.hypervisor is None:
        return []
    cache = llc(topo)
    shared = f"the L{cache.level} ({human_size(cache.size)})" if cache else "the last-level cache"
    name = "" if topo.hypervisor == "unknown" else f" ({topo.hypervisor})"
    return [f"virtual machine{name}: {shared} is shared with other tenants; "
            "cross-core interference may come and go"]


def _perf_warnings(events: tuple[EventStatus, ...]) -> list[str]:
    hardware = [e for e in events if e.name != CONTROL_EVENT]
    missing = [e for e in hardware if not e.available]
    if not missing:
        return []
    reasons = sorted({e.reason for e in missing if e.reason})
    if len(missing) == len(hardware):
        if any("no PMU" in r for r in reasons):
            return ["no PMU: counters unavailable, CPU time and wall time are used"]
        return [f"hardware counters unavailable ({'; '.join(reasons)}): "
                "CPU time and wall time are used"]
    names = ", ".join(e.name for e in missing)
    return [f"perf events unavailable: {names} ({'; '.join(reasons)})"]


def _resctrl_warning(resctrl: ResctrlInfo) -> list[str]:
    if resctrl.mount:
        return []
    if resctrl.kernel_support:
        return [f"resctrl {resctrl.status}: cache/bandwidth partitioning is off until it is"]
    return ["no resctrl: cache/bandwidth partitioning cannot be enforced on this host"]


def _rt_warnings(rt: RtInfo) -> list[str]:
    found = []
    if not rt.fifo_ok:
        found.append(f"no real-time priority ({rt.reason}): the victim competes with "
                     "ordinary tasks, so scheduler noise adds to its latency")
    if rt.throttled_us:
        found.append(f"RT throttling is on (sched_rt_runtime_us={rt.rt_runtime_us} of "
                     f"{rt.rt_period_us}): a spinning SCHED_FIFO task is stopped for "
                     f"{rt.throttled_us} us each period, which shows up as latency spikes")
    return found


def _topology_warnings(topo: Topology) -> list[str]:
    online = topo.online_cpus
    if len(online) < 2:
        note = default_placement(topo).note if online else None  # one CPU: says so
        return [note or "no online CPU found in sysfs"]
    if not any(len(set(c.shared_cpus) & set(online)) > 1 for c in shared_caches(topo)):
        return ["no cache is shared between online CPUs: interference can only come "
                "through the memory bus and DRAM"]
    return []


def _other_warnings(report: HostReport) -> list[str]:
    found = []
    if report.cgroups.freezer is None:
        found.append("no cgroup freezer: aggressors cannot be paused, only killed")
    if not report.pagemap.pfn_visible:
        found.append(f"no physical addresses ({report.pagemap.reason}): page colouring and "
                     "DRAM bank mapping are unavailable")
    if not report.hugepages.nr_hugepages and report.hugepages.thp == "never":
        found.append("no huge pages (0 hugetlb pages, THP never): TLB misses add to what "
                     "large buffers measure")
    return found


def host_warnings(report: HostReport) -> list[str]:
    return [*_vm_warning(report.topology), *_topology_warnings(report.topology),
            *_perf_warnings(report.perf), *_resctrl_warning(report.resctrl),
            *_rt_warnings(report.rt), *_other_warnings(report)]
