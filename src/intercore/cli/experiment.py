"""`intercore mitigate protection`: paper 000's Solo / Interference / Protected experiment."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..base.errors import InputError
from ..base.units import duration
from ..mitigate.experiment import protection as experiment
from .measure import DB_HELP, with_phases
from . import paths
from .output import JSON_HELP, console, handle_errors, print_json, warn


def _fmt(value: Optional[float], spec: str = ".1f") -> str:
    return "insufficient n" if value is None else format(value, spec)


def _steal(per_cpu: Optional[dict]) -> str:
    """What the hypervisor took from the experiment's CPUs: "?" where the host does not say."""
    return "?" if per_cpu is None else f"{sum(per_cpu.values()):.0f}"


def render(doc: dict) -> None:
    for name, placement in doc["placements"].items():
        victim = placement["victim"]
        table = Table(title=f"{name}: {victim['name']} response times (T = "
                            f"{victim['period_ms']:g} ms, D = {victim['deadline_ms']:g} ms)")
        for col in ("scenario", "n", "misses", "miss ratio [95% CI]", "p50 ms", "p99 ms",
                    "max ms", "noise progress", "steal ms"):
            table.add_column(col, justify="left" if col == "scenario" else "right")
        for scenario in experiment.SCENARIOS:
            s = placement[scenario]
            lo, hi = s["miss_ratio_ci95"]
            table.add_row(scenario, str(s["n"]), str(s["misses"]),
                          f"{s['miss_ratio']:.0%} [{lo:.0%}, {hi:.0%}]", _fmt(s["p50_ms"]),
                          _fmt(s["p99_ms"]), _fmt(s["max_ms"]),
                          "-" if s["noise_progress"] is None else f"{s['noise_progress']:.0%}",
                          _steal(s.get("host_steal_ms")))
        console.print(table)
        mon = placement.get("monitor")
        if mon:
            lat = mon["latency"]
            console.print(f"monitor ({mon['policy']}): {mon['freezes']} freezes, "
                          f"{mon['cap_hits']} cap hits, CPU overhead {mon['overhead_pct']:.2f}% "
                          f"of one CPU; {mon['latency_from']}-to-freeze p50 "
                          f"{_fmt(lat['p50_ns'] and lat['p50_ns'] / 1e3)} µs, p99 "
                          f"{_fmt(lat['p99_ns'] and lat['p99_ns'] / 1e3)} µs (n = {lat['n']})",
                          highlight=False)
        if placement.get("protection_refused"):
            warn(f"{name}: Protected is not protection: {placement['protection_refused']}")
        for note in placement["notes"]:
            console.print(f"  note: {note}", highlight=False)
        for path in placement["figures"]:
            console.print(f"  figure: {path}", highlight=False)
    if doc.get("invocation_id") is not None:
        console.print(f"stored as invocation {doc['invocation_id']}")


@handle_errors
def protection_cmd(
    jobs: int = typer.Option(100, "--jobs", min=2, max=experiment.MAX_JOBS,
                             help="Victim jobs per scenario (the paper: 100)."),
    quick: bool = typer.Option(False, "--quick", help="20 jobs per scenario: a smoke run."),
    placement: Optional[List[str]] = typer.Option(
        None, "--placement", help="same-core (the paper's) or cross-core; repeat for both "
                                  "(default: both)."),
    policy: str = typer.Option("event", "--policy",
                               help="Monitor policy: event (freeze at each critical release, "
                                    "thaw at completion) or poll (the paper's CPU-usage poll)."),
    interval: str = typer.Option("50ms", "--interval", help="Poll interval (poll policy)."),
    theta: float = typer.Option(1.5, "--theta", help="Algorithm 1's threshold θ on I."),
    taskset: Optional[Path] = typer.Option(
        None, "--taskset", metavar="FILE",
        help="Your task set instead of the placements: one critical task with a cpu (your "
             "program built with ic_task.h, say) and one best-effort task."),
    max_freeze: str = typer.Option("50%", "--max-freeze",
                                   help="Event policy: longest freeze per victim period "
                                        "(share of the period or a duration), so best-effort "
                                        "work is never starved."),
    out: Path = typer.Option(Path("protection"), "--out", "-o",
                             help="Directory for the figures, task sets and monitor logs."),
    root: str = typer.Option("intercore", "--root", help="Root cgroup for the Protected runs."),
    db: Optional[Path] = typer.Option(Path("intercore.db"), "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Solo / Interference / Protected, as in paper 000 §4.4.3, on this host.

    The victim (matrix1, T = 100 ms, D = 30 ms) runs alone (Solo), beside a bandwidth writer
    (T = 200 ms) with no mitigation (Interference), and again with the cgroup plan that
    Algorithm 1 derives from the measured interference and the freezer monitor (Protected).
    `same-core` puts both on one CPU (the paper's placement); `cross-core` puts a
    shared-cache-sized pointer chase and a cache-thrashing writer on different CPUs.

    With --taskset the same three scenarios run on your task set instead: its critical task
    alone, beside its best-effort task, and protected by the plan Algorithm 1 makes from
    what those runs measured (the monitor on a CPU other than the critical task's).

    Needs root (SCHED_FIFO, cgroups, the freezer) and two online CPUs. Writes Fig. 7-9-like
    PNGs per placement to --out and every job to the store.

    Examples:

        intercore mitigate protection --quick

        intercore mitigate protection --taskset my-controller.yaml --jobs 200

        intercore mitigate protection --placement same-core --policy poll --interval 1ms --json
    """
    if policy not in ("event", "poll"):
        raise InputError("choose event or poll", field="--policy")
    if taskset is not None and placement:
        raise InputError("--taskset runs the task set as it places its tasks; leave out "
                         "--placement", field="--placement")
    interval_ns = duration(interval, field="--interval")
    paths.output_dir(out, "--out")
    paths.store_file(db)
    cfg = experiment.Config(jobs=20 if quick else jobs, policy=policy, interval_ns=interval_ns,
                            theta=theta, placements=tuple(placement or experiment.PLACEMENTS),
                            root_name=root, out_dir=out, max_freeze=max_freeze,
                            taskset=taskset)
    doc = with_phases("starting", lambda phase: experiment.run(cfg, db=db, argv=sys.argv,
                                                              on_phase=phase),
                      to_stderr=json_out)
    if json_out:
        print_json(doc)
    else:
        render(doc)
