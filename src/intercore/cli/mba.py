"""`intercore mitigate mba doe`: paper 003's MBA design of experiments on resctrl."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..campaign import mba_study
from ..base.errors import InputError
from ..host.topology import read_topology, validate_cpu
from . import paths
from .output import JSON_HELP, console, handle_errors, print_json


def _ints(text: Optional[str], field: str) -> Optional[tuple[int, ...]]:
    if text is None:
        return None
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError(f"{text!r} is not a comma-separated list of integers",
                         field=field) from None
    if not values:
        raise InputError("give at least one value", field=field)
    return values


@handle_errors
def doe_cmd(
    single: bool = typer.Option(False, "--single-core",
                                help="R^I, R^II, W^II alone under every MBA level "
                                     "(Table IV). The default."),
    multi: bool = typer.Option(False, "--multi-core",
                               help="R^I under 1..3 throttled bw readers (Table V)."),
    reps: int = typer.Option(30, "--reps", help="Repetitions per setup and round."),
    rounds: int = typer.Option(3, "--rounds", help="Interleaved rounds."),
    delays: Optional[str] = typer.Option(None, "--delays",
                                         help="Delays to sweep, e.g. 10,40,50,60,70,80,90 "
                                              "(default: 10-90 by the host's "
                                              "granularity; multi-core: 80,90)."),
    rates: Optional[str] = typer.Option(None, "--rates",
                                        help="MB/s levels where MB: is an absolute rate "
                                             "(AMD, mba_MBps)."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="The critical core."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help="Results store (SQLite)."),
    out: Path = typer.Option(Path("intercore-mba"), "--out", "-o",
                             help="Directory for the generated campaign and the plot."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure how MBA levels limit bandwidth and latency (paper 003).

    Needs resctrl with an MB: resource (Intel RDT MBA, AMD QoS, Arm MPAM); exits 3 with
    the reason on hosts without. The analysis runs as a campaign (resumable with
    `intercore measure campaign resume`), every level reported as requested, written and applied.
    """
    if single and multi:
        raise InputError("choose one of --single-core and --multi-core", field="--multi-core")
    paths.output_dir(out, "--out")
    paths.store_file(db)
    topo = read_topology()
    if cpu is not None:
        validate_cpu(topo, cpu, "--cpu")
    doc = mba_study.run_doe("multi-core" if multi else "single-core", topo, db=db,
                            out=out, reps=reps, rounds=rounds,
                            delays=_ints(delays, "--delays"),
                            rates=_ints(rates, "--rates"), cpu=cpu)
    if json_out:
        print_json(doc)
        return
    render(doc)


def render(doc: dict) -> None:
    tables = doc["tables"]
    if "iv" in tables:
        iv = tables["iv"]
        t = Table(title=f"Table IV: T = {iv['T_ns'] / 1e3:.1f} µs for N = {iv['N']} lines "
                        f"(MB: {doc['mode']}, granularity {doc['bandwidth_gran']})")
        for col in ("workload", "level", "MB asked", "written", "applied", "n", "min µs",
                    "p50 µs", "max BW (ops in T)", "% of N"):
            t.add_column(col)
        for r in iv["rows"]:
            applied = ",".join(sorted(set(r["applied"].values()))) or "-"
            ops = f"{'2x' if r['writes_double'] else ''}{r['max_bw_ops']:.0f}"
            t.add_row(r["workload"], r["level"], _v(r["requested"]), _v(r["written"]), applied,
                      str(r["n"]), f"{r['latency_min_ns'] / 1e3:.1f}",
                      f"{r['latency_p50_ns'] / 1e3:.1f}", ops, f"{r['max_bw_pct']:.0f}%")
        console.print(t)
    if "v" in tables:
        t = Table(title="Table V: critical R^I latency against the interference degree")
        for col in ("cores", "delay", "degree", "f(d) from", "n", "p50 µs", "p95 µs"):
            t.add_column(col)
        for r in tables["v"]["rows"]:
            t.add_row(str(r["cores"]), str(r["delay"]), f"{r['id']:.2f}", r["fraction_source"],
                      str(r["n"]), f"{r['latency_p50_ns'] / 1e3:.1f}",
                      f"{r['latency_p95_ns'] / 1e3:.1f}")
        console.print(t)
    for s in doc["skipped"]:
        console.print(f"skipped {s['setup']}: {s['reason']}", highlight=False)
    console.print(f"campaign {doc['campaign']} ({doc['campaign_file']}); plot {doc['plot']}",
                  highlight=False)


def _v(v) -> str:
    return "-" if v is None else str(v)
