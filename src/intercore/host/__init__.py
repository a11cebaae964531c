"""What this host can show: CPU/cache topology, cgroups, perf counters, resctrl, RT
scheduling, huge pages and pagemap. Reading the system lives in the `read_*`/`probe_*`
functions (each takes `root` for tests); the rest are pure functions of what they return."""

from .report import HostReport, fingerprint, host_report
from .topology import (Cache, Cpu, Placement, Topology, default_placement, largest_private,
                       llc, private_caches, read_topology, shared_caches, validate_cpu)

__all__ = [
    "Cache", "Cpu", "HostReport", "Placement", "Topology", "default_placement", "fingerprint",
    "host_report", "largest_private", "llc", "private_caches", "read_topology",
    "shared_caches", "validate_cpu",
]
