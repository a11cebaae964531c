"""`intercore measure`: the slowdown of one victim under aggressor sets, paired and honest."""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import InputError
from ..host.parse import parse_cpu_list
from ..measure.session import MAX_RUNS, Request, Result, measure
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn

DB_HELP = "Results store (SQLite). Created when missing."

T = TypeVar("T")


def _cpus(text: Optional[str], option: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(parse_cpu_list(text))
    except ValueError:
        raise InputError(f"cannot parse CPU list {text!r} (examples: 1, 1-3, 0,2)",
                         field=option) from None


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def render(result: Result) -> None:
    table = Table(title=f"{result.plan.victim.label} on CPU {result.plan.victim_cpu}: "
                        f"slowdown Δ = median(T_int)/median(T_iso), thread CPU time")
    for col in ("aggressor set", "region", "n", "Δ", "95% CI", "paired med", "paired max",
                "iso med ms", "int med ms", "int p99 ms", "int max ms", "wall Δ"):
        table.add_column(col, justify="left" if col in ("aggressor set", "region") else "right")
    for r in result.regions:
        c = r.result
        table.add_row(r.aggressor_set, r.region_name, str(c.n), f"{c.delta:.3f}",
                      f"[{c.delta_ci[0]:.3f}, {c.delta_ci[1]:.3f}]", f"{c.paired_median:.3f}",
                      f"{c.paired_max:.3f}", _ms(c.iso.median), _ms(c.int.median),
                      _ms(c.int.p99), _ms(c.int.max), f"{r.wall.delta:.3f}")
    console.print(table)
    regime_style = {"shared": "green", "not-shared": "yellow"}.get(result.regime, "red")
    console.print(f"regime: [{regime_style}]{result.regime}[/]" +
                  "".join(f"  ({c['when']}: {c['regime']}, {c['reason']})"
                          for c in result.canaries))
    for w in result.warnings:
        warn(w)
    if result.invocation_id is not None:
        console.print(f"stored as invocation {result.invocation_id} "
                      f"(intercore results show {result.invocation_id})")


def progress_bar(to_stderr: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err_console if to_stderr else console,
                    transient=True)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """A SIGTERM unwinds like Ctrl-C, through every finally block: children stopped, cgroups
    torn down, groups thawed, nothing half-stored."""
    def handler(signum, frame):  # noqa: ARG001 - signal handler signature
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def with_phases(title: str, work: Callable[[Callable[[str], None]], T], *,
                to_stderr: bool) -> T:
    """Run `work(on_phase)` under a progress line that shows each phase it reports, with
    SIGTERM unwinding cleanly."""
    with sigterm_unwinds(), progress_bar(to_stderr) as bar:
        task = bar.add_task(title, total=None)
        return work(lambda text: bar.update(task, description=text))


def run_measure(req: Request, db: Optional[Path], json_out: bool) -> Result:
    with sigterm_unwinds(), progress_bar(json_out) as bar:
        task = bar.add_task("starting", total=None)
        return measure(
            req, db=db, argv=sys.argv,
            on_phase=lambda text: bar.update(task, description=text, completed=0,
                                             total=None),
            on_rep=lambda done, total: bar.update(task, completed=done, total=total))


def register(app: typer.Typer) -> None:
    @app.command("measure")
    @handle_errors
    def measure_cmd(
        victim: str = typer.Argument(..., metavar="VICTIM",
                                     help="Victim kind or alias with optional parameters: "
                                          "matmul, matrix1, ptrchase:size=8M, stream, qsort, "
                                          "susan:mode=corners. See `intercore workloads`."),
        aggressor: list[str] = typer.Option(
            ["BwWrite(LLC)"], "--aggressor", "-a",
            help="Aggressor set: a preset (BwRead(LLC) ... BkPLLWrite(LLC)), or "
                 "KIND:key=value,... (bw:op=rmw,size=4M,rate=1e6); join members that run "
                 "together with '+', pin one with @CPU. Repeat to compare several sets."),
        param: list[str] = typer.Option([], "--param", "-p",
                                        help="Victim parameter key=value (repeatable)."),
        runs: int = typer.Option(100, "--runs", "-n", min=1, max=MAX_RUNS,
                                 help="Pairs (isolated + interfered) per aggressor set."),
        victim_cpu: Optional[int] = typer.Option(None, "--victim-cpu",
                                                 help="Default: highest online CPU."),
        aggressor_cpus: Optional[str] = typer.Option(
            None, "--aggressor-cpus", help="CPU list for aggressors. Default: the other CPUs "
                                           "sharing the victim's last-level cache."),
        victim_priority: Optional[int] = typer.Option(
            None, "--victim-priority", min=0, max=99,
            help="SCHED_FIFO priority of the victim; 0 = normal. Default 1 where permitted."),
        aggressor_priority: int = typer.Option(0, "--aggressor-priority", min=0, max=99,
                                               help="SCHED_FIFO priority of aggressors."),
        canary: bool = typer.Option(True, "--canary/--no-canary",
                                    help="Probe cache sharing before and after the run."),
        seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1,
                                 help="Seeds the pair order and inputs."),
        db: Path = typer.Option(Path("intercore.db"), "--db", help=DB_HELP),
        no_store: bool = typer.Option(False, "--no-store", help="Do not write the store."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    ) -> None:
        """Measure the slowdown a victim suffers from aggressors on other CPUs.

        Aggressors stay resident and are paused (spinning on registers, still holding their
        CPU) or running before each repetition; every interfered repetition is paired with an
        isolated one next to it in time, in random order. Reports, per region of the victim,
        Δ = median(T_int)/median(T_iso) over thread CPU time with a paired-bootstrap 95% CI,
        the median and max of the per-pair ratios, tails, and the canary regime. Raw samples
        go to the store.

        --json prints {"victim", "aggressors", "regime", "regions": [{"name", "n", "delta",
        "delta_ci", "paired_median", "paired_max", "iso", "int", ...}], ...}.
        """
        req = Request(victim, tuple(param), tuple(aggressor), runs, victim_cpu,
                      _cpus(aggressor_cpus, "--aggressor-cpus"), victim_priority,
                      aggressor_priority, canary, seed)
        paths.store_file(None if no_store else db)
        result = run_measure(req, None if no_store else db, json_out)
        if json_out:
            print_json(result.to_dict())
        else:
            render(result)
