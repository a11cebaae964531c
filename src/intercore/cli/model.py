"""`intercore model ...`: platform models, the interference calculus and its validation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..base import outputs
from ..base.errors import InputError
from ..measure import model_validation as validate_mod
from ..model import calculus, detect as detect_mod
from ..model.channels import ChannelTable, build_table, compact, rule_info
from ..measure.model_validation import stored_evidence
from ..model.loader import load, with_rules
from ..model.platform import Platform
from ..model.rules import RULES
from ..model.stream import write_jsonl, write_parquet
from ..model.table import channel_table, counts_by_k, iter_rows
from ..measure.harness.session import MAX_RUNS
from ..base.stopping import sigterm_unwinds
from .measure import DB_HELP, progress_bar
from . import paths
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn


# Beyond this many rows the console shows the per-resource summary; files get everything.
CONSOLE_ROWS = 60

MODEL_ARG = typer.Argument(..., metavar="MODEL",
                           help="Platform model (YAML), e.g. examples/platforms/rpi4.yaml or "
                                "the file `intercore model detect` wrote.")
CONFIG_OPT = typer.Option(None, "--config", metavar="NAME",
                          help="Analyse the model in one of its named configurations (its "
                               "`configurations:` section): what that configuration disables "
                               "is left out.")


def _with_rules(platform: Platform, enable: list[str], disable: list[str]) -> Platform:
    return with_rules(platform, enable, disable) if enable or disable else platform


def _write(path: Optional[Path], text: str, option: str) -> None:
    if path is None:
        return
    try:
        outputs.write_text(path, text)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}", field=option) from None


def _stamp(t: ChannelTable) -> None:
    c = t.counts
    console.print(f"[bold]{t.platform}[/]" + (f" ({t.title})" if t.title else ""), highlight=False)
    console.print(f"model {t.source}  sha256 {t.hash[:16]}…  intercore {t.tool_version}  "
                  f"{t.date}", highlight=False)
    console.print("rules: " + ", ".join(f"{rule_info(r)['code']} {r}" for r in t.rules),
                  highlight=False)
    console.print(f"{c['k_sets']} non-exclusive {t.k}-sets: [red]{c['interference']} "
                  f"interference[/], [green]{c['free']} interference-free[/], "
                  f"{c['redundant']} redundant")
    for w in t.warnings:
        warn(w)


def _evidence(row) -> str:
    if row.evidence is None:
        return ""
    style = {"confirmed": "green", "contradicted": "red"}.get(row.evidence.verdict, "yellow")
    return f"[{style}]{row.evidence.text()}[/]"


def render_counts(by_k: dict[int, dict[str, int]]) -> None:
    table = Table(title="k-sets by k (counted on the symmetry quotient)")
    for col in ("k", "interference", "interference-free", "redundant", "non-exclusive"):
        table.add_column(col, justify="right")
    for k, c in by_k.items():
        table.add_row(str(k), str(c["interference"]), str(c["free"]), str(c["redundant"]),
                      str(c["k_sets"]))
    console.print(table)


def render_patterns(t: ChannelTable, show_all: bool) -> None:
    shown, total = t.patterns["shown"], t.patterns["total"]
    console.print(f"rows are patterns (sets equal up to swapping interchangeable initiators; "
                  f"classes: {', '.join(t.classes)})", highlight=False)
    table = Table(title=f"Interference patterns ({shown['interference']} most frequent of "
                        f"{total['interference']}; all: --jsonl/--parquet)")
    for col in ("id", "sets", "groups", "representative", "services", "rule"):
        table.add_column(col)
    for r in t.channels[:None if show_all else CONSOLE_ROWS]:
        table.add_row(r.id, str(r.count), ", ".join(r.groups), ", ".join(r.transactions),
                      ", ".join(compact(r.services)), f"{rule_info(r.rule)['code']} {r.rule}")
    console.print(table)
    console.print(f"{total['free']} interference-free and {total['redundant']} redundant "
                  "patterns (--markdown FILE, --json, --jsonl FILE)")


def render_table(t: ChannelTable, show_all: bool) -> None:
    _stamp(t)
    if t.patterns is not None:
        render_patterns(t, show_all)
        return
    if len(t.channels) <= CONSOLE_ROWS or show_all:
        table = Table(title="Interference channels (AMC 20-193 RU3)")
        for col in ("id", "transactions", "cores", "services", "rule", "assumptions",
                    "not verified", "evidence"):
            table.add_column(col)
        for r in t.channels:
            table.add_row(r.id, ", ".join(r.transactions), ", ".join(r.initiators),
                          ", ".join(compact(r.services)),
                          f"{rule_info(r.rule)['code']} {r.rule}", ", ".join(r.assumptions),
                          ", ".join(r.unverified), _evidence(r))
    else:
        table = Table(title=f"{len(t.channels)} channels by shared resource (all rows: --all, "
                            "--markdown FILE or --json)")
        table.add_column("components")
        table.add_column("channels", justify="right")
        for comps, n in t.by_resource:
            table.add_row(", ".join(comps), str(n))
    console.print(table)
    if not t.free:
        return
    if len(t.free) <= CONSOLE_ROWS or show_all:
        free = Table(title="Interference-free")
        for col in ("transactions", "cores", "relies on", "not verified", "evidence"):
            free.add_column(col)
        for f in t.free:
            free.add_row(", ".join(f.transactions), ", ".join(f.initiators),
                         ", ".join(f.relies_on), ", ".join(f.unverified), _evidence(f))
        console.print(free)
    else:
        console.print(f"{len(t.free)} interference-free sets (all rows: --all, --markdown FILE "
                      "or --json)")


@handle_errors
def analyze_cmd(
    model: Path = MODEL_ARG,
    k: Optional[int] = typer.Option(None, "--k", "-k", help="Size of the transaction sets "
                                    "(2 to 10; default 2). Above the number of "
                                    "initiators no set exists and the counts are 0."),
    max_k: Optional[int] = typer.Option(None, "--max-k", help="Count every k from 2 to "
                                        "this (at most 10) and show the table of the "
                                        "largest."),
    config: Optional[str] = CONFIG_OPT,
    enable: list[str] = typer.Option([], "--enable", metavar="RULE",
                                     help="Switch a refinement rule on (repeatable)."),
    disable: list[str] = typer.Option([], "--disable", metavar="RULE",
                                      help="Switch a refinement rule off (repeatable)."),
    patterns: Optional[bool] = typer.Option(
        None, "--patterns/--sets", help="Rows as patterns (sets equal up to swapping "
        "interchangeable initiators) or one row per set. Default: sets while there are "
        "at most 100,000, patterns beyond."),
    rows: int = typer.Option(200, "--rows", min=1, help="Patterns of each kind kept in "
                             "the table (--jsonl and --parquet write all of them)."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write the channel "
                                            "table as Markdown to this file."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the channel table as "
                                        "an HTML page to this file."),
    jsonl: Optional[Path] = typer.Option(None, "--jsonl", help="Stream every row to this "
                                         "file as JSON Lines (a header line first)."),
    parquet: Optional[Path] = typer.Option(None, "--parquet", help="Stream every row to "
                                           "this Parquet file (needs pyarrow)."),
    show_all: bool = typer.Option(False, "--all", help="Print every row on the console."),
    db: Path = typer.Option(Path("intercore.db"), "--db",
                            help="Results store to read validation evidence from (only "
                                 "read, and only if it exists)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List the interference channels of a platform model (the interference calculus).

    Every set of k transactions that can run together is classified once: interference
    (with its channel: the services they contend on, the rule that produced it and its
    reference, the legs of multi-path transactions, the assumptions used),
    interference-free (with what that relies on), or redundant (it decomposes into
    smaller results). Verdicts that `model validate` stored for this exact model (same
    sha256) fill the evidence column.

    For k up to 10 the counts come from the quotient by interchangeable initiators (the
    cores of a cluster, the engines of a DMA), never from listing every set; past
    100,000 sets the rows are patterns, each with one representative set and the number
    of sets it stands for, and redundant sets are grouped under their interference parts.

    Examples:

      intercore model analyze examples/platforms/rpi4.yaml

      intercore model analyze examples/platforms/zcu104.yaml --k 3 --markdown zcu104.md

      intercore model analyze examples/platforms/noc-soc.yaml --max-k 10 --config flight

      intercore model analyze host.yaml --disable inclusive_cache --json

    --json prints {"model", "hash", "configuration", "k", "rules", "counts":
    {"interference", "free", "redundant", "k_sets"}, "by_k" (with --max-k), "channels":
    [{"id", "count", "groups", "services", "components", "transactions", "apps",
    "initiators", "legs", "rule", "reference", "rules", "assumptions", "unverified",
    "evidence"}], "free": [...], "redundant": [...], "patterns", "non_interfering",
    "routing", "assumptions", "warnings"}.
    """
    if k is not None and max_k is not None:
        raise InputError("give --k or --max-k, not both", field="--max-k")
    for path, option in ((markdown, "--markdown"), (html, "--html"), (jsonl, "--jsonl"),
                         (parquet, "--parquet")):
        paths.output_file(path, option)
    paths.store_file(db if db.exists() else None)  # only read, and only if it exists
    platform = _with_rules(load(model, config), enable, disable)
    problem = calculus.build(platform)
    top = max_k if max_k is not None else (k if k is not None else 2)
    counted = counts_by_k(problem, top) if max_k is not None else None
    evidence = stored_evidence(db, platform.hash)
    table = channel_table(platform, top, evidence, problem=problem, counted=counted,
                          patterns=patterns, rows=rows)
    by_k = {n: counted.at(n) for n in range(2, top + 1)} if counted else None
    _write(markdown, table.to_markdown(), "--markdown")
    _write(html, table.to_html_page(), "--html")
    header = {key: v for key, v in table.to_dict().items()
              if key not in ("channels", "free", "redundant", "by_resource")}
    for path, writer in ((jsonl, write_jsonl), (parquet, write_parquet)):
        if path is not None:
            writer(path, header, iter_rows(platform, top, evidence, problem=problem,
                                           counted=counted,
                                           patterns=table.patterns is not None))
    if json_out:
        print_json({**table.to_dict(), **({"by_k": by_k} if by_k else {})})
        return
    if by_k:
        render_counts(by_k)
    render_table(table, show_all)
    for path in filter(None, (markdown, html, jsonl, parquet)):
        console.print(f"written: {path}")

@handle_errors
def detect_cmd(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the model here "
                                       "instead of printing it."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write a platform model of this host from sysfs.

    Initiators are the online CPUs; targets are the caches sysfs lists (level, size,
    ways, sets, line, which CPUs share each) and memory. What sysfs cannot tell is in the
    model too, marked `verified: false` and chosen conservatively: the interconnect and
    memory controller, the banks, and the inclusion policy of shared caches (taken as
    inclusive). On a virtual machine an `external` initiator stands for the other tenants
    of the shared caches and memory. Per CPU, the model has a load and a store served by
    each data-cache level and by memory: the transactions `model validate` exercises.

    Examples:

      intercore model detect -o host.yaml && intercore model analyze host.yaml

      intercore model detect --json

    --json prints {"model": <the model as data>, "out": PATH or null}.
    """
    if out is not None and out.exists() and not force:
        raise InputError(f"{out} exists; use --force to overwrite it", field="--out")
    paths.output_file(out, "--out")
    model = detect_mod.detect()
    text = detect_mod.to_yaml(model)
    _write(out, text, "--out")
    if json_out:
        print_json({"model": model, "out": str(out) if out else None})
    elif out is None:
        sys.stdout.write(text)
    else:
        console.print(f"written: {out} ({model['title']}); next: intercore model analyze "
                      f"{out}", highlight=False)

@handle_errors
def validate_cmd(
    model: Path = MODEL_ARG,
    runs: int = typer.Option(10, "--runs", "-n", min=3, max=MAX_RUNS,
                             help="Pairs (isolated + interfered) per tested pair; at least 3."),
    free: int = typer.Option(4, "--free", min=0, help="Interference-free pairs to run as "
                             "negative controls (a seeded sample)."),
    quick: bool = typer.Option(False, "--quick", help="A short subset: no DRAM-sized "
                               "workload, one pair per kind of channel, one negative "
                               "control."),
    threshold: float = typer.Option(validate_mod.THRESHOLD, "--threshold", min=1.0,
                                    help="A slowdown counts when the 95% CI of Δ lies at "
                                         "or above this."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**63 - 1,
                             help="Seeds the sample and the pair order."),
    canary: bool = typer.Option(True, "--canary/--no-canary",
                                help="Probe cache sharing before and after."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write the channel "
                                            "table with its evidence as Markdown."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write it as an HTML page."),
    db: Path = typer.Option(Path("intercore.db"), "--db", help=DB_HELP),
    no_store: bool = typer.Option(False, "--no-store", help="Do not write the store."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Check a host model's verdicts with micro-benchmarks on this host.

    Each transaction becomes a micro-benchmark whose footprint lives where the
    transaction is served (L1, L2, shared cache or DRAM; a pointer chase for loads, a
    STREAM triad for stores, the matching bandwidth preset as aggressor). Every
    interference pair and a sample of interference-free pairs run through the paired
    harness, interleaved in blocks with the shared-cache canary probed between them,
    and each gets a verdict from the 95% CI of its slowdown Δ: confirmed, not observed
    (the model may be pessimistic), contradicted (a free pair slowed down: the model
    misses a channel), or unobservable (a pair through the shared cache with too few
    pairs in blocks where the CPUs shared it: provisional, run again). A pair through
    the shared cache is decided on its shared-block pairs. Verdicts go to the store with
    their regime and fill the evidence column of `model analyze`.

    Examples:

      intercore model detect -o host.yaml && intercore model validate host.yaml --quick

      intercore model validate host.yaml --runs 30 --free 8 --markdown evidence.md

    --json prints {"model", "hash", "regime", "canary", "threshold", "counts":
    {"confirmed", "not observed", "contradicted", "unobservable"}, "verdicts":
    [{"expected", "channel", "verdict", "victim", "aggressor", "n", "delta", "delta_ci",
    "regime", "basis", ...}],
    "skipped": [...], "invocation_id"}.
    """
    from ..host.topology import read_topology

    paths.output_file(markdown, "--markdown")
    paths.output_file(html, "--html")
    paths.store_file(None if no_store else db)
    platform = load(model)
    topo = read_topology()
    analysis = calculus.analyze(platform, 2)
    found, why_not = validate_mod.exercises(platform, topo)
    trials, skipped = validate_mod.plan(build_table(analysis, platform), found, why_not,
                                        topo, free_sample=free,
                                        quick=quick, seed=seed)
    with sigterm_unwinds(), progress_bar(json_out) as bar:
        task = bar.add_task("starting", total=None)
        result = validate_mod.validate(
            trials, topo, skipped=skipped, runs=runs, seed=seed, threshold=threshold,
            canary=canary,
            on_phase=lambda text: bar.update(task, description=text, completed=0,
                                             total=None),
            on_rep=lambda done, total: bar.update(task, completed=done, total=total))
    invocation = None
    if not no_store:
        invocation = validate_mod.save(
            db, platform, result, runs=runs, argv=sys.argv, topo=topo,
            params={"free": free, "quick": quick, "seed": seed, "threshold": threshold})
    evidence = {v.trial.key: v.evidence(invocation) for v in result.verdicts}
    table = build_table(analysis, platform, evidence)
    _write(markdown, table.to_markdown(), "--markdown")
    _write(html, table.to_html_page(), "--html")
    if json_out:
        print_json({"model": platform.name, "hash": platform.hash, **result.to_dict(),
                    "invocation_id": invocation})
        return
    render_validation(result, platform, invocation, db)

@handle_errors
def rules_cmd(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """List the refinement rules: what each does, when it applies, what it rests on.

    A model lists the ones it uses under `rules:` (all of them when absent); `model
    analyze --enable/--disable RULE` switches one for a run.

    --json prints [{"id", "code", "title", "reference", "setting"}].
    """
    infos = [r.to_dict() for r in RULES.values()]
    if json_out:
        print_json(infos)
        return
    table = Table(title="Refinement rules (applied in this order)")
    for col in ("code", "id", "what", "applies when", "reference"):
        table.add_column(col)
    for i in infos:
        table.add_row(i["code"], i["id"], i["title"], i["setting"], i["reference"])
    console.print(table)


def render_validation(result: validate_mod.Validation, platform: Platform,
                      invocation: int | None, db: Path) -> None:
    table = Table(title=f"{platform.name}: verdicts (Δ = median(T_int)/median(T_iso), "
                        f"slowdown when the 95% CI ≥ {result.threshold})")
    for col in ("victim", "aggressor", "expected", "channel", "regime", "n", "Δ [95% CI]",
                "pair max", "verdict"):
        table.add_column(col)
    style = {"confirmed": "green", "contradicted": "red", "not observed": "yellow",
             "unobservable": "magenta"}
    for v in result.verdicts:
        lo, hi = v.result.delta_ci
        table.add_row(f"{v.trial.victim.tx}\n{v.trial.victim.victim}",
                      f"{v.trial.aggressor.tx}\n{v.trial.aggressor_set}", v.trial.expected,
                      v.trial.channel or "", v.regime, str(v.result.n),
                      f"{v.result.delta:.3f} [{lo:.3f}, {hi:.3f}]", f"{v.result.paired_max:.2f}",
                      f"[{style[v.verdict]}]{v.verdict}[/]")
    console.print(table)
    regime_style = {"shared": "green", "not-shared": "yellow"}.get(result.regime, "red")
    console.print(f"canary regime: [{regime_style}]{result.regime}[/]" +
                  "".join(f"  ({c['when']}: {c['regime']}, {c['reason']})"
                          for c in result.canaries), highlight=False)
    if result.regime != "shared":
        console.print("[yellow]note:[/] the canary did not see a shared cache throughout: a "
                      "pair through the shared cache is decided on its shared-block pairs, and "
                      "is 'unobservable' (provisional) when it had too few", highlight=False)
    for v in result.verdicts:
        if v.verdict == "unobservable":
            console.print(f"  {v.trial.victim.tx} / {v.trial.aggressor.tx}: {v.basis}",
                          highlight=False)
    counts = result.counts()
    console.print(", ".join(f"{n} {k}" for k, n in counts.items()))
    if result.skipped:
        reasons: dict[str, int] = {}
        for s in result.skipped:
            reasons[s["reason"]] = reasons.get(s["reason"], 0) + 1
        console.print(f"{len(result.skipped)} pair(s) not exercisable here:")
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            console.print(f"  {n} × {reason}", highlight=False)
    if invocation is not None:
        console.print(f"stored as invocation {invocation} in {db}; `intercore model analyze "
                      f"{platform.source} --db {db}` shows them as evidence")
    else:
        err_console.print("not stored (--no-store)")
