"""`intercore measure counters`: which memory-traffic sources this host offers, and are they
right."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..base.errors import HostUnsupported
from ..host.topology import read_topology
from ..measure.bandwidth import (
    events as bwevents,
    selftest as bwselftest,
    sources as bwsource,
    probe,
)
from ..measure.bandwidth.store import save_calibration
from ..measure.harness.session import rt_permitted
from ..base.units import duration
from .output import JSON_HELP, console, err_console, handle_errors, print_json
from .profile import DEFAULT_PRIORITY, _cpus


def _statuses(target: int) -> list[bwsource.SourceStatus]:
    topo = read_topology()
    return bwsource.host_sources(target, probe.probe_source(probe.default_probe_size(topo)))


@handle_errors
def list_cmd(
    cpu: Optional[int] = typer.Option(None, "--target-cpu",
                                      help="The CPU whose core counters to resolve."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Every source for this CPU model, resolved against this host, with the reason for
    each one it lacks (exit 0: a listing, not a failure)."""
    topo = read_topology()
    _, target = _cpus(topo, None, cpu)
    report = bwevents.host_report(target)
    statuses = _statuses(target)
    if json_out:
        print_json({"cpu": report.ident.describe(), "models": list(report.models),
                    "pmus": list(report.pmus),
                    "sources": [s.to_dict() for s in statuses]})
        return
    console.print(f"CPU: {report.ident.describe()}; table entries: "
                  f"{', '.join(report.models) or 'none'}; PMUs: "
                  f"{', '.join(report.pmus) or 'none'}", highlight=False)
    table = Table(title=f"memory-traffic sources for CPU {target}")
    for col in ("source", "kind", "bytes/count", "available / why not"):
        table.add_column(col)
    for s in statuses:
        bpc = s.source.bytes_per_count if s.source else None
        table.add_row(s.name, s.kind, "-" if bpc is None else f"{bpc:g}",
                      "yes" if s.source else s.reason)
    console.print(table)

@handle_errors
def self_test_cmd(
    seconds: str = typer.Option("500ms", "--duration", help="Each of the two runs."),
    cpu: Optional[int] = typer.Option(None, "--target-cpu", help="Where the aggressor "
                                                                 "runs."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Check that every hardware source moves under our bw aggressor and agrees with the
    bytes it moved. Exit 3 when the host has no hardware source at all."""
    topo = read_topology()
    profiler, target = _cpus(topo, None, cpu)
    statuses = _statuses(target)
    hardware = [s.source for s in statuses if s.source and s.kind in ("perf", "mbm")]
    if not hardware:
        lacks = "; ".join(f"{s.name}: {s.reason}" for s in statuses
                          if s.kind in ("perf", "mbm"))
        raise HostUnsupported(f"no hardware counter of memory traffic to test ({lacks})")
    results = bwselftest.self_test(hardware, topo, cpu=profiler, target_cpu=target,
                                   seconds=duration(seconds, field="--duration") / 1e9,
                                   priority=DEFAULT_PRIORITY if rt_permitted() else 0)
    if json_out:
        print_json([r.to_dict() for r in results])
        return
    table = Table(title="counters under our bw aggressor")
    for col in ("source", "idle /s", "loaded /s", "measured MB/s", "aggressor MB/s",
                "verdict"):
        table.add_column(col)
    for r in results:
        table.add_row(r.source, _g(r.idle_rate), _g(r.loaded_rate), _g(r.measured_mbps),
                      _g(r.aggressor_mbps), r.verdict)
    console.print(table)
    if not all(r.moved and r.agrees is not False for r in results):
        raise typer.Exit(1)

@handle_errors
def calibrate_cmd(
    seconds: str = typer.Option("1s", "--duration", help="Each run of the probe."),
    rounds: int = typer.Option(2, "--rounds", help="Shuffled rounds over the levels."),
    interval: str = typer.Option("10us", "--interval", help="The profiler's interval "
                                                            "to calibrate for."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Calibrate the latency probe into bandwidth with our rate-throttled bw aggressor
    (idle, then 6 % .. 100 % of its unthrottled rate, in shuffled rounds). The result is
    stored and used by `profile` and `regulate`. Exit 3 when the probe cannot see the
    aggressor's traffic on this host (stored all the same, with the reason)."""
    from ..host.report import host_report

    topo = read_topology()
    profiler, target = _cpus(topo, None, None)
    started = time.time()
    say = err_console if json_out else console
    cal = probe.calibrate(topo, host_report().fingerprint(), probe_cpu=profiler,
                          aggr_cpu=target, interval_ns=duration(interval, field="--interval"),
                          seconds=duration(seconds, field="--duration") / 1e9,
                          rounds=rounds, priority=DEFAULT_PRIORITY if rt_permitted() else 0,
                          created_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                          on_run=lambda level, done, total: say.print(
                              f"{done}/{total}: {level}", highlight=False))
    inv = save_calibration(db, cal, started)
    if json_out:
        print_json({**cal.to_dict(), "invocation": inv})
    else:
        table = Table(title=f"probe calibration ({cal.lines} lines through "
                            f"{cal.size >> 20} MiB, windows of {cal.window} samples)")
        for col in ("level", "aggressor MB/s", "runs", "latency ns/line",
                    "window p50", "window p95"):
            table.add_column(col)
        for p in sorted(cal.points, key=lambda p: p.achieved_mbps):
            table.add_row(p.level, f"{p.achieved_mbps:.0f}", str(p.runs),
                          f"{p.latency_ns:.1f}", f"{p.window_p50_ns:.1f}",
                          f"{p.window_p95_ns:.1f}")
        console.print(table)
        console.print(f"stored as invocation {inv} in {db}", highlight=False)
    if not cal.usable:
        raise HostUnsupported(f"the latency probe cannot estimate bandwidth here: "
                              f"{cal.reason}")
    if not json_out:
        console.print(f"detection floor: {cal.floor_mbps:.0f} MB/s (less traffic cannot be "
                      f"told from idle in {cal.window}-sample windows)", highlight=False)


def _g(v) -> str:
    return "-" if v is None else f"{v:,.0f}"
