"""The bandwidth regulator ic-regulate (docs/native-contract.md, "Regulator"): MemGuard's
budgets per best-effort cgroup, from user space, fail-safe through ic-watchdog.

    with ProcessGroup() as group:
        reg = Regulator.start(RegulatorSpec(best_effort=(be_dir,), event="8:0x17",
                                            budget=1600, period_ns=1_000_000), group)
        ...
        stats = reg.stop()       # SIGTERM: thaws everything, prints its statistics

A budget is given in what the source counts: events of a memory-traffic counter (bytes /
bytes per count), nanoseconds of a time counter (cpu-clock), or, for the latency probe, a
latency threshold per line that a window of samples must exceed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...base.errors import require
from ...measure.periodic.runner import duration_arg
from ...base.procs import from_event, one_event, optional_args
from ..daemon import NativeDaemon

# cpu-clock: a software counter of CPU time in ns, counted per cgroup on every CPU. It is not
# memory traffic; it drives the same overflow -> throttle path everywhere perf exists, which
# is how that path is tested on hosts without a PMU, and it makes a period-exact CPU budget.
CPU_CLOCK_EVENT = "1:0"

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]i?B)/s\s*$", re.IGNORECASE)
_UNITS = {"kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "kib": 2 ** 10, "mib": 2 ** 20,
          "gib": 2 ** 30}


def parse_rate(text: str) -> float:
    """`100MB/s` -> 1e8 bytes/s (MB = 10^6 B, MiB = 2^20 B)."""
    m = _RATE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a rate (examples: 100MB/s, 1.5GB/s, 512MiB/s)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def budget_events(rate_bytes_per_s: float, period_ns: int, bytes_per_count: float) -> int:
    """Events per period for a bandwidth budget (MemGuard: MBps · period / bytes per event),
    at least one."""
    return max(1, math.ceil(rate_bytes_per_s * period_ns / 1e9 / bytes_per_count))


@dataclass(frozen=True)
class RegulatorSpec:
    best_effort: tuple[str, ...]
    critical: tuple[str, ...] = ()
    period_ns: int = 1_000_000
    event: str | None = None            # "TYPE:CONFIG[:CONFIG1]", counted per group
    budget: int | None = None           # events per period
    probe: str | None = None            # "SIZE:LINES"
    threshold_ns: float | None = None   # probe latency per line that means pressure
    window: int = 10
    probe_interval_ns: int = 20_000
    action: Literal["freeze", "idle"] = "freeze"
    gate: str | None = None
    lease_ns: int = 100_000_000
    duration_ns: int = 0
    log: str | None = None
    cpu: int | None = None
    priority: int = 0
    mlock: bool = False

    def __post_init__(self) -> None:
        checks = (
            (bool(self.best_effort), "--best-effort", "at least one group to regulate"),
            ((self.event is None) != (self.probe is None), "--source",
             "a counter (event and budget) or the probe (and a threshold)"),
            (self.event is None or (self.budget or 0) >= 1, "--budget",
             "a counter needs a budget of at least one event per period"),
            (self.probe is None or (self.threshold_ns or 0) > 0, "--threshold",
             "the probe needs a positive latency threshold"),
            (100_000 <= self.period_ns <= 1_000_000_000, "--period", "must be 100us..1s"),
            (self.action in ("freeze", "idle"), "--action", "freeze or idle"),
            (0 <= self.priority <= 99, "--rt-priority", "must be 0..99"),
            (not any("," in d for d in (*self.best_effort, *self.critical)), "--best-effort",
             "a directory name with ',' cannot be passed"),
        )
        require(checks)

    def argv(self) -> list[str]:
        args = ["--best-effort", ",".join(self.best_effort),
                "--period", duration_arg(self.period_ns), "--action", self.action,
                "--lease", duration_arg(max(self.lease_ns, 2 * self.period_ns)),
                "--duration", duration_arg(self.duration_ns)]
        args += optional_args(("--critical", ",".join(self.critical) or None))
        if self.event is not None:
            args += ["--event", self.event, "--budget", str(self.budget)]
        else:
            # validate(): without an event, a probe and its threshold
            assert self.probe is not None and self.threshold_ns is not None
            args += ["--probe", self.probe, "--threshold", f"{self.threshold_ns / 1e9:.9f}",
                     "--window", str(self.window),
                     "--probe-interval", duration_arg(self.probe_interval_ns)]
        return args + optional_args(("--gate", self.gate), ("--log", self.log),
                                    ("--cpu", self.cpu), ("--rt-priority", self.priority or None),
                                    ("--mlock", self.mlock))


@dataclass(frozen=True)
class Distribution:
    """Nearest-rank summary; Nones when there was no sample."""
    n: int
    p50: int | None
    p99: int | None
    max: int | None


@dataclass(frozen=True)
class GroupStats:
    path: str
    throttles: int
    write_errors: int
    overshoot: Distribution      # events (or ns of a time counter) over budget per period
    react_ns: Distribution       # overflow signal (or pressure window) -> throttle written


@dataclass(frozen=True)
class RegulatorStats:
    mode: Literal["counter", "probe"]
    wall_ns: int
    cpu_ns: int
    overhead_pct: float | None
    watchdog_cpu_ns: int
    periods: int
    gated_periods: int
    signals: int
    probe_samples: int
    pressure_windows: int
    lease_expiries: int
    groups: tuple[GroupStats, ...] = ()

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


class Regulator(NativeDaemon[RegulatorStats]):
    """A running ic-regulate (and its watchdog)."""

    tool = "ic-regulate"

    def parse(self, lines: list[dict]) -> RegulatorStats:
        stats = one_event(lines, "stats", "ic-regulate")
        groups = []
        for e in (x for x in lines if x.get("event") == "group"):
            e = dict(e)
            e["overshoot"] = from_event(Distribution, e["overshoot"], "ic-regulate")
            e["react_ns"] = from_event(Distribution, e["react_ns"], "ic-regulate")
            groups.append(from_event(GroupStats, e, "ic-regulate"))
        return from_event(RegulatorStats, {**stats, "groups": tuple(groups)}, "ic-regulate")


def probe_threshold(calibration, budget_mbps: float | None) -> tuple[float, str]:
    """The probe latency per line that means "over budget": through a usable calibration, the
    latency its map gives the budget's bandwidth; otherwise idle's windowed 95th percentile
    (pressure the probe can tell from idle), and said so."""
    idle = next(p for p in calibration.points if p.level == "idle")
    if calibration.usable and budget_mbps is not None:
        lat, bw = calibration._knots()
        keep = np.concatenate([[True], np.diff(lat) > 0])
        at = float(np.interp(budget_mbps, bw[keep], lat[keep]))
        return max(at, idle.window_p95_ns), (f"the calibrated latency of {budget_mbps:.0f} "
                                             "MB/s")
    return idle.window_p95_ns, ("no calibrated bandwidth: pressure above idle's 95th "
                                "percentile of windowed latency")
