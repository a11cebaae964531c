"""The PMU-free bandwidth source: a latency probe calibrated against known traffic.

Where no counter sees memory traffic (most VMs, locked-down boards), the profiler's own core
can still feel it: a short pointer chase through DRAM-resident lines takes longer when other
cores load the memory system. The probe's reading is that chase's time per line. To turn it
into bandwidth, `calibrate` runs the probe while our rate-throttled bw aggressor generates
known traffic on another core (idle, then fractions of its unthrottled rate, in shuffled
rounds so that slow drift of the host hits every level alike), and fits a monotone map from
latency to the aggressor's achieved bandwidth.

The map is only as good as the host lets it be, and the calibration says how good:
`floor_mbps` is the least traffic whose windowed latency (the median of `window` samples, as
the profiler uses it) exceeds the idle level's 95th percentile at least half of the time.
Traffic below it cannot be told from idle. A host where even the unthrottled aggressor cannot
be told from idle has no usable probe, and the calibration says so instead of pretending.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from ...base.errors import HostUnsupported, NativeError
from ...host.topology import Topology
from ...base.native import tool
from ..periodic.runner import duration_arg
from ..aggressors.presets import Footprints
from .profile import ProfileSpec, RawProfile, Source, run, series
from ..harness.schedule import shuffled_rounds
from ...base.units import size_arg

DEFAULT_LINES = 8
DEFAULT_FRACTIONS = (0.0625, 0.125, 0.25, 0.5, 1.0)
DEFAULT_WINDOW = 10
DETECTION_QUANTILE = 95.0    # idle windows above this are false alarms (5 %)


def probe_source(size: int, lines: int = DEFAULT_LINES) -> Source:
    return Source("probe", "probe", f"probe:{size_arg(size)}:{lines}", None, "both",
                  f"{lines}-line pointer chase through {size_arg(size)}, timed on the "
                  "profiler's core; bandwidth only through a calibration")


def default_probe_size(topo: Topology) -> int:
    """Twice the last-level cache: the chase's lines are in DRAM, not in a cache."""
    return Footprints.for_host(topo).dram


@dataclass(frozen=True)
class CalibrationPoint:
    level: str                      # "idle", "6%", ..., "100%"
    requested_mbps: float | None    # None: idle (no aggressor)
    achieved_mbps: float            # the aggressor's own account (0 when idle)
    latency_ns: float               # median probe latency per line
    window_p50_ns: float            # median of the windowed medians
    window_p95_ns: float
    samples: int
    runs: int


@dataclass(frozen=True)
class ProbeCalibration:
    """A latency → bandwidth map for one host and probe geometry."""

    fingerprint: str
    size: int
    lines: int
    interval_ns: int
    window: int
    points: tuple[CalibrationPoint, ...]
    floor_mbps: float | None
    usable: bool
    reason: str | None = None
    created_at: str = ""
    meta: dict = field(default_factory=dict)

    # -- the map: monotone piecewise-linear through (latency, bandwidth)
    def _knots(self) -> tuple[np.ndarray, np.ndarray]:
        pts = sorted(self.points, key=lambda p: p.achieved_mbps)
        lat = np.maximum.accumulate(np.array([p.window_p50_ns for p in pts]))
        bw = np.array([p.achieved_mbps for p in pts])
        return lat, bw

    def estimate_mbps(self, latency_ns: np.ndarray) -> np.ndarray:
        """Bandwidth for windowed latencies: 0 at or below idle, the top level's at or above
        it, linear between the levels (latencies made non-decreasing first)."""
        if not self.usable:
            raise HostUnsupported(f"the probe calibration is not usable: {self.reason}")
        lat, bw = self._knots()
        # Equal latencies at several levels carry no information between them: keep the
        # lowest bandwidth for each latency, so a flat stretch maps to its start.
        keep = np.concatenate([[True], np.diff(lat) > 0])
        return np.interp(np.asarray(latency_ns, dtype=np.float64), lat[keep], bw[keep])

    def describe(self) -> dict:
        return {"kind": "probe-calibration", "fingerprint": self.fingerprint,
                "window": self.window, "floor_mbps": self.floor_mbps, "usable": self.usable,
                "created_at": self.created_at,
                "time_resolution_ns": self.window * self.interval_ns}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ProbeCalibration:
        d = dict(d)
        d["points"] = tuple(CalibrationPoint(**p) for p in d["points"])
        return cls(**d)


# ---- pure parts ---------------------------------------------------------------------------------

def window_medians(latency: np.ndarray, window: int) -> np.ndarray:
    """Medians of consecutive, non-overlapping windows of `window` samples."""
    n = latency.size // window
    if n == 0:
        return np.zeros(0)
    return np.median(latency[: n * window].reshape(n, window), axis=1)


def detection_floor(idle_windows: np.ndarray, levels: list[tuple[float, np.ndarray]]
                    ) -> float | None:
    """The least bandwidth whose windowed latency exceeds idle's 95th percentile in at least
    half of its windows (and every higher level too); None when no level does."""
    if idle_windows.size == 0:
        return None
    limit = np.percentile(idle_windows, DETECTION_QUANTILE)
    floor = None
    for mbps, windows in sorted(levels, key=lambda x: -x[0]):
        if windows.size and np.mean(windows > limit) >= 0.5:
            floor = mbps
        else:
            break
    return floor


def fit(fingerprint: str, size: int, lines: int, interval_ns: int, window: int,
        runs: dict[str, list[tuple[float | None, float, np.ndarray]]],
        created_at: str = "", meta: dict | None = None) -> ProbeCalibration:
    """The calibration from every run: level -> [(requested, achieved MB/s, latencies)]."""
    points, windows = [], {}
    for level, items in runs.items():
        lat = np.concatenate([x[2] for x in items]) if items else np.zeros(0)
        win = np.concatenate([window_medians(x[2], window) for x in items]) if items \
            else np.zeros(0)
        windows[level] = win
        achieved = float(np.mean([x[1] for x in items])) if items else 0.0
        points.append(CalibrationPoint(
            level, items[0][0] if items else None, achieved,
            float(np.median(lat)) if lat.size else float("nan"),
            float(np.median(win)) if win.size else float("nan"),
            float(np.percentile(win, 95)) if win.size else float("nan"), int(lat.size),
            len(items)))
    idle = windows.get("idle", np.zeros(0))
    floor = detection_floor(idle, [(p.achieved_mbps, windows[p.level]) for p in points
                                   if p.level != "idle"])
    reason = None
    if floor is None:
        top = max(points, key=lambda p: p.achieved_mbps)
        reason = (f"even {top.achieved_mbps:.0f} MB/s of traffic (our unthrottled bw aggressor) "
                  f"moves the probe's {window}-sample latency above idle's 95th percentile in "
                  "fewer than half of its windows: this host's memory system does not show "
                  "load to a probe")
    return ProbeCalibration(fingerprint, size, lines, interval_ns, window, tuple(points),
                            floor, floor is not None, reason, created_at, meta or {})


# ---- running it ---------------------------------------------------------------------------------

Runner = Callable[[ProfileSpec], RawProfile]


def _aggr_mbps(raw: RawProfile) -> float:
    """The bw aggressor's achieved rate, from its stats line in the command output."""
    for line in raw.command_output.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "stats" and event.get("mbps") is not None:
            return float(event["mbps"])
    raise NativeError(f"the calibration aggressor printed no stats: {raw.command_output[-400:]}")


def calibrate(topo: Topology, fingerprint: str, *, probe_cpu: int, aggr_cpu: int,
              size: int | None = None, lines: int = DEFAULT_LINES, interval_ns: int = 10_000,
              window: int = DEFAULT_WINDOW, fractions: tuple[float, ...] = DEFAULT_FRACTIONS,
              seconds: float = 1.0, rounds: int = 2, priority: int = 0, seed: int = 1,
              runner: Runner = run, on_run: Callable[[str, int, int], None] | None = None,
              created_at: str = "") -> ProbeCalibration:
    """Measure the probe at idle and under fractions of the unthrottled bw aggressor."""
    size = size or default_probe_size(topo)
    fp = Footprints.for_host(topo, aggr_cpu)
    source = probe_source(size, lines)
    ns = int(seconds * 1e9)

    def one(level: str, rate: int | None) -> tuple[float, np.ndarray]:
        if rate is None:
            spec = ProfileSpec((source,), self_test_ns=ns, interval_ns=interval_ns,
                               cpu=probe_cpu, target_cpu=aggr_cpu, priority=priority,
                               tags=False, seed=seed)
        else:
            command = [str(tool("ic-aggr")), "bw", "--op", "read", "--size", size_arg(fp.dram),
                       "--rate", str(rate), "--duration", duration_arg(ns)]
            spec = ProfileSpec((source,), command=tuple(command), interval_ns=interval_ns,
                               cpu=probe_cpu, target_cpu=aggr_cpu, priority=priority,
                               tags=False, seed=seed)
        raw = runner(spec)
        latency = series(raw, 0).rate
        return (0.0 if rate is None else _aggr_mbps(raw)), latency

    total = 1 + rounds * (1 + len(fractions))
    done = 0

    def step(level: str) -> None:
        nonlocal done
        done += 1
        if on_run:
            on_run(level, done, total)

    # The unthrottled rate sets the scale of the others.
    full_mbps, full_lat = one("100%", 0)
    step("unthrottled")
    max_rate = full_mbps * 1e6 / fp.line
    levels = {"idle": None, **{f"{f * 100:g}%": max(1, int(f * max_rate)) for f in fractions}}
    runs: dict[str, list] = {k: [] for k in levels}
    runs["100%"].append((full_mbps, full_mbps, full_lat))
    for _, level in shuffled_rounds(list(levels), rounds, seed):
        rate = levels[level]
        achieved, latency = one(level, rate)
        requested = None if rate is None else rate * fp.line / 1e6
        runs[level].append((requested, achieved, latency))
        step(level)
    return fit(fingerprint, size, lines, interval_ns, window, runs, created_at,
               {"probe_cpu": probe_cpu, "aggr_cpu": aggr_cpu, "seconds": seconds,
                "rounds": rounds, "aggressor_size": fp.dram})
