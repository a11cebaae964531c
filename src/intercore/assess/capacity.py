"""Capacity against demand (AMC 20-193 MCP_Resource_Usage_4): the memory traffic each task
demands beside what the platform can carry, with all cores active. Demand is counted, so
where no counter of memory traffic exists (no PMU event of the CPU model, no resctrl MBM: a
VM like this development host) the section is refused with the reason of each missing
counter, never estimated: the latency probe sees contention, not bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..measure.bandwidth import events as bwevents, sources as bwsource
from .system import System

OBJECTIVE = "MCP_Resource_Usage_4"


def section(system: System, root: Path = Path("/")) -> dict[str, Any]:
    """The counters of memory traffic on the CPUs the task set runs on, and why the section is
    refused: without one no demand can be counted, and with one this version of assess does
    not count it yet (`intercore profile` and `intercore counters` do, one task at a time)."""
    cpus = sorted({t.cpu for t in system.taskset.tasks if t.cpu is not None})
    counters = {str(cpu): [s.to_dict() for s in
                           bwsource.perf_sources(bwevents.host_report(cpu, root))
                           + [bwsource.mbm_source(cpu, root)]] for cpu in cpus}
    found = sorted({s["name"] for per_cpu in counters.values() for s in per_cpu
                    if s["available"]})
    if not found:
        reasons = sorted({s["reason"] for per_cpu in counters.values() for s in per_cpu})
        refused = ("no counter of memory traffic on the CPUs the task set runs on ("
                   + "; ".join(reasons) + "): demand cannot be counted, and is not estimated")
    else:
        refused = (f"counters exist here ({', '.join(found)}), but this version of `intercore "
                   "assess` does not yet count each task's demand with them; `intercore "
                   "profile` does, one task at a time")
    return {"objective": OBJECTIVE, "refused": refused, "cpus": cpus, "counters": counters}
