"""`intercore results`: list, show and export what earlier runs stored.

`show` recomputes every statistic from the raw samples, so results stored by an older release
are summarised with the current statistics code rather than with numbers frozen at run time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..base.errors import InputError
from ..measure.harness.comparison import Comparison, comparisons
from ..measure.harness.stats import min_n_for
from ..store import DEFAULT_PATH, Store, StoredInvocation
from . import paths
from .exporting import export_target
from .output import JSON_HELP, console, err_console, handle_errors, print_json


DB_OPTION = typer.Option(DEFAULT_PATH, "--db", help="Results store (SQLite file).")
MISSING = "—"


def _open_existing(db: Path) -> Store:
    return paths.open_store(db, first="intercore measure run")


def _invocation_dict(inv: StoredInvocation) -> dict[str, Any]:
    return {
        "id": inv.id, "command": inv.command, "argv": list(inv.argv),
        "started_at": inv.started_at.isoformat(), "finished_at": inv.finished_at.isoformat(),
        "status": inv.status, "params": inv.params, "summary": inv.summary,
        "tool_version": inv.tool_version,
    }


def _when(inv: StoredInvocation) -> str:
    return inv.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")


@handle_errors
def list_cmd(db: Path = DB_OPTION,
             limit: int = typer.Option(20, "--limit", min=1, help="Show the newest N."),
             as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Stored invocations, newest first. n: complete iso/int pairs of the weakest comparison."""
    with _open_existing(db) as store:
        listing = store.list_invocations(limit)
        total = store.count_invocations()
    if as_json:
        print_json([{"id": x.invocation.id, "started_at": x.invocation.started_at.isoformat(),
                     "command": x.invocation.command, "victims": list(x.victims),
                     "aggressor_sets": list(x.aggressor_sets), "n": x.n,
                     "status": x.invocation.status} for x in listing])
        return
    if not listing:
        console.print(f"no invocations stored in {db}")
        return
    table = Table("id", "when", "command", "victims", "aggressor sets", "n", "status")
    for x in listing:
        table.add_row(str(x.invocation.id), _when(x.invocation), x.invocation.command,
                      ", ".join(x.victims), ", ".join(x.aggressor_sets), str(x.n),
                      x.invocation.status)
    console.print(table)
    if total > len(listing):
        console.print(f"{total - len(listing)} older not shown (of {total}): --limit {total} "
                      "shows them all", highlight=False)


@handle_errors
def show_cmd(invocation_id: int = typer.Argument(..., metavar="ID", help="Invocation id."),
             db: Path = DB_OPTION,
             as_json: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """One invocation: parameters, host, workloads and the slowdown of every victim region
    under every aggressor set, recomputed from the raw samples (times in µs)."""
    with _open_existing(db) as store:
        inv = store.get_invocation(invocation_id)
        if inv is None:
            raise InputError(f"no invocation with id {invocation_id} in {db}")
        workloads = store.workloads_for(invocation_id)
        found = comparisons(store.samples_for(invocation_id), {w.id: w.name for w in workloads})
        origin = store.origins.of_invocation(invocation_id)
    if as_json:
        print_json({"invocation": _invocation_dict(inv),
                    "origin": None if origin is None else origin.to_dict(),
                    "host": {"fingerprint": inv.host.fingerprint, "hostname": inv.host.hostname,
                             "kernel": inv.host.kernel, "cpu_model": inv.host.cpu_model,
                             "ncpus": inv.host.ncpus, "info": inv.host.info},
                    "workloads": [{"id": w.id, "role": w.role, "name": w.name, "kind": w.kind,
                                   "params": w.params, "cpu": w.cpu, "stats": w.stats}
                                  for w in workloads],
                    "comparisons": [c.to_dict() for c in found]})
        return
    _print_header(inv)
    if origin is not None:
        console.print(f"origin: invocation {origin.origin_id} of {origin.store} (merged "
                      f"{origin.merged_at.astimezone():%Y-%m-%d %H:%M})", highlight=False)
    _print_workloads(workloads)
    if not found:
        console.print("no complete iso/int pairs in this invocation")
        return
    console.print(_slowdown_table(found))
    console.print(_times_table(found))
    console.print(f"{MISSING}: insufficient n (p90 needs n ≥ {min_n_for(90)}, "
                  f"p99 n ≥ {min_n_for(99)})", style="dim")
    unpaired = sum(c.unpaired for c in found)
    if unpaired:
        console.print(f"{unpaired} int samples had no iso partner and were left out",
                      style="yellow")


def _print_header(inv: StoredInvocation) -> None:
    seconds = (inv.finished_at - inv.started_at).total_seconds()
    h = inv.host
    console.print(f"[bold]invocation {inv.id}[/]: {inv.command} ({inv.status}), "
                  f"{_when(inv)}, {seconds:.1f} s, intercore {inv.tool_version}")
    console.print(f"host: {h.hostname}, {h.cpu_model}, {h.ncpus} CPUs, kernel {h.kernel}",
                  highlight=False)
    console.print(f"argv: {' '.join(inv.argv)}", highlight=False)
    console.print(f"params: {_params(inv.params)}", highlight=False, markup=False)


def _print_workloads(workloads) -> None:
    table = Table("id", "role", "name", "kind", "cpu", "params", title="workloads")
    for w in workloads:
        table.add_row(str(w.id), w.role, w.name, w.kind, _opt(w.cpu), escape(_params(w.params)))
    console.print(table)


def _params(params) -> str:
    """k=v, k=v as the command line spells them (a nested value in JSON): a table cell of
    raw JSON was hard to read."""
    return ", ".join(f"{k}={v if isinstance(v, (str, int, float)) else json.dumps(v)}"
                     for k, v in sorted(dict(params).items())) or "-"


def _opt(value: Any) -> str:
    return MISSING if value is None else str(value)


def _ratio(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def _us(ns: float | None) -> str:
    return MISSING if ns is None else f"{ns / 1000:,.1f}"


def _slowdown_table(found: list[Comparison]) -> Table:
    table = Table("victim", "aggressor set", "region", "n", "Δ", "95% CI", "paired median",
                  "paired max", title="slowdown Δ = median(int) / median(iso)")
    for c in found:
        r = c.result
        lo, hi = r.to_dict()["delta_ci"]
        table.add_row(c.victim, c.aggressor_set, c.region_name, str(r.n), _ratio(r.delta),
                      f"[{_ratio(lo)}, {_ratio(hi)}]", _ratio(r.paired_median),
                      _ratio(r.paired_max))
    return table


def _times_table(found: list[Comparison]) -> Table:
    table = Table("victim", "aggressor set", "region", "cond", "cpu median", "p90", "p99", "max",
                  "wall median", "cpu/wall", "max nivcsw", "CPUs", title="thread CPU time (µs)")
    for c in found:
        for cond, summary, wall in (("iso", c.result.iso, c.wall.iso),
                                    ("int", c.result.int, c.wall.int)):
            table.add_row(c.victim, c.aggressor_set, c.region_name, cond,
                          _us(summary.median), _us(summary.p90), _us(summary.p99),
                          _us(summary.max), _us(wall.median),
                          _ratio(summary.median / wall.median),
                          str(c.max_nivcsw[cond]), ",".join(map(str, c.cpus[cond])))
    return table


@handle_errors
def export_cmd(ids: Optional[list[int]] = typer.Argument(
                   None, metavar="[IDS]...", help="Invocations to export (default: all)."),
               csv_path: Optional[str] = typer.Option(
                   None, "--csv", metavar="PATH|-", help="Write CSV to PATH, or stdout with -."),
               parquet_path: Optional[Path] = typer.Option(
                   None, "--parquet", metavar="PATH",
                   help="Write Parquet to PATH (needs intercore[parquet])."),
               db: Path = DB_OPTION,
               json_out: bool = typer.Option(False, "--json", help=JSON_HELP + " Prints "
                                             '{"samples", "path", "format"} (not with --csv -).')
               ) -> None:
    """Raw samples, one row per sample with its invocation, victim and host."""
    target = export_target(csv_path, parquet_path, json_out)
    with _open_existing(db) as store:
        count = target.write(store.export_table(ids or None))
    target.report(count, json_out)


@handle_errors
def merge_cmd(stores: list[Path] = typer.Argument(..., metavar="STORES...",
                                                  help="Results stores to merge."),
              out: Path = typer.Option(..., "--output", "-o", metavar="PATH",
                                       help="The merged store: created, or merged into when "
                                            "it exists."),
              json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Merge results stores (from other hosts, boards or lab machines) into one.

    Idempotent: an invocation is known by its content, not its id, so one that the output or
    an earlier store holds already is added once, and merging again adds nothing. Every
    invocation and campaign brought in keeps its origin (the store it was first recorded in
    and its id there: `results show ID`), its host and, for campaign runs, its slot. Stores
    written by older releases are read as they are (migrated in memory, never changed).
    A campaign whose name is taken by another campaign (the same file run on another host) is
    renamed NAME@STORE; `intercore measure campaign report NAME NAME@STORE` compares them host by
    host. Everything is checked first and the output is written to a temporary file beside
    it and renamed at the end: a refused merge (exit 2) changes nothing.

    Examples:

        intercore results merge rpi4.db xeon.db -o lab.db

        intercore results merge board-*.db -o lab.db --json

    --json prints {"target", "existed", "invocations", "campaigns", "stores": [{"path",
    "schema_version", "invocations", "already", "samples", "campaigns", "renamed",
    "skipped_runs", "datasets", "renamed_datasets"}]}.
    """
    from ..store import merge
    from .measure import progress_bar

    paths.output_file(out, "--output")
    if not err_console.is_terminal:  # a bar in a log is noise
        result = merge.merge(stores, out)
    else:
        with progress_bar(to_stderr=True) as bar:
            task = bar.add_task("merging", total=None)

            def advance(store: str, done: int, total: int) -> None:
                bar.update(task, description=f"merging {Path(store).name}", completed=done,
                           total=total)

            result = merge.merge(stores, out, progress=advance)
    if json_out:
        print_json(result.to_dict())
        return
    for s in result.stores:
        renamed = "".join(f"; campaign {a} is {b} here" for a, b in s.renamed.items()) + \
            "".join(f"; dataset {a} is {b} here" for a, b in s.renamed_datasets.items())
        console.print(f"{s.path} (schema {s.schema_version}): {s.invocations} invocation(s) "
                      f"added with {s.samples} samples, {s.already} already there, "
                      f"{s.campaigns} campaign(s), {s.skipped_runs} skipped run(s){renamed}",
                      highlight=False)
    console.print(f"{'merged into' if result.existed else 'wrote'} {out}: "
                  f"{result.invocations} invocation(s), {result.campaigns} campaign(s)",
                  highlight=False)


PROTOBUF_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb")


@handle_errors
def timeline_cmd(invocation_id: int = typer.Argument(..., metavar="ID", help="Invocation id."),
                 out: Path = typer.Option(..., "--output", "-o", metavar="PATH",
                                          help="trace.json (Chrome trace events), or .pftrace "
                                               "for Perfetto's protobuf (needs intercore[lab])."),
                 db: Path = DB_OPTION,
                 json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """One invocation as a timeline to open in ui.perfetto.dev or chrome://tracing: per job
    its release, run and deadline; per cgroup the freezer's frozen periods, and per
    best-effort task when it ran and when it was frozen; a bandwidth profile's counters and
    region markers; a measurement's interleaved schedule: its blocks (whose aggressor set had
    its turn), each set on, paused or parked, the canary's regime, and every repetition with
    its regions (placed from their durations: the store keeps block starts, not rep starts).

    Example:

        intercore results timeline 12 -o protection.json

    --json prints {"path", "format", "events"}.
    """
    from ..measure import recorded
    from ..report import timeline

    paths.output_file(out, "--output")
    with _open_existing(db) as store:
        tl = timeline.build(recorded.load(store, invocation_id))
    if out.suffix in PROTOBUF_SUFFIXES:
        from ..report import perfetto

        fmt, count = "perfetto", perfetto.write(tl, out)
    else:
        fmt, count = "json", timeline.write_json(tl, out)
    if json_out:
        print_json({"path": str(out), "format": fmt, "events": count})
        return
    console.print(f"wrote {count} {'packets' if fmt == 'perfetto' else 'events'} to {out}; "
                  "open it in ui.perfetto.dev", highlight=False)
