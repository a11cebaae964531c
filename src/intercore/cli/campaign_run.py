"""`intercore measure campaign run | resume | status | report | compare | export`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from ..campaign import results as campaign_results
from ..campaign.spec import check_name
from ..base.sample import TOTAL_REGION
from ..campaign.stats import compare_campaigns
from ..base.errors import InputError
from ..base import stopping
from ..base.stopping import raise_if_dropped, sigterm_unwinds
from ..store import DEFAULT_PATH, Store
from ..store.campaigns import CampaignRow, Slot
from . import paths
from .exporting import export_target
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn

if TYPE_CHECKING:
    from ..campaign.plan import Setup
    from ..campaign.runner import SessionResult

# Planning, enforcement and the report (matplotlib) are imported by the commands that use
# them, so that every other `intercore` command starts quickly.

DB_HELP = "Results store (SQLite)."
QUICK_HELP = "At most 5 repetitions and 2 rounds: a smoke test, not evidence."
CANARY_HELP = ("Probe cache sharing between the blocks of every run (each sample gets its "
               "block's regime) and once before the runs; without it every run's regime is "
               "'unknown'.")
MISSING = "—"


def _open_existing(db: Path) -> Store:
    return paths.open_store(db, first="intercore measure campaign run FILE")


class _Display:
    """Campaign progress: a bar over all runs plus the current setup, or one line per run
    when the output is not a terminal (CI logs, pipes)."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.live = out.is_terminal
        self.rounds = 1
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=out, transient=True,
                                 refresh_per_second=4)
        self.overall = self.current = None
        self.campaign: str | None = None
        self.done = 0
        self.total = 0

    def __enter__(self) -> _Display:
        if self.live:
            self.progress.start()
            self.overall = self.progress.add_task("campaign", total=None)
            self.current = self.progress.add_task("starting", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def _say(self, text: str) -> None:
        (self.progress.console if self.live else self.out).print(text, highlight=False)

    def phase(self, text: str) -> None:
        if self.live:
            self.progress.update(self.current, description=escape(text))

    def session(self, campaign: CampaignRow, total: int, recorded: int) -> None:
        self.campaign = campaign.name
        self.rounds = campaign.plan.get("rounds", 1)
        self.done, self.total = recorded, total
        if self.live:
            self.progress.update(self.overall, description=f"campaign {escape(campaign.name)}",
                                 total=total, completed=recorded)
        else:
            self._say(f"campaign {campaign.name}: {recorded} of {total} runs recorded")

    def run_started(self, slot: Slot, setup: Setup) -> None:
        raise_if_dropped()  # lost while a process that no group owns was starting
        if self.live:
            self.progress.reset(self.current, total=None, description=escape(
                f"round {slot[0]}/{self.rounds}  {setup.name}"))

    def run_finished(self, slot: Slot, status: str, seconds: float, detail: str) -> None:
        self.done += 1
        if self.live:
            self.progress.advance(self.overall)
        if status == "skipped":
            self._say(f"[yellow]skipped[/] {escape(slot[1])} (round {slot[0]}): "
                      f"{escape(detail)}")
        elif not self.live:
            self._say(f"[{self.done}/{self.total}] round {slot[0]} {slot[1]}: {status}, "
                      f"{detail}")


def _session(fn, json_out: bool, db: Path) -> None:
    """Run `fn` (a runner session) with its progress display, then print what it did."""
    with sigterm_unwinds(), _Display(err_console if json_out else console) as display:
        try:
            result = fn(display)
        except BaseException as exc:
            if display.campaign is not None:
                # Stopped by a signal or a failing run: what finished is stored.
                said = (f"stopped after {display.done} of {display.total} runs were recorded; "
                        f"`intercore measure campaign resume {display.campaign} --db {db}` "
                        "continues")
                if stopping.stop_in(exc) is not None:
                    stopping.note(said.removeprefix("stopped "))  # the stop's one line says it
                else:
                    err_console.print(escape(said), highlight=False)
            raise
    if json_out:
        print_json(result.to_dict())
    else:
        _print_session(result, db)


def _print_session(result: SessionResult, db: Path) -> None:
    state = "[green]complete[/]" if result.complete else "[yellow]incomplete[/]"
    console.print(f"campaign [bold]{escape(result.campaign)}[/] (id {result.campaign_id}): "
                  f"{result.done} run(s) done, {result.skipped} skipped this session, "
                  f"{result.already} recorded before; {state} in "
                  f"{result.finished_at - result.started_at:.1f} s; canary regime "
                  f"{result.regime}", highlight=False)
    for w in result.warnings:
        warn(w)
    console.print(f"next: intercore measure campaign report {escape(result.campaign)} --db {db} "
                  f"-o {escape(result.campaign)}.html", highlight=False)


def _status(store: Store, row: CampaignRow) -> dict[str, Any]:
    runs = store.campaigns.runs(row.id)
    by_setup: dict[str, dict[str, Any]] = {
        name: {"name": name, "hash": s["hash"], "done": 0, "skipped": 0, "pending": 0,
               "reasons": []} for name, s in row.setups.items()}
    recorded = set()
    boards: dict[str, dict[str, Any]] = {}
    for r in runs:
        _count_board(boards, store, r)
        entry = by_setup[r.setup]
        entry[r.status] += 1
        if r.reason and r.reason not in entry["reasons"]:
            entry["reasons"].append(r.reason)
        recorded.add((r.round, r.setup))
    for slot in row.schedule:
        if slot not in recorded:
            by_setup[slot[1]]["pending"] += 1
    done = sum(1 for r in runs if r.status == "done")
    skipped = sum(1 for r in runs if r.status == "skipped")
    return {"id": row.id, "name": row.name, "source": row.source,
            "source_exists": Path(row.source).is_file(), "created_at": row.created_at,
            "plan_hash": row.plan_hash, "quick": bool(row.options.get("quick")),
            "rounds": row.plan.get("rounds"), "total": len(row.schedule), "done": done,
            "skipped": skipped, "pending": len(row.schedule) - done - skipped,
            "setups": list(by_setup.values()), "boards": list(boards.values())}


def _count_board(boards: dict[str, dict[str, Any]], store: Store, run) -> None:
    """Runs per board, for a campaign spread over several (the labgrid executor records the
    board of each run; other executors record none)."""
    if run.invocation_id is None:
        return
    invocation = store.get_invocation(run.invocation_id)
    board = invocation.params.get("board") if invocation is not None else None
    if not board:
        return
    entry = boards.setdefault(board["place"], {
        "place": board["place"], "done": 0, "first": run.recorded_at, "last": run.recorded_at,
        **{k: board.get(k) for k in ("address", "hostname", "serial", "model", "kernel",
                                     "firmware")}})
    entry["done"] += 1
    entry["last"] = max(entry["last"], run.recorded_at)


def _print_status(st: dict[str, Any]) -> None:
    state = "complete" if st["pending"] == 0 else f"{st['pending']} pending"
    console.print(f"campaign [bold]{escape(st['name'])}[/] (id {st['id']}), "
                  f"{st['total']} runs = {len(st['setups'])} setups × {st['rounds']} rounds: "
                  f"{st['done']} done, {st['skipped']} skipped, {state}"
                  + ("  [yellow](quick mode)[/]" if st["quick"] else ""), highlight=False)
    console.print(f"file: {escape(st['source'])}"
                  + ("" if st["source_exists"] else "  [red](missing: resume needs it)[/]"),
                  highlight=False)
    table = Table("setup", "hash", "done", "skipped", "pending", "skip reason")
    for s in st["setups"]:
        table.add_row(escape(s["name"]), s["hash"], str(s["done"]), str(s["skipped"]),
                      str(s["pending"]), escape("; ".join(s["reasons"])))
    console.print(table)
    if st["boards"]:
        boards = Table("place", "runs", "last run", "host", "serial", "kernel", "firmware",
                       title="per board")
        for b in st["boards"]:
            boards.add_row(escape(b["place"]), str(b["done"]),
                           b["last"].astimezone().strftime("%Y-%m-%d %H:%M:%S"),
                           escape(str(b["hostname"] or MISSING)),
                           escape(str(b["serial"] or MISSING)), escape(str(b["kernel"])),
                           escape(str(b["firmware"] or MISSING)))
        console.print(boards)


def _ratio(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


@handle_errors
def run_cmd(
    file: Path = typer.Argument(..., metavar="FILE", help="Campaign file (YAML)."),
    quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
    name: Optional[str] = typer.Option(None, "--name", help="Store the campaign under "
                                       "this name instead of the file's (to run a file "
                                       "again in the same store)."),
    canary: bool = typer.Option(True, "--canary/--no-canary", help=CANARY_HELP),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP + " Created when missing."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Plan a campaign file and run every setup once per round.

    Rounds run one after another, the setups of each in a shuffled order (seeded by the
    file's `seed`); the order is stored with the plan. A round's setups of one task run
    as one interleaved run: their engines take turns in randomised blocks, with the
    shared-cache canary between blocks, so all of them meet the same host regimes. Each
    finished run is stored with all its raw samples at once, so the campaign can be
    stopped at any moment (Ctrl-C, SIGTERM, even kill -9) and finished with
    `intercore measure campaign resume NAME`. Setups
    whose mechanism this host cannot enforce (cache colouring or bandwidth reservation
    without resctrl) are recorded as skipped, with the reason; they never run without it.

    Examples:

      intercore measure campaign run examples/campaigns/small.yaml

      intercore measure campaign run sp-impact.yaml --db lab.db --name sp-impact-board2

    --json prints {"campaign", "campaign_id", "total", "done", "skipped", "already",
    "complete", "regime", "warnings", "wall_s", ...}.
    """
    from ..campaign import runner

    paths.store_file(db)
    if name is not None:
        try:
            check_name(name, "campaign name")
        except ValueError as exc:
            raise InputError(str(exc), field="--name") from None
    _session(lambda display: runner.start(file, db, quick_mode=quick, name=name,
                                          canary=canary, listener=display),
             json_out, db)


@handle_errors
def resume_cmd(
    campaign: str = typer.Argument(..., metavar="CAMPAIGN", help="Campaign name or id."),
    force: bool = typer.Option(False, "--force", help="Run the remaining slots even though "
                               "setup hashes changed (file edited, binaries rebuilt, other "
                               "host); every run keeps the hash it ran under and the "
                               "report warns."),
    canary: bool = typer.Option(True, "--canary/--no-canary", help=CANARY_HELP),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Finish a stopped campaign: run the slots not yet recorded, in the stored order.

    The campaign file is planned again and every setup's content hash (configuration,
    workload binaries, host) compared with the stored plan. A changed hash means the
    remaining runs would not measure what the recorded ones did: resume then refuses and
    says which setups changed, unless --force. A setup removed from the file is always
    refused.

    Examples:

      intercore measure campaign resume small

      intercore measure campaign resume 3 --db lab.db --force

    --json prints the same document as `run --json`.
    """
    from ..campaign import runner

    _session(lambda display: runner.resume(campaign, db, force=force,
                                           canary=canary, listener=display),
             json_out, db)


@handle_errors
def status_cmd(
    campaign: Optional[str] = typer.Argument(None, metavar="[CAMPAIGN]",
                                             help="Campaign name or id; all when left out."),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """What a campaign has recorded: runs done, skipped (with reasons) and pending.

    Examples:

      intercore measure campaign status            # every campaign in the store

      intercore measure campaign status small --json

    --json prints {"name", "total", "done", "skipped", "pending", "setups": [{"name",
    "hash", "done", "skipped", "pending", "reasons"}], "boards": [{"place", "done",
    "first", "last", "serial", "kernel", "firmware", ...}], ...}, or a list of them
    ("boards" is empty unless the labgrid executor spread the runs over boards).
    """
    with _open_existing(db) as store:
        rows = [store.campaigns.find(campaign)] if campaign else store.campaigns.all()
        states = [_status(store, row) for row in rows]
    if json_out:
        print_json(states[0] if campaign else states)
        return
    if not states:
        console.print(f"no campaigns in {db}")
    elif campaign:
        _print_status(states[0])
    else:
        table = Table("id", "campaign", "created", "runs", "done", "skipped", "pending")
        for st in states:
            table.add_row(str(st["id"]), escape(st["name"]),
                          st["created_at"].astimezone().strftime("%Y-%m-%d %H:%M"),
                          str(st["total"]), str(st["done"]), str(st["skipped"]),
                          str(st["pending"]))
        console.print(table)

@handle_errors
def report_cmd(
    campaigns: list[str] = typer.Argument(..., metavar="CAMPAIGN...",
                                          help="Campaign name or id; several (the same "
                                               "file run on other hosts) side by side."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="HTML file to write (default: NAME.html)."),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write one self-contained HTML report of a campaign (it may still be incomplete).

    Slowdown bars per benchmark and setup with 95% CIs (as paper 001 Figs 3, 5, 6),
    slowdown heatmaps (access × buffer size against colours or budget), counter bars,
    the statistics of every setup and task (n, min, median with CI, mean, std, CV,
    p90/p99/p99.9 or "insufficient n", max, slowdown and paired Δ with CIs), skipped
    setups with their reasons, the configuration, the environment and every warning.
    Everything is recomputed from the raw samples; the file fetches nothing. A campaign
    spread over several labgrid boards adds its boards side by side.

    Several campaigns (the same file run on other hosts, merged with `intercore results
    merge`) give one report with a group of columns per host: n, median and slowdown
    against the same host's baseline, with the spread of the medians across hosts.

    Examples:

      intercore measure campaign report small -o small.html

      intercore measure campaign report sweep sweep@xeon -o hosts.html

      intercore measure campaign report small --json | jq '.stats[] | select(.region == "total")'

    --json prints {"report", "stats": [{"setup", "region", "n", "median", "slowdown",
    "paired", ...}], "warnings"}; with several campaigns {"report", "hosts": [{"label",
    "host", "campaign", "runs", "stats"}], "warnings"}.
    """
    from ..report import html
    from ..report.campaign import build

    paths.output_file(output, "--output")
    with _open_existing(db) as store:
        loaded = [campaign_results.load(store, store.campaigns.find(c)) for c in campaigns]
    if len(loaded) > 1:
        _hosts_report(loaded, output, json_out)
        return
    results = loaded[0]
    target = output or paths.named_output(f"{results.campaign.name}.html", "--output")
    stats, sections = build(results)
    html.write(target, f"Campaign {results.campaign.name}", sections,
               subtitle=results.campaign.plan.get("description", "") or
               f"from {results.campaign.source}")
    warnings = campaign_results.warnings(results, stats)
    if json_out:
        print_json({"report": str(target), "stats": [t.to_dict() for t in stats],
                    "warnings": warnings})
        return
    console.print(f"wrote {escape(str(target))}: {len(stats)} setup/task statistics, "
                  f"{len(results.skipped)} skipped run(s), {len(warnings)} warning(s)",
                  highlight=False)

def _hosts_report(loaded: list, output: Optional[Path], json_out: bool) -> None:
    from ..report import html
    from ..report.campaign import hosts_report

    names = [r.campaign.name for r in loaded]
    if len(set(names)) < len(names):
        raise InputError("a campaign is named twice", field="CAMPAIGN")
    target = output or paths.named_output(f"{'+'.join(names)}.html", "--output")
    columns, sections = hosts_report(loaded)
    html.write(target, f"Campaigns {', '.join(names)}: hosts side by side", sections,
               subtitle=f"from {loaded[0].campaign.source}")
    warnings = [f"{r.campaign.name}: {w}" for r in loaded
                for w in campaign_results.warnings(r, r.stats())]
    if json_out:
        print_json({"report": str(target),
                    "hosts": [{"label": c.label, "host": c.host, "campaign": c.campaign,
                               "runs": c.runs, "stats": [t.to_dict() for t in c.stats]}
                              for c in columns], "warnings": warnings})
        return
    console.print(f"wrote {escape(str(target))}: {len(columns)} host column(s) from "
                  f"{len(loaded)} campaigns, {len(warnings)} warning(s)", highlight=False)

@handle_errors
def compare_cmd(
    a: str = typer.Argument(..., metavar="A", help="Campaign name or id (reference)."),
    b: str = typer.Argument(..., metavar="B", help="Campaign name or id (candidate)."),
    all_regions: bool = typer.Option(False, "--all-regions",
                                     help="Every marked region, not only the total."),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Compare two campaigns setup by setup (the setups both ran, by name).

    Per setup: the medians, the slowdowns against each campaign's own solo baseline, and
    their difference B − A with a 95% bootstrap CI over all four sample sets. The verdict
    says "B slower" or "B faster" only when the CI excludes 0. For a solo setup the
    difference is median(B)/median(A) − 1. Setups whose content hashes differ (other
    host, binaries or parameters) are marked.

    Examples:

      intercore measure campaign compare small small-after-fix

      intercore measure campaign compare 1 2 --all-regions --json

    --json prints {"a", "b", "setups": [{"setup", "region", "median_a", "median_b",
    "slowdown_a", "slowdown_b", "difference", "difference_ci", "verdict",
    "same_hash"}], "only_a", "only_b"}.
    """
    with _open_existing(db) as store:
        ra = campaign_results.load(store, store.campaigns.find(a))
        rb = campaign_results.load(store, store.campaigns.find(b))
    found = compare_campaigns(ra.by_setup(), rb.by_setup(),
                              {n: s.get("baseline") for n, s in ra.campaign.setups.items()})
    if not all_regions:
        found = [c for c in found if c.region == TOTAL_REGION]
    sa, sb = ra.campaign.setups, rb.campaign.setups
    rows = [{**c.to_dict(), "same_hash": sa[c.setup]["hash"] == sb[c.setup]["hash"]}
            for c in found]
    only_a = sorted(set(sa) - set(sb))
    only_b = sorted(set(sb) - set(sa))
    if json_out:
        print_json({"a": ra.campaign.name, "b": rb.campaign.name, "setups": rows,
                    "only_a": only_a, "only_b": only_b})
        return
    table = Table(title=f"A = {escape(ra.campaign.name)}, B = {escape(rb.campaign.name)}")
    table.add_column("setup", no_wrap=True)
    if all_regions:
        table.add_column("region", no_wrap=True)
    for col in ("median ms A → B", "slowdown A → B", "B − A [95% CI]", "verdict",
                "same hash"):
        table.add_column(col)
    for r in rows:
        lo, hi = r["difference_ci"]
        table.add_row(escape(r["setup"]), *([r["region"]] if all_regions else []),
                      f"{r['median_a'] / 1e6:.4g} → {r['median_b'] / 1e6:.4g}",
                      f"{_ratio(r['slowdown_a'])} → {_ratio(r['slowdown_b'])}",
                      f"{_ratio(r['difference'])} [{_ratio(lo)}, {_ratio(hi)}]",
                      r["verdict"], "yes" if r["same_hash"] else "[yellow]no[/]")
    console.print(table)
    if only_a or only_b:
        console.print(f"only in A: {len(only_a)} setup(s); only in B: {len(only_b)}",
                      style="dim")

@handle_errors
def export_cmd(
    campaign: str = typer.Argument(..., metavar="CAMPAIGN", help="Campaign name or id."),
    csv_path: Optional[str] = typer.Option(None, "--csv", metavar="PATH|-",
                                           help="Write CSV to PATH, or stdout with -."),
    parquet_path: Optional[Path] = typer.Option(
        None, "--parquet", metavar="PATH", help="Write Parquet to PATH (needs pyarrow)."),
    db: Path = typer.Option(DEFAULT_PATH, "--db", help=DB_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + ' Prints {"samples", '
                                  '"path", "format"} (not with --csv -).'),
) -> None:
    """Export every raw sample of a campaign, one row each, as CSV or Parquet.

    The columns are campaign, setup, setup hash and round, then those of
    `intercore results export` (invocation, host, victim, condition, region, times,
    regime, one column per counter).

    Examples:

      intercore measure campaign export small --csv small.csv

      intercore measure campaign export small --parquet small.parquet
    """
    target = export_target(csv_path, parquet_path, json_out)
    with _open_existing(db) as store:
        count = target.write(store.campaigns.export_table(store.campaigns.find(campaign)))
    target.report(count, json_out)
