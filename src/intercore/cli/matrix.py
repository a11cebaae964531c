"""`intercore measure matrix`: the interference matrix of a task set, measured on this host."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..base import outputs
from ..base.errors import InputError
from ..host.topology import read_topology
from ..measure.periodic import taskset as tasksets
from ..measure.periodic.matrix import InterferenceMatrix, plot_heatmap
from ..measure.periodic.matrix_runner import canary_for, measure_matrix, store_matrix
from ..base.units import duration
from ..mitigate.plan.algorithm1 import check_theta
from .measure import DB_HELP, progress_bar
from .paths import output_file, store_file
from .output import JSON_HELP, console, handle_errors, print_json, warn


def render(matrix: InterferenceMatrix, theta: float) -> None:
    if matrix.provisional:
        warn("provisional matrix: " + "; ".join(matrix.notes))
    worst = ", worst regime per cell" if matrix.regime_of else ""
    table = Table(title=f"directed degradation D[task][beside] ({matrix.statistic} of response "
                        f"times beside / alone{worst}); * marks symmetric I > θ = {theta:g}")
    table.add_column("task \\ beside")
    for name in matrix.tasks:
        table.add_column(name, justify="right")
    if matrix.alone_misses:
        table.add_column("missed alone", justify="right")
    for i, name in enumerate(matrix.tasks):
        cells = []
        for j, other in enumerate(matrix.tasks):
            value = matrix.directed[i][j]
            if value is None:
                cells.append("-")
                continue
            hot = (matrix.interference(name, other) or 0) > theta
            regime = matrix.regime_of[i][j] if matrix.regime_of else None
            missed = f", {matrix.misses[i][j]} missed" if matrix.misses else ""
            cells.append(f"{value:.2f}{'*' if hot else ''} (n={matrix.n[i][j]}{missed}"
                         + (f", {regime}" if regime else "") + ")")
        if matrix.alone_misses:
            alone_missed, alone_jobs = matrix.alone_misses[i]
            cells.append(f"{alone_missed}/{alone_jobs}")
        table.add_row(name, *cells)
    console.print(table)


@handle_errors
def matrix_cmd(
    taskset: Path = typer.Argument(..., help="Task set YAML (see examples/tasksets/)."),
    rounds: int = typer.Option(3, "--rounds", min=1, max=1000,
                               help="Rounds; each runs every task alone and "
                                    "every pair together, in random order."),
    block: str = typer.Option("2s", "--block", help="Duration of one alone/pair run."),
    statistic: str = typer.Option("max", "--statistic",
                                  help="max (worst case, for WCET budgets) or p99 "
                                       "(needs >= 100 jobs per cell)."),
    theta: float = typer.Option(1.5, "--theta", help="Only marks the table and heatmap."),
    out: Optional[Path] = typer.Option(None, "--out", "-o",
                                       help="Prefix of the outputs (default: the task set's "
                                            "name): PREFIX.json, .csv, .png."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1,
                             help="Seed of the run order."),
    canary: bool = typer.Option(True, "--canary/--no-canary",
                                help="Probe cache sharing between blocks; each cell keeps "
                                     "its worst regime."),
    db: Optional[Path] = typer.Option(Path("intercore.db"), "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure I: every task alone and every pair together, on this host.

    D[i][j] is how much task i degrades when task j runs beside it: the max (or p99) of
    its response times beside j over the same statistic alone. The symmetric
    I = max(D[i][j], D[j][i]) is what Algorithm 1 (`intercore mitigate plan`) reads.
    Each block starts its tasks afresh; their first job (page faults, cold caches) is
    run and stored but left out of D, as it is slow beside anything.
    Writes PREFIX.json (the artefact), PREFIX.csv and a heatmap PREFIX.png; every job
    goes to the store. Needs root when tasks use SCHED_FIFO priorities.

    Example:

        intercore measure matrix examples/tasksets/paper-000.yaml --rounds 2 --block 1s
    """
    if statistic not in ("max", "p99"):
        raise InputError("choose max or p99", field="--statistic")
    block_ns = duration(block, field="--block", lo_ns=1_000_000, hi_ns=3_600_000_000_000)
    check_theta(theta)
    ts = tasksets.load(taskset)
    if len(ts.tasks) < 2:
        raise InputError("a matrix needs at least two tasks", source=str(taskset),
                         field="tasks")
    prefix = out or outputs.inside(Path(), ts.name, source=str(taskset), field="name")
    for suffix in (".json", ".csv", ".png"):
        output_file(prefix.with_suffix(suffix), "--out")
    store_file(db)
    started = time.time()
    probe, vcpu, share = canary_for(ts, read_topology()) if canary else (None, None, False)
    with progress_bar(json_out) as bar:
        task = bar.add_task("starting", total=None)
        run = measure_matrix(
            ts, rounds=rounds, block_ns=block_ns, statistic=statistic, seed=seed,
            canary=probe, canary_cpu=vcpu, can_share=share,
            on_block=lambda i, n, b: bar.update(task, description=b.label, completed=i,
                                                total=n))
    matrix = run.matrix
    paths = {"json": prefix.with_suffix(".json"), "csv": prefix.with_suffix(".csv"),
             "png": prefix.with_suffix(".png")}
    matrix.save_json(paths["json"])
    matrix.save_csv(paths["csv"])
    plot_heatmap(matrix, paths["png"], theta)
    doc: dict[str, Any]
    doc = {"matrix": matrix.to_dict(), "files": {k: str(v) for k, v in paths.items()},
           "blocks": [{"label": b.label, "regime": r}
                      for (b, _), r in zip(run.blocks, run.regimes)],
           "probes": [p.to_dict() for p in run.probes]}
    if db is not None:
        doc["invocation_id"] = store_matrix(
            db, run, ts, command="matrix", argv=sys.argv,
            params={"taskset": str(taskset), "rounds": rounds, "block_ns": block_ns,
                    "statistic": statistic, "seed": seed},
            summary=doc, started_at=started)
    if json_out:
        print_json(doc)
        return
    render(matrix, theta)
    for kind, path in paths.items():
        console.print(f"{kind}: {path}", highlight=False)
    if doc.get("invocation_id") is not None:
        console.print(f"stored as invocation {doc['invocation_id']}")
