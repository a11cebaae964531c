"""`intercore measure run`: the slowdown of one victim under aggressor sets, paired and honest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..base.errors import InputError
from ..base.parse import parse_cpu_list
from ..host.topology import read_topology
from ..measure.aggressors import search as search_mod
from ..measure.harness.session import DEFAULT_RUNS, MAX_RUNS, Request, Result, clock_info, measure
from ..base.stopping import sigterm_unwinds
from ..report.evidence import write_pngs
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


def _ci(lo: float, hi: float) -> str:
    return "[-, -]" if lo != lo else f"[{lo:.3f}, {hi:.3f}]"  # NaN: too few pairs


def _witness(w) -> str:
    """The victim's own two states, their Δ, what they witness and where the canary
    disagreed."""
    sp = w.split
    states = "; ".join(
        f"{state} (iso {'<' if state == 'fast' else '>='} {sp.threshold / 1e6:.3f} ms) "
        f"Δ {r.delta:.3f} {_ci(*r.delta_ci)}, n {r.n}" for state, r in w.by_state.items())
    if w.regimes is None:
        return f"the victim's isolated times show two states: {states}; Δ alike in both"
    said = ", ".join(f"{s} = {g}" for s, g in w.regimes.items())
    blocks = [d.block for d in w.disagreements]
    return (f"the victim's isolated times show two states: {states}; they witness {said}; "
            + (f"the canary said otherwise in {len(blocks)} block(s): {blocks[:20]}"
               if blocks else "the canary agreed in every block it decided"))


def render(result: Result) -> None:
    where = f", {result.plan.stop_regime} blocks only" if result.plan.stop_regime else ""
    table = Table(title=f"{result.plan.victim.label} on CPU {result.plan.victim_cpu}: "
                        f"slowdown Δ = median(T_int)/median(T_iso), "
                        f"{result.regions[0].metric if result.regions else 'thread CPU time'}"
                        f"{where}; sets interleaved in blocks")
    for col in ("aggressor set", "region", "regime", "n", "Δ", "95% CI", "paired med",
                "paired max", "iso med ms", "int med ms", "int p99 ms", "int max ms", "wall Δ"):
        table.add_column(col, justify="left" if col in ("aggressor set", "region", "regime")
                         else "right")
    for r in result.regions:
        c = r.result
        mark = " [bold red]![/]" if r.flag else ""
        table.add_row(r.aggressor_set, r.region_name, r.regime or "all", str(c.n),
                      f"{c.delta:.3f}{mark}", _ci(*c.delta_ci), f"{c.paired_median:.3f}",
                      f"{c.paired_max:.3f}", _ms(c.iso.median), _ms(c.int.median),
                      _ms(c.int.p99), _ms(c.int.max), f"{r.wall.delta:.3f}")
        if r.regime is None and r.by_regime:
            for regime, s in r.by_regime.items():
                table.add_row("", "", f"  {regime}", str(s.n), f"{s.delta:.3f}",
                              _ci(*s.delta_ci), f"{s.paired_median:.3f}",
                              f"{s.paired_max:.3f}", "", "", "", "", "", style="dim")
    console.print(table)
    for r in result.regions:
        if r.flag:
            console.print(f"[bold red]![/] {r.aggressor_set}, {r.region_name}: {r.flag}",
                          highlight=False)
        if r.witness:
            console.print(f"{r.aggressor_set}, {r.region_name}: {_witness(r.witness)}",
                          highlight=False)
    counts = result.regime_counts()
    regime_style = {"shared": "green", "not-shared": "yellow"}.get(result.regime, "red")
    console.print(f"regime: [{regime_style}]{result.regime}[/] (blocks: " +
                  ", ".join(f"{k} {v}" for k, v in counts.items()) + ")" +
                  "".join(f"  ({c['when']}: {c['regime']}, {c['reason']})"
                          for c in result.canaries))
    cores = result.core_counts()
    if cores:
        console.print("core: " + ", ".join(f"{k} {v}" for k, v in cores.items()) + " blocks" +
                      "".join(f"  ({c['when']}: {c['core']}, spinner beside register-only "
                              f"work {sorted(c['core_ratios'])[len(c['core_ratios']) // 2]:.2f}x)"
                              for c in result.canaries if c.get("core_ratios")),
                      highlight=False)
    o = result.outcome
    if o is not None:
        if o.block_size is not None:
            sizes = sorted({b.pairs for b in o.blocks})
            of = (f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}") \
                if sizes else f"{o.block_size.pairs}"
            console.print(f"design: {len(o.blocks)} blocks of {of} pair(s) "
                          f"({o.block_size.reason})", highlight=False)
        ck = clock_info(o)
        console.print(f"clock: {ck['clock']} ({ck['why']})", highlight=False)
        for label, why in o.stopped.items():
            console.print(f"{label}: {why}", highlight=False)
    for w in result.warnings:
        warn(w)
    if result.invocation_id is not None:
        console.print(f"stored as invocation {result.invocation_id} "
                      f"(intercore results show {result.invocation_id})")


def progress_bar(to_stderr: bool) -> Progress:
    target = err_console if to_stderr else console
    # Off where nobody watches: into a file or pipe, rich would leave an empty line per bar.
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=target, transient=True,
                    disable=not target.is_terminal)


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


def run_search(req: Request, db: Optional[Path], json_out: bool, first_pairs: int,
               presets: bool) -> None:
    refused: search_mod.SearchRefused | None = None
    with sigterm_unwinds(), progress_bar(json_out) as bar:
        task = bar.add_task("starting", total=None)
        try:
            found = search_mod.search(
                req, db=db, argv=sys.argv, first_pairs=first_pairs, presets=presets,
                on_phase=lambda text: bar.update(task, description=text, completed=0,
                                                 total=None),
                on_rep=lambda done, total: bar.update(task, completed=done, total=total))
        except search_mod.SearchRefused as exc:
            refused, found = exc, exc.partial
    name = search_mod.save_winner(db, read_topology(), found) \
        if db is not None and refused is None else None
    offer = found.strongest_so_far() if refused is not None else None
    doc = {**found.to_dict(), "saved_as": f"@{name}" if name else None,
           "refused": str(refused) if refused else None,
           "strongest_so_far": None if offer is None else {**offer.to_dict(),
                                                           "provisional": True}}
    if json_out:
        print_json(doc)
    else:
        _render_search(found)
        if offer is not None:
            e = offer.estimate()
            console.print(f"strongest so far (provisional: ranked over all {e.n} pairs of its "
                          f"last round, not in shared blocks; not saved): {offer.spec}: Δ "
                          f"{e.delta:.3f} {_ci(*e.delta_ci)}, paired max {e.paired_max:.3f}; "
                          f"measure with it: -a '{offer.spec}'", highlight=False,
                          markup=False)
    if refused is not None:
        raise refused
    if json_out:
        return
    w = found.winner.estimate()
    console.print(f"worst aggressor: {found.winner.spec}: Δ {w.delta:.3f} "
                  f"{_ci(*w.delta_ci)}, n {w.n} pairs ({found.winner.regime} blocks), paired "
                  f"max {w.paired_max:.3f}", highlight=False)
    if name:
        console.print(f"saved as @{name}: reuse it with -a @{name}", highlight=False)


def _render_search(found: search_mod.SearchResult) -> None:
    for r in found.rounds:
        table = Table(title=f"search round {r.index + 1}: {len(r.ranking)} candidates x "
                            f"{r.pairs} pairs ranked in {found.stratum} blocks, interleaved "
                            "(blocks: " +
                            ", ".join(f"{k} {v}" for k, v in r.regime_counts().items())
                            + ")")
        for col in ("rank", "aggressor", "ranked in", "n", "Δ", "95% CI", "paired max"):
            table.add_column(col, justify="left" if col in ("aggressor", "ranked in")
                             else "right")
        for i, row in enumerate(r.ranking, start=1):
            e = row.estimate()
            spec = row.spec + (" *" if row.spec in r.kept else "")
            if e is None:
                table.add_row(str(i), spec, row.regime, "0", "-", "-", "-")
                continue
            table.add_row(str(i), spec, row.regime, str(e.n), f"{e.delta:.3f}",
                          _ci(*e.delta_ci), f"{e.paired_max:.3f}")
        console.print(table)


@handle_errors
def measure_cmd(
    victim: list[str] = typer.Argument(
        ..., metavar="VICTIM | -- PROG [ARGS]...",
        help="Victim kind or alias with optional parameters: matmul, matrix1, "
             "ptrchase:size=8M, stream, qsort, susan:mode=corners (see `intercore "
             "workloads`); or a program of your own, named by a path, with its own "
             "arguments after --: it runs once per repetition, its regions marked with "
             "the kit's ic_user.h (docs/user-programs.md)."),
    aggressor: list[str] = typer.Option(
        ["BwWrite(LLC)"], "--aggressor", "-a",
        help="Aggressor set: a preset (BwRead(LLC) ... BkPLLWrite(LLC)), or "
             "KIND:key=value,... (bw:op=rmw,size=4M,rate=1e6); join members that run "
             "together with '+', pin one with @CPU. Repeat to compare several sets."),
    param: list[str] = typer.Option([], "--param", "-p",
                                    help="Victim parameter key=value (repeatable)."),
    runs: int = typer.Option(DEFAULT_RUNS, "--runs", "-n", min=1, max=MAX_RUNS,
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
                                help="Probe cache sharing between blocks (the running "
                                     "canary): each sample gets its block's regime."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1,
                             help="Seeds the pair order and inputs."),
    block_pairs: Optional[int] = typer.Option(
        None, "--block-pairs", help="Pairs per block of the interleaved schedule. Default: "
                                    "chosen from the measured cost of a set switch."),
    regime: Optional[str] = typer.Option(
        None, "--regime", help="Report (and stop on) only pairs measured in this host "
                               "regime: shared, not-shared or unknown."),
    until_ci: Optional[float] = typer.Option(
        None, "--until-ci", help="Add pairs, in blocks, until the 95% CI half-width of Δ "
                                 "is at most this fraction of Δ (e.g. 0.02), per set; "
                                 "--runs is then the minimum."),
    until_pairs: Optional[int] = typer.Option(
        None, "--until-pairs", help="Add pairs, in blocks, until every set has this many "
                                    "(in --regime's blocks when given, e.g. 20 shared "
                                    "pairs); --runs is then the minimum. After a "
                                    "quarter of --max-runs a set stops, saying why, once "
                                    "its regime comes too rarely to reach it."),
    max_runs: Optional[int] = typer.Option(
        None, "--max-runs", help="With --until-ci or --until-pairs: most pairs per set "
                                 "(default 10 x --runs)."),
    clock: str = typer.Option("cpu", "--clock",
                              help="Marker clock: cpu (thread CPU time), wall (cycle "
                                   "counter, descheduled repetitions discarded), auto "
                                   "(wall where CPU time costs a system call)."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help=DB_HELP),
    no_store: bool = typer.Option(False, "--no-store", help="Do not write the store."),
    plot: Optional[Path] = typer.Option(
        None, "--plot", help="Write one figure per aggressor set into this directory: "
                             "isolated vs interfered ECDFs with samples coloured by "
                             "regime, and Δ per block over time on the regime bands."),
    search: bool = typer.Option(
        False, "--search", help="Search the worst aggressor for VICTIM on this host "
                                "(kind x access x footprint x MLP x cores, successive "
                                "halving on the paired ratio) and save the winner as "
                                "@worst:VICTIM for -a (a program's: @worst:./PROG, for "
                                "that very binary). Ignores -a."),
    search_pairs: int = typer.Option(3, "--search-pairs", min=2,
                                     help="--search: pairs per candidate in the first "
                                          "round (doubled every round)."),
    search_presets: bool = typer.Option(
        False, "--search-presets", help="--search: the ten presets only, one core each (a "
                                        "quick search; the whole space is 60 and more)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure the slowdown a victim suffers from aggressors on other CPUs.

    Aggressors stay resident and are paused (spinning on registers, still holding their
    CPU) or running before each repetition; every interfered repetition is paired with an
    isolated one next to it in time, in random order. The sets take turns in randomised
    blocks of a few pairs, so every set meets the same host regimes; a canary probe
    between blocks says whether the CPUs shared their cache during each block. Reports,
    per region of the victim, Δ = median(T_int)/median(T_iso) over thread CPU time with
    a paired-bootstrap 95% CI, the median and max of the per-pair ratios and tails,
    overall and per regime. A Δ whose CI lies below 1 is flagged with its likely cause.
    A core probe gives every block its core state too (whether the two CPUs were one
    core's threads). Where the victim's own isolated times fall into two clear states,
    Δ is given per state, with the blocks where that state and the canary disagreed.
    Raw samples (with block, block start, regime and core state) go to the store.

    A program of your own (a path, its arguments after --) is measured the same way:
    ic-run runs it once per repetition, its whole run is the region "total" and the
    regions it marks with the kit's ic_user.h follow by name (docs/user-programs.md).

    --json prints {"victim", "aggressors", "regime", "regions": [{"name", "n", "delta",
    "delta_ci", "paired_median", "paired_max", "iso", "int", "by_regime": {regime: {"n",
    "delta", "delta_ci", "paired_max"}}, "flag", "witness": {"split", "by_state",
    "regimes", "disagreements"} | null, ...}], "design": {..., "core_blocks",
    "core_probes"}, ...}.

    Examples:

        intercore measure run ptrchase:size=8M -a 'BwWrite(LLC)' -a 'PLLRead(DRAM)' -n 20

        intercore measure run matrix1 --until-ci 0.02 --max-runs 200 --regime shared

        intercore measure run ptrchase:size=4M -a @worst:ptrchase:size=4M -a 'BwWrite(LLC)' \\
            --until-pairs 20 --regime shared --max-runs 400

        intercore measure run -a 'BwWrite(LLC)' --runs 20 -- ./control --steps 5000

        intercore measure run --search -- ./control --steps 5000
    """
    req = Request(victim[0], tuple(param), tuple(aggressor), runs, victim_cpu,
                  _cpus(aggressor_cpus, "--aggressor-cpus"), victim_priority,
                  aggressor_priority, canary, seed, block_pairs, clock, until_ci, max_runs,
                  regime, until_pairs, tuple(victim[1:]))
    store = None if no_store else db
    paths.store_file(store)
    paths.output_dir(plot, "--plot")
    if search:
        run_search(req, store, json_out, search_pairs, search_presets)
        return
    result = run_measure(req, store, json_out)
    figures = write_pngs(result.outcome.samples, plot, victim=result.plan.victim.label) \
        if plot is not None and result.outcome is not None else []
    if json_out:
        print_json({**result.to_dict(), "figures": [str(p) for p in figures]})
    else:
        render(result)
        for path in figures:
            console.print(f"figure: {path}", highlight=False)
