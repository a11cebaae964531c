"""`intercore compile manage -- APP`: run any OpenMP or pthread program under the run-time
manager."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

import typer

from ..base.errors import HostUnsupported, InputError
from ..base.parse import format_cpu_list
from ..compile.manager import why_it_cannot_help
from ..host.topology import read_topology
from .measure import _cpus
from .output import JSON_HELP, handle_errors, print_json


@handle_errors
def manage_cmd(
    ctx: typer.Context,
    interval: int = typer.Option(200, "--interval", min=10, max=60_000,
                                 help="Sampling period in ms."),
    cpus: Optional[str] = typer.Option(None, "--cpus",
                                       help="CPUs it may hand out (default: its own)."),
    top: Optional[int] = typer.Option(None, "--top", min=1,
                                      help="Threads favoured (default: CPUs - 1)."),
    heatmap: Optional[Path] = typer.Option(
        None, "--heatmap", help="heatmap.json: predicted slowdowns, matched to thread "
                                "names (a compiled program names threads after its "
                                "processes)."),
    sensitivity: Optional[List[str]] = typer.Option(
        None, "--sensitivity", help="NAME=DELTA: a thread whose name contains NAME is "
                                    "predicted to slow down DELTA x under interference."),
    omp_threads: Optional[int] = typer.Option(None, "--omp-threads", min=1,
                                              help="OMP_NUM_THREADS for the program."),
    pin: bool = typer.Option(False, "--pin", help="Also give each favoured thread a CPU "
                                                   "of its own (the rest share the others)."),
    rt_priority: int = typer.Option(0, "--rt-priority", min=0, max=99,
                                    help="SCHED_FIFO for favoured threads (root)."),
    log: Optional[Path] = typer.Option(None, "--log",
                                       help="Decisions as JSON lines (default: stderr)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run APP and keep its cache-hungry threads off each other's CPUs.

    Every --interval the manager samples each thread of APP: cache misses where the host
    has a PMU, otherwise CPU share and involuntary context switches, weighted by the
    predicted sensitivity (--heatmap, --sensitivity). The threads that rank highest get
    a better nice value (or SCHED_FIFO with --rt-priority), the others a worse one; with
    --pin also a CPU each while the others share the remaining CPUs. It never writes a cgroup
    file, so a thread stays in the group an `intercore mitigate` plan put it in. Each decision is
    logged with its inputs. Exits with APP's status; 3 when the host cannot do what was
    asked, and 3 before APP starts where the manager's signal cannot help: fewer than two
    CPUs to hand out, or neither a cache-miss counter nor a predicted sensitivity (ranked by
    CPU share alone it would favour busy threads, not cache-hungry ones).

    --json prints, once APP has exited, {"status", "pmu", "rankings", "favoured": [{"t",
    "tid", "name", "score"}], "log"}: each time the top thread changed, which one it
    became (APP's own output still goes where it went).

    Example:

        intercore compile manage --log decisions.jsonl -- ./signal
        intercore compile manage --heatmap heatmap.json --omp-threads 2 -- ./app --frames 100
    """
    from ..compile.weights import load_heatmap
    from ..base.native import tool

    command = list(ctx.args)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("give the program to run after --", field="APP")
    args = ["--interval", str(interval), "--rt-priority", str(rt_priority)]
    if cpus is not None:
        offline = set(_cpus(cpus, "--cpus")) - set(read_topology().online_cpus)
        if offline:
            raise InputError(f"CPU(s) {format_cpu_list(offline)} not online on this host",
                             field="--cpus")
        args += ["--cpus", cpus]
    if pin:
        args.append("--pin")
    if top is not None:
        args += ["--top", str(top)]
    if omp_threads is not None:
        args += ["--omp-threads", str(omp_threads)]
    pairs = list(sensitivity or [])
    if heatmap is not None:
        pairs += [f"{r.region}={r.delta}" for r in load_heatmap(heatmap).regions]
    for pair in pairs:
        name, eq, value = pair.partition("=")
        try:
            ok = bool(eq and name) and float(value) > 0
        except ValueError:
            ok = False
        if not ok:
            raise InputError(f"{pair!r}: expected NAME=DELTA with DELTA > 0",
                             field="--sensitivity")
        args += ["--sensitivity", pair]
    helpless = why_it_cannot_help(
        _cpus(cpus, "--cpus") if cpus is not None else tuple(os.sched_getaffinity(0)),
        predicted=bool(pairs))
    if helpless:
        raise HostUnsupported(f"the run-time manager turns itself off: {helpless}")
    with tempfile.TemporaryDirectory(prefix="intercore-manage-") as scratch:
        # --json reads the decisions back: they go to a file even when no --log was asked.
        written = log if log is not None or not json_out else Path(scratch) / "log.jsonl"
        if written is not None:
            args += ["--log", str(written)]
        rc = subprocess.call([str(tool("ic-manage")), *args, "--", *command])
        if json_out and rc != 2:
            print_json({**summary(written), "status": rc,
                        "log": str(log) if log is not None else None})
    raise typer.Exit(rc)


def summary(log: Path) -> dict:
    """What a run's decision log says: whether a PMU ranked the threads, and each change of
    the top thread, in order."""
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    tops = [e for e in events if e.get("event") == "decision" and e.get("rank") == 1]
    # None: APP ended before any thread was ranked, so nothing says which signal would have.
    pmu = (False if any(e.get("event") == "note" and e.get("pmu") is False for e in events)
           else tops[0]["inputs"]["pmu"] if tops else None)
    return {"pmu": pmu, "rankings": len(tops),
            "favoured": [{k: e[k] for k in ("t", "tid", "name", "score")} for e in tops]}
