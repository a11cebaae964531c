"""The freezer monitor ic-monitor (docs/native-contract.md, "Monitor"): a `MonitorSpec`,
start and stop, and its statistics and freeze/thaw log as data classes.

    with ProcessGroup() as group:
        monitor = Monitor.start(MonitorSpec(policy="event", best_effort=(be_dir,),
                                            notify=str(path)), group)
        ...                                  # run the critical task with notify=path
        stats = monitor.stop()               # SIGTERM: thaws everything, prints its stats

The monitor thaws every group it manages at start-up, at exit and on SIGINT/SIGTERM. Its
watchdog (ic-watchdog: a process of its own, in its own session, on another CPU, at a higher
priority) thaws them within milliseconds if the monitor is killed, and within the lease if it
is stopped or starved; the monitor freezes again when it resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...base.errors import require
from ...measure.periodic.runner import duration_arg
from ...base.procs import from_event, one_event, optional_args, read_jsonl
from ..daemon import NativeDaemon

# Longest region name + 1 (IC_NOTIFY_NAME_LEN, docs/native-contract.md "Region windows").
REGION_NAME_LEN = 48


@dataclass(frozen=True)
class MonitorSpec:
    """What ic-monitor is asked to do. Group entries are cgroup directories, or
    "DIR+USAGE_DIR" where a pure-v1 host keeps the usage in another hierarchy."""
    policy: Literal["poll", "event"]
    best_effort: tuple[str, ...]
    critical: tuple[str, ...] = ()
    interval_ns: int = 50_000_000            # poll: 1 ms .. 10 s
    threshold_pct: int = 30                  # poll: % of one CPU
    notify: str | None = None                # the critical runner's notification block
    max_freeze: str | None = None            # "50%", "20ms", "none"; None: 50% with notify
    cpu: int | None = None                   # housekeeping CPU
    priority: int = 0                        # 0 = SCHED_OTHER, 1..99 = SCHED_FIFO
    log: str | None = None                   # JSON lines, one per freeze and thaw
    window_ns: int = 20_000_000              # poll: usage averaged over at least this
    idle_after_ns: int = 10_000_000          # poll without notify: critical idle after this
    lead_ns: int = 0                         # event: freeze this long before each release
    lease_ns: int = 100_000_000              # watchdog thaws when the heartbeat is this old
    duration_ns: int = 0                     # 0: until stopped
    exit_with_runner: bool = False           # with notify: exit once the runner has finished
    mlock: bool = False
    # with notify: protect a job from its entry into one of these regions to its exit
    # (names as the runner publishes them), not as a whole; a runner without markers is
    # protected whole
    window_regions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checks = (
            (self.policy in ("poll", "event"), "policy", "must be 'poll' or 'event'"),
            (bool(self.best_effort), "best_effort", "needs at least one group to freeze"),
            (self.policy != "event" or self.notify is not None, "notify",
             "the event policy needs the critical runner's notification block"),
            (self.policy != "poll" or bool(self.critical) or self.notify is not None, "critical",
             "the poll policy needs critical groups (or a notification block)"),
            (not self.exit_with_runner or self.notify is not None, "exit_with_runner",
             "needs a notification block"),
            (1_000_000 <= self.interval_ns <= 10_000_000_000, "interval_ns",
             "must be 1 ms .. 10 s"),
            (0 <= self.priority <= 99, "priority", "must be 0 (SCHED_OTHER) or 1..99"),
            (not any("," in g for g in (*self.critical, *self.best_effort)), "critical",
             "a directory name with ',' cannot be passed"),
            (not self.window_regions or self.notify is not None, "window_regions",
             "region windows need the runner's notification block (notify)"),
            (all(0 < len(r) < REGION_NAME_LEN and "," not in r for r in self.window_regions),
             "window_regions", f"a region name has 1..{REGION_NAME_LEN - 1} characters, no ','"),
        )
        require(checks)

    def argv(self) -> list[str]:
        args = ["--policy", self.policy, "--best-effort", ",".join(self.best_effort),
                "--interval", duration_arg(self.interval_ns),
                "--threshold", str(self.threshold_pct),
                "--window", duration_arg(self.window_ns),
                "--idle-after", duration_arg(self.idle_after_ns),
                "--lead", duration_arg(self.lead_ns), "--lease", duration_arg(self.lease_ns),
                "--duration", duration_arg(self.duration_ns)]
        return args + optional_args(
            ("--critical", ",".join(self.critical) or None), ("--notify", self.notify),
            ("--max-freeze", self.max_freeze), ("--log", self.log), ("--cpu", self.cpu),
            ("--rt-priority", self.priority or None),
            ("--exit-with-runner", self.exit_with_runner), ("--mlock", self.mlock),
            ("--window-region", ",".join(self.window_regions) or None))


@dataclass(frozen=True)
class LatencySummary:
    """Nearest-rank percentiles in ns; None when there was no sample."""
    n: int
    dropped: int
    min_ns: int | None
    p50_ns: int | None
    p90_ns: int | None
    p99_ns: int | None
    max_ns: int | None


@dataclass(frozen=True)
class MonitorStats:
    policy: str
    wall_ns: int
    cpu_ns: int
    overhead_pct: float | None     # cpu_ns / wall_ns, in % of one CPU
    watchdog_cpu_ns: int
    freezes: int
    thaws: int                     # start-up and exit thaws included
    cap_hits: int                  # freezes ended by --max-freeze
    write_errors: int
    polls: int
    poll_overruns: int
    releases: int                  # event: releases the runner made while watched
    late_releases: int             # event: jobs already complete when the monitor woke
    missed_releases: int           # event: of those, jobs it never saw announced
    lease_expiries: int            # the watchdog thawed a stopped or starved monitor
    rearms: int                    # freezes made again after an expiry, once resumed
    log_lost: int
    watchdog_lost: bool
    latency_from: Literal["release", "activity-onset", "region-entry"]
    latency: LatencySummary
    window_regions: tuple[str, ...] = ()
    windows: int = 0               # event: window region executions frozen
    missed_windows: int = 0        # event: entered and left while the monitor was away
    window_fallback: bool = False  # a runner without the regions: protected whole


@dataclass(frozen=True)
class LogEntry:
    """One freeze or thaw; t_ns is CLOCK_MONOTONIC, when the write returned."""
    t_ns: int
    action: Literal["freeze", "thaw", "remove"]
    group: str
    reason: str
    by: Literal["monitor", "watchdog"]
    job: int | None = None
    latency_ns: int | None = None      # from the release, or from the region's entry
    error: str | None = None
    region: str | None = None          # the window region the action follows


def read_log(path: str | Path, *, growing: bool = False) -> list[LogEntry]:
    """Every entry of a --log file, in file order (`growing`: while it is still written)."""
    return read_jsonl(path, LogEntry, "ic-monitor log", growing=growing)


class Monitor(NativeDaemon[MonitorStats]):
    """A running ic-monitor (and its watchdog). `start` returns once every group is thawed,
    the watchdog runs and the policy is about to start; `wait` gives the statistics of a
    monitor that ends by itself (duration_ns, exit_with_runner)."""

    tool = "ic-monitor"

    @classmethod
    def label(cls, spec: MonitorSpec) -> str:
        return f"ic-monitor {spec.policy}"

    def parse(self, lines: list[dict]) -> MonitorStats:
        name = self.process.name
        event = dict(one_event(lines, "stats", name))
        event["latency"] = from_event(LatencySummary, event.get("latency") or {}, name)
        event["window_regions"] = tuple(event.get("window_regions") or ())
        return from_event(MonitorStats, event, name)
