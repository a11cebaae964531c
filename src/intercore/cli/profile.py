"""`intercore measure profile run | show`: memory bandwidth over time, sampled on a dedicated
core (paper 004)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..base.errors import HostUnsupported, InputError
from ..base.parse import parse_size
from ..host.topology import default_placement, read_topology, validate_cpu
from ..measure.bandwidth import sources as bwsource, probe
from ..measure.bandwidth import profile as prof_mod
from ..measure.aggressors.catalog import parse_victim
from ..measure.regime.core import core_warning
from ..measure.aggressors.presets import Footprints
from ..measure.bandwidth.plot import plot
from ..measure.bandwidth.store import (
    latest_calibration,
    load_profile,
    save_calibration,
    save_profile,
)
from ..measure.harness.session import rt_permitted
from ..base.units import duration
from ..base.native import tool
from ..store import Store
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn

DEFAULT_PRIORITY = 10


def _cpus(topo, cpu: Optional[int], target_cpu: Optional[int]) -> tuple[int, int]:
    online = topo.online_cpus
    if len(online) < 2:
        raise HostUnsupported("the profiler needs a core of its own beside the command's, and "
                              "this host has one online CPU")
    target = validate_cpu(topo, target_cpu, "--target-cpu") if target_cpu is not None \
        else default_placement(topo).victim
    if cpu is None:
        cpu = next(c for c in sorted(online, key=lambda c: (c == 0, c)) if c != target)
    else:
        validate_cpu(topo, cpu, "--cpu")
    if cpu == target:
        raise InputError("the profiler needs a core of its own: choose --cpu other than the "
                         "command's --target-cpu", field="--cpu")
    return cpu, target


def _command(victim: Optional[str], command: list[str], reps: int, topo, target: int
             ) -> tuple[str, ...]:
    if victim and command:
        raise InputError("give --victim or -- COMMAND, not both", field="--victim")
    if victim:
        name, _, inline = victim.partition(":")
        spec = parse_victim(name, [p for p in inline.split(",") if p],
                            Footprints.for_host(topo, target))
        return (str(tool("ic-victim")), *spec.argv(), "--reps", str(reps))
    return tuple(command)


def calibration_for(db: Path, topo, fingerprint: str, source: prof_mod.Source, interval_ns: int,
                    probe_cpu: int, aggr_cpu: int, priority: int, to_stderr: bool):
    """The newest probe calibration of this host (running one first when there is none)."""
    _, size_text, lines = source.spec.split(":")
    size = parse_size(size_text)
    found = latest_calibration(db, fingerprint, size=size, lines=int(lines),
                               interval_ns=interval_ns)
    if found:
        return found
    say = err_console if to_stderr else console
    say.print("calibrating the latency probe against our bw aggressor (once per host; "
              "`intercore measure counters calibrate` redoes it) ...", highlight=False)
    started = time.time()
    cal = probe.calibrate(topo, fingerprint, probe_cpu=probe_cpu, aggr_cpu=aggr_cpu, size=size,
                          lines=int(lines), interval_ns=interval_ns, priority=priority,
                          created_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                          on_run=lambda level, done, total: say.print(
                              f"  {done}/{total}: {level}", highlight=False))
    return save_calibration(db, cal, started), cal


def render(summary: dict, *, plot_path: Optional[Path], invocation: Optional[int],
           db: Path, notes: list[str]) -> None:
    sp = summary["spacing"]
    console.print(f"{summary['samples']} samples every {summary['interval_ns'] / 1e3:g} µs over "
                  f"{summary['duration_ns'] / 1e6:.1f} ms; missed {summary['missed']}; spacing "
                  f"median {_us(sp['median_ns'])}, p99 {_us(sp['p99_ns'])}, max "
                  f"{_us(sp['max_ns'])}; profiler CPU {summary['profiler_cpu_pct'] or 0:.0f}% "
                  f"of its core; {summary['tags']} tags", highlight=False)
    table = Table(title="memory traffic per source")
    for col in ("source", "kind", "median", "p99", "max", "threshold", "spikes"):
        table.add_column(col)
    for s in summary["sources"]:
        unit = " MB/s" if s.get("mbps_median") is not None else f" {s['unit']}"
        med = s.get("mbps_median", s.get("rate_median"))
        table.add_row(s["name"] + (" (estimate)" if s["estimated"] else ""), s["kind"],
                      _num(med, unit), _num(s.get("mbps_p99"), " MB/s"),
                      _num(s.get("mbps_max"), " MB/s"), _num(s.get("threshold_mbps"), " MB/s"),
                      str(len(s["spikes"])) if s.get("mbps_median") is not None else "-")
    console.print(table)
    for s in summary["sources"]:
        if not s["spikes"]:
            continue
        tagged = [k for k in s["spikes"] if k["region"]]
        shown = tagged if tagged and summary["tags"] else s["spikes"]
        t = Table(title=f"spikes of {s['name']} (≥ {s['threshold_mbps']:.0f} MB/s for ≥ "
                        f"{summary['min_spike_samples']} samples)"
                        + (", inside the command's regions" if shown is tagged else ""))
        for col in ("start ms", "µs", "peak MB/s", "mean MB/s", "region", "site", "last tag"):
            t.add_column(col)
        for k in shown[:30]:
            t.add_row(f"{k['start_ns'] / 1e6:.3f}", f"{(k['end_ns'] - k['start_ns']) / 1e3:.0f}",
                      f"{k['peak_mbps']:.0f}", f"{k['mean_mbps']:.0f}", k["region"] or "-",
                      k["site"] or "-", k["last_tag"] or "-")
        console.print(t)
        hidden = len(s["spikes"]) - min(30, len(shown))
        if hidden:
            outside = len(s["spikes"]) - len(tagged) if shown is tagged else 0
            console.print(f"... {hidden} more" + (f" ({outside} outside every region: the "
                                                  "command's set-up)" if outside else "")
                          + " (--json lists all)", highlight=False)
    for note in notes:
        warn(note, label="note")
    if plot_path:
        console.print(f"plot: {plot_path}", highlight=False)
    if invocation is not None:
        console.print(f"stored as invocation {invocation} in {db} (`intercore measure profile show "
                      f"{invocation}` re-draws it)", highlight=False)


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f} µs"


def _num(v, unit: str) -> str:
    return "-" if v is None else f"{v:,.1f}{unit}"


def run_profile(*, command: tuple[str, ...], self_test_ns: int, interval_ns: int,
                source_name: str, cpu: Optional[int], target_cpu: Optional[int],
                priority: Optional[int], duration_ns: int, threshold: Optional[float],
                min_duration_ns: int, out: Optional[Path], db: Path, argv: list[str],
                to_stderr: bool) -> tuple[dict, Optional[Path], Optional[int], list[str]]:
    """Profile `command` (or the self-test) and store it; (summary, plot, invocation, notes)."""
    from ..host.report import host_report

    topo = read_topology()
    cpu, target = _cpus(topo, cpu, target_cpu)
    if priority is None:
        priority = DEFAULT_PRIORITY if rt_permitted() else 0
    probe_src = probe.probe_source(probe.default_probe_size(topo))
    statuses = bwsource.host_sources(target, probe_src)
    chosen = bwsource.choose(statuses, source_name)
    if chosen.source is None:
        raise HostUnsupported(f"source {chosen.name}: {chosen.reason}")
    # The sampler busy-waits between samples: beside the command on one core's other thread
    # it slows the command through the core (issue 24: 1.6x on a compute-bound matmul).
    shared = core_warning(topo, cpu, [target], "the profiler's busy-wait sampler")
    notes = [shared] if shared else []
    if chosen.kind == "probe":
        lacks = "; ".join(f"{s.name}: {s.reason}" for s in statuses if s.source is None)
        notes.append(f"no counter sees memory traffic here ({lacks}); using the latency probe")
    estimator = None
    fingerprint = host_report().fingerprint()
    if chosen.kind == "probe":
        _, cal = calibration_for(db, topo, fingerprint, chosen.source, interval_ns, cpu, target,
                                 priority, to_stderr)
        if cal.usable:
            estimator = cal
        else:
            notes.append(f"no bandwidth estimate: {cal.reason}; the profile shows the probe's "
                         "latency per line")
    spec = prof_mod.ProfileSpec((chosen.source,), command=command, self_test_ns=self_test_ns,
                                interval_ns=interval_ns, cpu=cpu, target_cpu=target,
                                priority=priority, duration_ns=duration_ns)
    started = time.time()
    raw = prof_mod.run(spec)
    min_samples = max(1, math.ceil(min_duration_ns / interval_ns))
    prof = prof_mod.analyse(raw, estimator, threshold_mbps=threshold, min_samples=min_samples)
    summary = prof.summary()
    if self_test_ns:
        summary["footprint"] = prof_mod.footprint(prof)
    if raw.end.get("missed"):
        share = raw.end["missed"] / max(1, raw.end["missed"] + raw.end["samples"])
        if share > 0.01:
            notes.append(f"{share:.0%} of the sample slots were missed: the profiler's core was "
                         "not its own (other tasks, or RT throttling at "
                         "/proc/sys/kernel/sched_rt_runtime_us)")
    plot_path = None
    if out is not None:
        shown = ' '.join(Path(c).name if i == 0 else c for i, c in enumerate(command))
        plot_path = plot(prof, out / "profile.png", title=shown or "self-test")
    params = {"command": list(command), "self_test_ns": self_test_ns, "cpu": cpu,
              "target_cpu": target, "priority": priority, "interval_ns": interval_ns,
              "source": chosen.name, "threshold_mbps": threshold,
              "min_duration_ns": min_duration_ns}
    invocation = save_profile(db, prof, argv=argv, started_at=started, summary=summary,
                              params=params)
    summary["invocation"] = invocation
    summary["notes"] = notes
    summary["command_output_tail"] = raw.command_output[-2000:]
    return summary, plot_path, invocation, notes


@handle_errors
def profile_cmd(
    command: Optional[List[str]] = typer.Argument(
        None, metavar="-- COMMAND [ARG]...", help="The program to profile, after `--`."),
    victim: Optional[str] = typer.Option(
        None, "--victim", help="Profile one of our victims instead of a command, e.g. "
                               "susan or stream:size=64M (its regions become tags)."),
    reps: int = typer.Option(10, "--reps", help="Repetitions of --victim."),
    interval: str = typer.Option("10us", "--interval", help="Time between samples."),
    source: str = typer.Option("auto", "--source",
                               help="auto, probe, mbm or perf:EVENT (`intercore measure counters "
                                    "list` shows this host's)."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="The profiler's core (default: "
                                                          "one the command does not use)."),
    target_cpu: Optional[int] = typer.Option(None, "--target-cpu",
                                             help="Pin the command here (default: the "
                                                  "victim CPU `measure` uses)."),
    priority: Optional[int] = typer.Option(None, "--rt-priority",
                                           help="Profiler SCHED_FIFO priority (default 10 "
                                                "where allowed; 0: none)."),
    self_test: Optional[str] = typer.Option(
        None, "--self-test", help="Profile a counting loop for this long instead: its "
                                  "profile must be flat; prints the profiler's footprint."),
    duration_text: str = typer.Option("0s", "--duration",
                                      help="Stop after this long (0s: when the command "
                                           "ends)."),
    threshold: Optional[float] = typer.Option(None, "--threshold",
                                              help="Spike threshold in MB/s (default: "
                                                   "median + 6 MAD)."),
    min_duration: str = typer.Option("20us", "--min-duration",
                                     help="A spike lasts at least this long."),
    out: Path = typer.Option(Path("intercore-profile"), "--out", "-o",
                             help="Directory for the plot."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Sample memory bandwidth every --interval while COMMAND runs (paper 004).

    The profiler busy-waits on a core of its own (a timer would be late by a good part of
    10 µs) and keeps its samples in memory until the command ends. Region markers in the
    command (IC_REGION_BEGIN/END, as in every intercore victim) become tags: each spike
    is reported with the region it falls in and the marker's source line. The source is
    named in every reading: an uncore or core perf counter of this CPU model, resctrl
    MBM, or, where no counter sees memory, the latency probe calibrated against our
    rate-throttled bw aggressor.

    Examples:

        intercore measure profile run --victim susan
        intercore measure profile run --interval 50us -- ./my-app --input x
        intercore measure profile run --self-test 200ms
    """
    import sys

    interval_ns = duration(interval, field="--interval")
    if not 1_000 <= interval_ns <= 1_000_000_000:
        raise InputError("must be 1us..1s", field="--interval")
    self_ns = duration(self_test, field="--self-test") if self_test else 0
    if self_test and self_ns <= 0:
        raise InputError("must be positive", field="--self-test")
    if reps < 1:
        raise InputError("must be at least 1", field="--reps")
    topo = read_topology()
    _, target = _cpus(topo, cpu, target_cpu)
    cmd = _command(victim, command or [], reps, topo, target)
    if bool(cmd) == bool(self_ns):
        raise InputError("give a command after --, --victim, or --self-test (one of them)",
                         field="COMMAND")
    paths.output_dir(out, "--out")
    paths.store_file(db)
    out.mkdir(exist_ok=True)
    summary, plot_path, inv, notes = run_profile(
        command=cmd, self_test_ns=self_ns, interval_ns=interval_ns, source_name=source,
        cpu=cpu, target_cpu=target, priority=priority,
        duration_ns=duration(duration_text, field="--duration"), threshold=threshold,
        min_duration_ns=duration(min_duration, field="--min-duration"), out=out, db=db,
        argv=sys.argv, to_stderr=json_out)
    if json_out:
        print_json({**summary, "plot": str(plot_path) if plot_path else None})
        return
    render(summary, plot_path=plot_path, invocation=inv, db=db, notes=notes)
    if "footprint" in summary:
        _render_footprint(summary["footprint"])

@handle_errors
def profile_show(
    invocation: int = typer.Argument(..., metavar="ID", help="A stored profile."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Spike threshold, "
                                                                         "MB/s."),
    min_duration: str = typer.Option("20us", "--min-duration", help="Shortest spike."),
    out: Path = typer.Option(Path("intercore-profile"), "--out", "-o",
                             help="Directory for the plot."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Re-analyse and re-draw a stored profile (other spike settings allowed)."""
    if not db.exists():
        raise InputError(f"no results store at {db}", field="--db")
    paths.output_dir(out, "--out")
    with Store.open(db) as store:
        raw = load_profile(store, invocation)
        inv = store.get_invocation(invocation)
    assert inv is not None  # load_profile refused an invocation that is not there
    estimator = None
    est = next((s.get("estimator") for s in inv.summary.get("sources", [])
                if s.get("estimator")), None)
    if est is not None:
        found = latest_calibration(db, est["fingerprint"], size=probe_size(raw),
                                   lines=probe_lines(raw), interval_ns=raw.spec.interval_ns)
        estimator = found[1] if found else None
    min_samples = max(1, math.ceil(duration(min_duration, field="--min-duration")
                                   / raw.spec.interval_ns))
    prof = prof_mod.analyse(raw, estimator, threshold_mbps=threshold, min_samples=min_samples)
    out.mkdir(exist_ok=True)
    path = plot(prof, out / f"profile-{invocation}.png")
    summary = prof.summary()
    if json_out:
        print_json({**summary, "invocation": invocation, "plot": str(path)})
        return
    render(summary, plot_path=path, invocation=None, db=db, notes=[])


def probe_size(raw) -> int:
    return next(int(s["bytes"]) for s in raw.ready["sources"] if s["kind"] == "probe")


def probe_lines(raw) -> int:
    return next(int(s["lines"]) for s in raw.ready["sources"] if s["kind"] == "probe")


def _render_footprint(fp: dict) -> None:
    verdict = "flat" if fp["flat"] else "NOT flat"
    console.print(f"self-test: the counting loop's profile is {verdict}", highlight=False)
    for s in fp["sources"]:
        parts = [f"  {s['name']}:"]
        if s.get("median_mbps") is not None:
            parts.append(f"median {s['median_mbps']:.1f} MB/s, p99 {s['p99_mbps']:.1f} MB/s, "
                         f"{s['spikes']} spikes")
        if "probe_own_mbps" in s:
            parts.append(f"the probe itself reads {s['probe_own_mbps']:.1f} MB/s")
        console.print(" ".join(parts), highlight=False)
