"""`intercore mitigate gang`: a task set under partitioned real-time gang scheduling (RT-Gang++)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..base.errors import InputError
from ..host.topology import read_topology, validate_cpu
from ..measure.periodic import store as jobstore, taskset
from ..measure.harness.session import rt_permitted
from ..base.units import duration
from ..mitigate.bandwidth import gang as g
from ..mitigate.experiment.scenario import summarize_jobs
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json

SCHEDULER_PRIORITY = 90


def _summaries(ts: taskset.TaskSet, runs: list[g.GangRun]) -> dict:
    out = {}
    for t in ts.tasks:
        jobs = [j for run in runs if t.name in run.results
                for j in run.results[t.name].jobs or ()]  # a command: none
        if jobs and t.role == "critical":
            out[t.name] = summarize_jobs(jobs, None).__dict__
    return out


@handle_errors
def gang_cmd(
    taskset_path: Path = typer.Option(..., "--taskset", help="A task set; its critical tasks "
                                                             "form gangs (gang:, partition:)."),
    jobs: int = typer.Option(50, "--jobs", help="Jobs of each critical task (in all)."),
    experiment: bool = typer.Option(False, "--experiment",
                                    help="Paper 002's comparison: solo, co-run (with the "
                                         "best-effort tasks) and rt-gang, interleaved in "
                                         "rounds."),
    rounds: int = typer.Option(3, "--rounds", help="--experiment: interleaved rounds."),
    lead: str = typer.Option("0s", "--lead", help="Thaw a gang this long before its "
                                                  "release."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="The scheduler's core (default: "
                                                          "unpinned, it mostly sleeps)."),
    throttle: str = typer.Option("freeze", "--throttle",
                                 help="Best-effort while a gang runs: freeze, or regulate "
                                      "(held to --budget per --period by ic-regulate)."),
    budget: str = typer.Option("100MB/s", "--budget", help="--throttle regulate: the "
                                                           "best-effort budget (RT-Gang++ "
                                                           "used 100MB/s per 1ms)."),
    period: str = typer.Option("1ms", "--period", help="--throttle regulate: its period."),
    source: str = typer.Option("auto", "--source", help="--throttle regulate: as for "
                                                        "`intercore mitigate regulate`."),
    seed: int = typer.Option(1, "--seed", help="Order of the interleaved scenarios."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    out: Path = typer.Option(Path("intercore-gang"), "--out", "-o",
                             help="Directory for the scheduler's logs."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run a task set so that at most one real-time gang runs per partition at a time.

    Critical tasks naming the same `gang:` run together (a virtual gang); a task without
    one is a gang of its own; `partition:` groups gangs that must not run together
    (default: one partition). Every gang is a cgroup that ic-gang keeps frozen unless it
    is its partition's turn (highest priority first, preempting a lower one), and the
    best-effort tasks are frozen while any gang runs. A watchdog process thaws everything
    if the scheduler dies. Reports response times and deadline misses per task, and
    checks from the jobs and the scheduler's log that gangs of one partition never ran
    together.

    Example:

        intercore mitigate gang --taskset examples/tasksets/rt-gang.yaml --experiment
    """
    if jobs < 1 or rounds < 1:
        raise InputError("must be at least 1", field="--jobs" if jobs < 1 else "--rounds")
    ts = taskset.load(taskset_path)
    if not g.gangs_of(ts):
        raise InputError("the task set has no critical task to form a gang", field="tasks",
                         source=str(taskset_path))
    if cpu is not None:
        validate_cpu(read_topology(), cpu, "--cpu")
    paths.output_dir(out, "--out")
    paths.store_file(db)
    prio = SCHEDULER_PRIORITY if rt_permitted() else 0
    lead_ns = duration(lead, field="--lead")
    root_name = f"intercore-gang-{os.getpid()}"
    if throttle not in ("freeze", "regulate"):
        raise InputError("freeze or regulate", field="--throttle")
    regulate = _regulate(budget, duration(period, field="--period"), source, db, json_out) \
        if throttle == "regulate" else None
    out.mkdir(exist_ok=True)  # once every option is known to be good (its parent exists)
    started = time.time()
    say = err_console if json_out else console
    if experiment:
        runs = g.interleaved(ts, jobs, rounds, seed, cpu=cpu, priority=prio, lead_ns=lead_ns,
                             out=out, root_name=root_name, regulate=regulate,
                             on_run=lambda s, d, n: say.print(f"{d}/{n}: {s}",
                                                              highlight=False))
    else:
        counts = {t.name: g._jobs_for(ts, t.name, jobs) for t in ts.tasks}
        runs = {"rt-gang": [g.run_scenario(ts, "rt-gang", counts, cpu=cpu, priority=prio,
                                           lead_ns=lead_ns, log_path=out / "gang.jsonl",
                                           root_name=root_name, regulate=regulate)]}
    checks = [g.check_gangs(ts, r) for r in runs.get("rt-gang", [])]
    doc: dict[str, Any]
    doc = {"taskset": str(taskset_path),
           "gangs": [gg.__dict__ for gg in g.gangs_of(ts)],
           "scenarios": {s: _summaries(ts, rs) for s, rs in runs.items() if rs},
           "checks": checks,
           "scheduler": [r.stats.__dict__ | {"gangs": [x.__dict__ for x in r.stats.gangs]}
                         for r in runs.get("rt-gang", []) if r.stats],
           "regulator": [r.regulator.to_dict() for r in runs.get("rt-gang", [])
                         if r.regulator]}
    tasks = [jobstore.TaskRow.of(t) for t in ts.tasks]
    labelled = [(f"{s}#{i}", r.results) for s, rs in runs.items() for i, r in enumerate(rs)]
    doc["invocation"] = jobstore.save_runs(
        db, command="gang", argv=sys.argv, tasks=tasks, runs=labelled,
        params={"taskset": ts.to_dict(), "jobs": jobs, "rounds": rounds,
                "experiment": experiment, "lead_ns": lead_ns},
        summary={k: v for k, v in doc.items() if k != "taskset"}, started_at=started,
        finished_at=time.time())
    if json_out:
        print_json(doc)
        return
    render(doc)


def _regulate(budget: str, period_ns: int, source: str, db: Path, to_stderr: bool):
    """The ic-regulate that holds the best-effort group to its budget while gangs run: the
    spec is built once (a probe calibration, if needed, before any run), its group and gate
    filled in per run."""
    import dataclasses

    from ..host.topology import read_topology
    from .profile import _cpus
    from .regulate import build_spec

    topo = read_topology()
    my_cpu, target = _cpus(topo, None, None)
    base, _ = build_spec(best=("/",), critical=(), source=source, budget=budget,
                         period_ns=period_ns, action="freeze", cpu=my_cpu, target=target,
                         priority=SCHEDULER_PRIORITY - 1 if rt_permitted() else 0,
                         duration_ns=0, log=None, db=db, to_stderr=to_stderr)
    return lambda directory, gate: dataclasses.replace(base, best_effort=(directory,), gate=gate)


def render(doc: dict) -> None:
    for gg in doc["gangs"]:
        console.print(f"gang {gg['name']} (priority {gg['priority']}, partition "
                      f"{gg['partition']}): {', '.join(gg['members'])}", highlight=False)
    table = Table(title="critical tasks: response time and deadline misses")
    for col in ("scenario", "task", "n", "p50 ms", "p99 ms", "max ms", "misses"):
        table.add_column(col)
    for scenario, tasks in doc["scenarios"].items():
        for name, s in tasks.items():
            p99 = "-" if s["p99_ms"] is None else f"{s['p99_ms']:.2f}"
            table.add_row(scenario, name, str(s["n"]), f"{s['p50_ms']:.2f}", p99,
                          f"{s['max_ms']:.2f}", f"{s['misses']}")
    console.print(table)
    for check in doc["checks"]:
        for pair in check["same_partition"]:
            console.print(f"gangs {pair['a']} and {pair['b']} (partition {pair['partition']}) "
                          f"ran together for {pair['overlap_ns'] / 1e3:.0f} µs", highlight=False)
        spread = check["virtual_gang_start_spread_ns"]
        if spread["n"]:
            console.print(f"virtual gangs: members' job starts {spread['median'] / 1e3:.0f} µs "
                          f"apart (median; max {spread['max'] / 1e3:.0f} µs, n = "
                          f"{spread['n']})", highlight=False)
    console.print(f"jobs stored as invocation {doc['invocation']}", highlight=False)
