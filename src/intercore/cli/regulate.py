"""`intercore mitigate regulate`: MemGuard-style bandwidth budgets for an applied plan's best-effort
groups."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import typer

from ..base.errors import HostUnsupported, InputError
from ..host.topology import read_topology
from ..measure.bandwidth import events as bwevents, probe
from ..measure.regime.core import core_warning
from ..base.procs import ProcessGroup
from ..measure.harness.session import rt_permitted
from ..base.units import duration, parse_duration_ns
from ..mitigate.bandwidth import regulator as reg
from ..mitigate.freezer.guard import check_on_host
from ..mitigate.plan.record import CgroupPlan
from .monitor import _until_stop as until_stop
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn
from .profile import DEFAULT_PRIORITY, _cpus, calibration_for


def plan_groups(plan: CgroupPlan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(best-effort, critical) cgroup directories of an applied plan: the groups the plan lets
    a monitor freeze, and the ones it protects."""
    if plan.applied is None:
        raise InputError("the plan has not been applied: run `intercore mitigate apply` first",
                         field="--plan")

    def where(name: str) -> str:
        g = plan.applied.group(name)
        if g.freeze_file is None:
            raise HostUnsupported(f"group {name} has no freezer on this host")
        return str(Path(g.freeze_file).parent)

    best = tuple(where(g.name) for g in plan.groups if g.monitor == "freeze")
    critical = tuple(where(g.name) for g in plan.groups if g.monitor == "protect")
    if not best:
        raise InputError("the plan separates no best-effort group: nothing to regulate",
                         field="--plan")
    return best, critical


def counter_event(target: int) -> bwevents.ResolvedEvent | None:
    """A core memory-traffic event of this CPU model that opens here (cgroups are counted on
    core PMUs only)."""
    report = bwevents.host_report(target)
    return next((e for e in report.events if e.available and e.event.scope == "cpu"
                 and e.event.bytes), None)


def build_spec(*, best: tuple[str, ...], critical: tuple[str, ...], source: str, budget: str,
               period_ns: int, action: str, cpu: int, target: int, priority: int,
               duration_ns: int, log: Optional[Path], db: Path, to_stderr: bool
               ) -> tuple[reg.RegulatorSpec, dict]:
    """The spec and what it means (source, budget in its units, notes)."""
    from ..host.report import host_report

    info: dict = {"notes": []}
    common = dict(best_effort=best, critical=critical, period_ns=period_ns, action=action,
                  cpu=cpu, priority=priority, duration_ns=duration_ns,
                  log=None if log is None else str(log))
    if source == "sw:cpu-clock":
        try:
            ns = parse_duration_ns(budget)
        except ValueError as exc:
            raise InputError(f"{exc}: sw:cpu-clock budgets CPU time per period",
                             field="--budget") from None
        info.update(source="sw:cpu-clock", unit="ns of CPU time", budget_events=ns)
        return reg.RegulatorSpec(event=reg.CPU_CLOCK_EVENT, budget=ns, **common), info
    try:
        rate = reg.parse_rate(budget)
    except ValueError as exc:
        raise InputError(str(exc), field="--budget") from None
    event = None
    if source == "auto" or source.startswith("perf:"):
        event = counter_event(target)
        if source.startswith("perf:") and (event is None or f"perf:{event.name}" != source):
            report = bwevents.host_report(target)
            named = next((e for e in report.events if f"perf:{e.name}" == source), None)
            if named is None:
                raise InputError(f"no event {source!r} for this CPU model (see intercore "
                                 "counters list)", field="--source")
            if not named.available:
                raise HostUnsupported(f"{source}: {named.reason}")
            if named.event.scope != "cpu" or not named.event.bytes:
                raise InputError(f"{source} cannot count a cgroup's bytes (uncore or a plain "
                                 "count); choose a core byte event", field="--source")
            event = named
    if event is not None:
        events = reg.budget_events(rate, period_ns, event.event.bytes)
        t = event.terms[0]
        spec_event = f"{t.type}:{t.config:#x}" + (f":{t.config1:#x}" if t.config1 else "")
        info.update(source=f"perf:{event.name}", unit="events", budget_events=events,
                    bytes_per_count=event.event.bytes)
        return reg.RegulatorSpec(event=spec_event, budget=events, **common), info
    if source not in ("auto", "probe"):
        raise InputError(f"unknown source {source!r}: auto, probe, perf:EVENT or sw:cpu-clock",
                         field="--source")
    topo = read_topology()
    src = probe.probe_source(probe.default_probe_size(topo))
    _, cal = calibration_for(db, topo, host_report().fingerprint(), src, 10_000, cpu, target,
                             priority, to_stderr)
    threshold, how = reg.probe_threshold(cal, rate / 1e6)
    if source == "auto":
        info["notes"].append("no core counter of memory traffic here: the latency probe "
                             "decides")
    if not cal.usable:
        info["notes"].append(f"the probe's calibration is unusable ({cal.reason}); throttling "
                             "on pressure the probe can tell from idle instead of the budget")
    info.update(source="probe", unit="ns/line", threshold_ns=threshold, threshold_from=how)
    _, size, lines = src.spec.split(":")
    return reg.RegulatorSpec(probe=f"{size}:{lines}", threshold_ns=threshold, window=cal.window,
                             **common), info


@handle_errors
def regulate_cmd(
    plan_path: Path = typer.Option(..., "--plan", help="An applied plan: its best-effort "
                                                       "groups are regulated, its critical "
                                                       "ones never touched."),
    budget: str = typer.Option(..., "--budget", help="Per group and period: a rate such "
                                                     "as 100MB/s, or CPU time (20ms) with "
                                                     "--source sw:cpu-clock."),
    period: str = typer.Option("1ms", "--period", help="Regulation period, 100us..1s."),
    source: str = typer.Option("auto", "--source",
                               help="auto (a core counter, else the probe), probe, "
                                    "perf:EVENT, or sw:cpu-clock."),
    action: str = typer.Option("freeze", "--action",
                               help="freeze (cgroup freezer) or idle (SCHED_IDLE) until "
                                    "the period ends."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="The regulator's core."),
    priority: Optional[int] = typer.Option(None, "--rt-priority",
                                           help="SCHED_FIFO priority (default 10 where "
                                                "allowed)."),
    duration_text: str = typer.Option("0s", "--duration", help="Stop after this (0s: at "
                                                               "Ctrl-C)."),
    log: Optional[Path] = typer.Option(None, "--log", help="One JSON line per throttled "
                                                           "period and group."),
    db: Path = typer.Option(Path("intercore.db"), "--db",
                            help="Where the probe's calibration is kept."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Give each best-effort group a memory budget per period (MemGuard, from user space).

    A core counter of the group's memory traffic signals when the budget is spent; the
    group is then frozen (or SCHED_IDLE'd) until the next period. Without a counter the
    latency probe on the regulator's core stands in: a window of samples above the
    budget's calibrated latency throttles every best-effort group until the period ends.
    A watchdog process (another CPU, SCHED_FIFO 99, its own session) thaws every group if
    the regulator dies or hangs. Prints overshoot (over budget per period) and the
    regulator's own CPU cost when it stops.

    Example:

        intercore mitigate apply plan.json
        intercore mitigate regulate --plan plan.json --budget 100MB/s --period 1ms
    """
    if action not in ("freeze", "idle"):
        raise InputError("freeze or idle", field="--action")
    plan = CgroupPlan.load(plan_path)
    check_on_host(plan)
    best, critical = plan_groups(plan)
    topo = read_topology()
    my_cpu, target = _cpus(topo, cpu, None)
    prio = priority if priority is not None else (DEFAULT_PRIORITY if rt_permitted() else 0)
    spec, info = build_spec(best=best, critical=critical, source=source, budget=budget,
                            period_ns=duration(period, field="--period"), action=action,
                            cpu=my_cpu, target=target, priority=prio,
                            duration_ns=duration(duration_text, field="--duration"),
                            log=log, db=db, to_stderr=json_out)
    shared = core_warning(topo, my_cpu, plan.protected_cpus(target),
                          "the regulator's polling loop")
    if shared:
        info["notes"].append(shared)
    with ProcessGroup() as group:
        r = reg.Regulator.start(spec, group)
        err_console.print(f"regulating {len(best)} group(s) with {info['source']} (pid "
                          f"{r.pid}, watchdog {r.watchdog_pid}); Ctrl-C stops and thaws",
                          highlight=False)
        stats = r.wait(spec.duration_ns / 1e9 + 30) if spec.duration_ns else until_stop(r)
    doc = {**info, "spec": dataclasses.asdict(spec), "stats": stats.to_dict()}
    if json_out:
        print_json(doc)
        return
    render(doc)


def render(doc: dict) -> None:
    s = doc["stats"]
    console.print(f"{s['periods']} periods ({s['gated_periods']} gated), source "
                  f"{doc['source']}; regulator CPU {s['overhead_pct']:.2f}% of a core, "
                  f"watchdog {s['watchdog_cpu_ns'] / 1e6:.1f} ms; lease expiries "
                  f"{s['lease_expiries']}", highlight=False)
    scale = doc.get("bytes_per_count")
    for g in s["groups"]:
        over = g["overshoot"]
        over_text = "-" if over["p50"] is None else (
            f"p50 {over['p50'] * scale / 1e3:.1f} kB, p99 {over['p99'] * scale / 1e3:.1f} kB"
            if scale else f"p50 {over['p50']}, p99 {over['p99']} {doc['unit']}")
        react = g["react_ns"]
        react_text = "-" if react["p50"] is None else \
            f"p50 {react['p50'] / 1e3:.0f} µs, p99 {react['p99'] / 1e3:.0f} µs"
        console.print(f"  {g['path']}: throttled in {g['throttles']} periods; over budget "
                      f"{over_text}; signal to throttle {react_text}", highlight=False)
    for note in doc["notes"]:
        warn(note, label="note")
