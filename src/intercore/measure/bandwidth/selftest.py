"""Does each counter count memory traffic here? Ask it under our own bw aggressor.

For every hardware source (perf events of the CPU model's table, resctrl MBM), the profiler
samples it once while the target CPU runs a counting loop (no memory traffic) and once while
it runs our unthrottled bw aggressor over twice the LLC, whose own account of the bytes it
moved is the reference. An event *moves* when its loaded rate is at least four times its idle
rate; a byte event *agrees* when it reports between a quarter and four times the aggressor's
bytes (write-backs, prefetches and the rest of the system make exact agreement impossible,
an order of magnitude off means a wrong event or a wrong scale). Wrong event IDs are the
failure MemGuard's users hit most (mitigation.md §4.6): this is the check they lacked.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from ...base.native import tool
from ..periodic.runner import duration_arg
from ..aggressors.presets import Footprints
from .profile import ProfileSpec, RawProfile, Source, run, series
from ...base.units import size_arg

MOVE_FACTOR = 4.0
AGREE_RANGE = (0.25, 4.0)


@dataclass(frozen=True)
class SelfTestResult:
    source: str
    idle_rate: float | None        # counts/s
    loaded_rate: float | None
    aggressor_mbps: float | None
    measured_mbps: float | None    # loaded - idle, in MB/s, for byte sources
    moved: bool
    agrees: bool | None            # None: not a byte count
    verdict: str

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def _median(x: np.ndarray) -> float | None:
    x = x[np.isfinite(x)]
    return float(np.median(x)) if x.size else None


def _aggr_mbps(raw: RawProfile) -> float | None:
    for line in raw.command_output.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "stats":
            return event.get("mbps")
    return None


def judge(source: Source, idle: float | None, loaded: float | None,
          aggressor_mbps: float | None) -> SelfTestResult:
    """The verdict for one source from its idle and loaded median rates (pure)."""
    if idle is None or loaded is None:
        return SelfTestResult(source.name, idle, loaded, aggressor_mbps, None, False, None,
                              "no reading (every read failed)")
    moved = loaded >= MOVE_FACTOR * max(idle, 1.0)
    if source.bytes_per_count is None:
        return SelfTestResult(source.name, idle, loaded, aggressor_mbps, None, moved, None,
                              "moves" if moved else "does not move under the aggressor")
    measured = (loaded - idle) * source.bytes_per_count / 1e6
    agrees = (aggressor_mbps is not None and aggressor_mbps != 0
              and AGREE_RANGE[0] <= measured / aggressor_mbps <= AGREE_RANGE[1])
    if not moved:
        verdict = "does not move under the aggressor: wrong event for this CPU, or not counting"
    elif not agrees:
        verdict = (f"moves, but reports {measured:.0f} MB/s for the aggressor's "
                   f"{aggressor_mbps or 0:.0f} MB/s: wrong scale or a different traffic")
    else:
        verdict = "moves and agrees with the aggressor"
    return SelfTestResult(source.name, idle, loaded, aggressor_mbps, measured, moved, agrees,
                          verdict)


def self_test(sources: list[Source], topo, *, cpu: int, target_cpu: int, seconds: float = 0.5,
              priority: int = 0) -> list[SelfTestResult]:
    fp = Footprints.for_host(topo, target_cpu)
    ns = int(seconds * 1e9)
    aggr = (str(tool("ic-aggr")), "bw", "--op", "read", "--size", size_arg(fp.dram),
            "--duration", duration_arg(ns))
    results = []
    for start in range(0, len(sources), 4):
        chunk = tuple(sources[start:start + 4])
        spec = functools.partial(ProfileSpec, chunk, interval_ns=1_000_000, cpu=cpu,
                                 target_cpu=target_cpu, priority=priority, tags=False)
        idle = run(spec(self_test_ns=ns))
        loaded = run(spec(command=aggr))
        mbps = _aggr_mbps(loaded)
        for i, source in enumerate(chunk):
            results.append(judge(source, _median(series(idle, i).rate),
                                 _median(series(loaded, i).rate), mbps))
    return results
