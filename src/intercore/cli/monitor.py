"""`intercore mitigate monitor`: run the freezer monitor that enforces an applied cgroup plan."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path
from typing import Optional

import typer

from ..base.errors import InputError
from ..base.procs import ProcessGroup
from ..host.topology import default_placement, read_topology, validate_cpu
from ..measure.regime.core import core_warning
from ..base.units import duration
from ..base.units import max_freeze as check_max_freeze
from ..mitigate.freezer import sdnotify
from ..mitigate.freezer.guard import check_on_host, monitor_spec, windows_from_plan
from ..mitigate.freezer.monitor import Monitor
from ..mitigate.freezer.notify_block import check_window_regions
from ..mitigate.plan.record import CgroupPlan
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn


@handle_errors
def monitor_cmd(
    plan_path: Path = typer.Option(..., "--plan", help="A plan after `intercore mitigate "
                                                       "apply` (it records the groups)."),
    policy: str = typer.Option("poll", "--policy",
                               help="poll: freeze a best-effort group whose CPU usage "
                                    "exceeds --threshold while a critical group is active "
                                    "(paper 000). event: freeze at each critical release "
                                    "and thaw at completion (needs --notify)."),
    interval: str = typer.Option("50ms", "--interval", help="Poll interval (1ms .. 10s)."),
    threshold: int = typer.Option(30, "--threshold", min=1, max=100,
                                  help="Poll: % of one CPU."),
    notify: Optional[Path] = typer.Option(
        None, "--notify", help="Notification block of the critical task's job runner "
                               "(ic-periodic --notify PATH)."),
    max_freeze: Optional[str] = typer.Option(None, "--max-freeze",
                                             help="Longest freeze per period: 50% or 20ms."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="Housekeeping CPU to pin to."),
    priority: int = typer.Option(50, "--rt-priority", min=0, max=99,
                                 help="SCHED_FIFO priority (0: none)."),
    duration_text: str = typer.Option("0s", "--duration",
                                      help="Stop after this (0s: at Ctrl-C)."),
    log: Optional[Path] = typer.Option(None, "--log", help="Freeze/thaw log (JSON lines)."),
    window_region: list[str] = typer.Option(
        [], "--window-region", metavar="REGION[,REGION]",
        help="Protect a critical job only from its entry into one of these regions (its "
             "IC_REGION markers) to its exit, not as a whole (needs --notify). "
             "Repeatable. A task without markers is protected whole. Default: the plan's "
             "freeze windows (`mitigate plan --heatmap`)."),
    whole_jobs: bool = typer.Option(False, "--whole-jobs",
                                    help="Protect whole critical jobs even where the plan "
                                         "names freeze windows."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Freeze best-effort groups while critical ones run, as the plan allows.

    The monitor thaws every group it manages at start, at exit and on Ctrl-C/SIGTERM; a
    watchdog process thaws them if the monitor itself is killed. Prints its statistics
    (CPU overhead, freezes, release-to-freeze latency) when it stops.

    A plan made with `--heatmap` names freeze windows: the regions of a critical task above
    θ. The event policy then freezes only from a job's entry into one of them to its exit,
    and protects whole jobs where it cannot (no --notify, or a task without those markers),
    saying so.

    Example:

        intercore mitigate apply plan.json
        intercore mitigate monitor --plan plan.json --policy poll --interval 10ms --cpu 0
    """
    if policy not in ("poll", "event"):
        raise InputError("choose poll or event", field="--policy")
    windows = tuple(name for item in window_region for name in item.split(","))
    if windows and whole_jobs:
        raise InputError("whole jobs or these windows, not both", field="--whole-jobs")
    if windows and notify is None:
        raise InputError("region windows need the critical task's --notify block",
                         field="--window-region")
    if any(not name for name in windows):
        raise InputError("an empty region name", field="--window-region")
    paths.output_file(log, "--log")
    if notify is not None and not notify.is_file():
        # ic-monitor would create it, and watch a block that no runner writes to (a typo
        # that leaves the critical task unprotected, silently).
        raise InputError(f"no notification block at {notify}; start the critical task "
                         f"(ic-periodic --notify {notify}) first", field="--notify")
    paths.output_file(notify, "--notify")
    marked = notify is None or check_window_regions(notify, windows)
    if cpu is not None:
        validate_cpu(read_topology(), cpu, "--cpu")
    if max_freeze is not None:
        check_max_freeze(max_freeze, field="--max-freeze")
    interval_ns = duration(interval, field="--interval", lo_ns=1_000_000,
                           hi_ns=10_000_000_000)
    duration_ns = duration(duration_text, field="--duration")
    plan = CgroupPlan.load(plan_path)
    planned = None
    if not (windows or whole_jobs):
        windows, planned = windows_from_plan(plan, notify)
    spec = monitor_spec(plan, policy=policy, interval_ns=interval_ns,
                        threshold_pct=threshold,
                        notify=None if notify is None else str(notify),
                        max_freeze=max_freeze, cpu=cpu, priority=priority,
                        duration_ns=duration_ns,
                        log=None if log is None else str(log), window_regions=windows)
    check_on_host(plan)
    if cpu is not None:
        topo = read_topology()
        shared = core_warning(topo, cpu, plan.protected_cpus(default_placement(topo).victim),
                              "the monitor")
        if shared:
            warn(shared, label="note", to_stderr=True)
    if planned:
        warn(planned, label="note", to_stderr=True)
    if not marked:
        warn(f"the task publishing {notify} has no region markers: the monitor protects "
             "each whole job instead of the region windows", label="note", to_stderr=True)
    with ProcessGroup() as group:
        monitor = Monitor.start(spec, group)
        sdnotify.notify("READY=1")  # under systemd (Type=notify): every group is thawed
        err_console.print(f"monitor running (pid {monitor.pid}, watchdog "
                          f"{monitor.watchdog_pid}); Ctrl-C stops it and thaws everything")
        if spec.duration_ns:
            stats = monitor.wait(timeout=spec.duration_ns / 1e9 + 30)
        else:
            stats = _until_stop(monitor)
    doc = dataclasses.asdict(stats)
    if json_out:
        print_json(doc)
    else:
        for key, value in doc.items():
            console.print(f"{key}: {value}", highlight=False)


def _until_stop(monitor: Monitor):
    """Block until Ctrl-C or SIGTERM reaches us (or the monitor ends), then stop it cleanly:
    the signals are blocked and waited for, so no handler runs halfway through anything."""
    signals = {signal.SIGINT, signal.SIGTERM}
    # Under systemd with WatchdogSec=, ping while ic-monitor lives: a monitor that died or
    # hung stops pinging, and systemd stops the unit (thawing, ExecStopPost) and restarts it.
    ping = sdnotify.watchdog_interval_s()
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        while monitor.process.proc.poll() is None:
            if ping is not None:
                sdnotify.notify("WATCHDOG=1")
            if signal.sigtimedwait(signals, min(0.5, ping or 0.5)) is not None:
                break
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
    sdnotify.notify("STOPPING=1")
    return monitor.stop()
