"""`intercore measure campaign ...`: plan, run, resume and report experiment campaigns
(SP-IMPact)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from ..campaign.enforce import Unenforceable, enforcement_for
from ..campaign.executors import executor_for
from ..campaign.plan import CampaignPlan, Setup, make_plan
from ..campaign.spec import load_campaign
from ..base.errors import InputError
from ..mitigate.bandwidth.colours import FORMATS, ColourAssignment, export
from .output import JSON_HELP, console, handle_errors, print_json, warn


FILE_HELP = "Campaign file (YAML); see docs/campaigns.md and examples/campaigns/."


def _plan(path: Path) -> CampaignPlan:
    """The plan as the executor's target describes itself, without checking each request
    against it: `plan --any-host` lists every setup of a campaign written for a larger board."""
    campaign = load_campaign(path)
    executor = executor_for(campaign)
    try:
        host = executor.describe()
    finally:
        executor.close()
    return make_plan(campaign, source=str(path), host=host)


def _checked_plan(path: Path) -> CampaignPlan:
    """The plan exactly as `measure campaign run` makes it, every request checked against the target
    (its CPUs, its memory): what validate accepts is what run accepts."""
    from ..campaign.runner import plan_file

    plan, executor = plan_file(path, quick_mode=False)
    executor.close()
    return plan


def _enforceability(plan: CampaignPlan) -> dict[str, str | None]:
    """setup name -> why it cannot run here (None when it can)."""
    if plan.executor != "local":
        return {s.name: None for s in plan.setups}
    out: dict[str, str | None] = {}
    by_need: dict[tuple, str | None] = {}
    for s in plan.setups:
        key = (s.needs, tuple(s.colours.items()), tuple(s.bandwidth.items()))
        if key not in by_need:
            e = enforcement_for(s)
            by_need[key] = e.reason if isinstance(e, Unenforceable) else None
        out[s.name] = by_need[key]
    return out


def colour_assignments(plan: CampaignPlan) -> list[ColourAssignment]:
    """The distinct colour assignments of a plan, each with the setups using it.

    The critical guest's colour count names an assignment (`_cc<n>`); an interference setup
    shows all of it, a solo setup only the critical guest's share.
    """
    by_count: dict[int | None, list[Setup]] = {}
    for s in plan.setups:
        if s.colours:
            by_count.setdefault(s.colour_count, []).append(s)
    out = []
    for count, setups in by_count.items():
        whole = next((s for s in setups if s.request.engine), setups[0])
        guests = [*whole.colours, *(g for g in whole.roles.values() if g not in whole.colours)]
        out.append(ColourAssignment(f"cc{count}", whole.colour_space,
                                    tuple((g, whole.colours.get(g, 0)) for g in guests),
                                    tuple(dict.fromkeys(s.config for s in setups))))
    return out


def _cells(s: Setup) -> tuple[str, str, str]:
    engine = "-" if s.contention is None else \
        f"{s.contention['op']} {s.contention['size_h']} on {s.contention['cpus']}"
    colours = "-" if not s.colours else ", ".join(
        f"{g}={m:#x}" for g, m in s.colours.items())
    bandwidth = "-" if not s.bandwidth else ", ".join(
        f"{g}={b}{'%' if s.bandwidth_unit == 'percent' else ' MBps'}"
        + (f"/{p}us" if p else "") for g, (b, p) in s.bandwidth.items())
    return engine, colours, bandwidth


def render_plan(plan: CampaignPlan, reasons: dict[str, str | None]) -> None:
    d = plan.to_dict()
    table = Table(title=f"campaign {plan.name}: {d['interference']} interference and "
                        f"{d['solo']} solo setups ({d['configurations']} configurations "
                        f"× {len(d['tasks'])} task{'s' if len(d['tasks']) > 1 else ''}), "
                        f"{plan.rounds} round{'s' if plan.rounds > 1 else ''}")
    for col in ("setup", "tasks", "engine", "colours", "bandwidth", "here"):
        table.add_column(col)
    notes: dict[str, int] = {}
    by_config: dict[str, list[Setup]] = {}
    for s in plan.setups:
        by_config.setdefault(s.config, []).append(s)
    for config, setups in by_config.items():
        reason = reasons[setups[0].name]
        if reason is not None:
            mark = f"[red]skipped ({notes.setdefault(reason, len(notes) + 1)})[/]"
        elif plan.executor != "local" and setups[0].needs:
            mark = "not checked here"
        else:
            mark = "[green]runs[/]"
        table.add_row(escape(config), escape(", ".join(s.task for s in setups)),
                      *map(escape, _cells(setups[0])), mark)
    console.print(table)
    for reason, n in notes.items():
        console.print(f"({n}) {escape(reason)}", highlight=False)
    if plan.executor != "local":
        console.print(f"Enforcement is decided on the {plan.executor} target when the campaign "
                      "runs, not checked here.", highlight=False)
    for w in plan.warnings:
        warn(w)


@handle_errors
def validate_cmd(
    file: Path = typer.Argument(..., metavar="FILE", help=FILE_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Check a campaign file without running anything.

    Accepts exactly what `measure campaign run` accepts: every error names the file, line and
    field (exit code 2). Victims and their parameters are checked against the
    measurement core's own tables, generator guests against `guests`, CPUs and sizes
    against the executor's target (this host, or the board over ssh), a platform model
    file must exist.

    Example: intercore measure campaign validate examples/campaigns/sp-impact.yaml

    --json prints {"valid", "file", "name", "count", "interference", "solo",
    "configurations", "tasks", "warnings"}.
    """
    d = _checked_plan(file).to_dict()
    summary = {"valid": True, "file": str(file),
               **{k: d[k] for k in ("name", "count", "interference", "solo",
                                    "configurations", "tasks", "warnings")}}
    if json_out:
        print_json(summary)
        return
    console.print(f"{escape(str(file))}: valid campaign [bold]{escape(d['name'])}[/], "
                  f"{d['count']} setups ({d['interference']} interference, {d['solo']} "
                  f"solo; tasks: {escape(', '.join(d['tasks']))})", highlight=False)
    for w in d["warnings"]:
        warn(w)

@handle_errors
def plan_cmd(
    file: Path = typer.Argument(..., metavar="FILE", help=FILE_HELP),
    export_colours: str | None = typer.Option(
        None, "--export-colours", metavar="bao|jailhouse",
        help="Also print the colour assignments as Bao (.colors) or Jailhouse "
             "(.cache_regions) configuration fragments."),
    any_host: bool = typer.Option(
        False, "--any-host",
        help="List the setups without checking CPUs and sizes against the executor's "
             "target: a campaign written for a larger board, planned here. Without it, "
             "plan refuses what validate and run refuse."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List every setup a campaign would run, with its content hash; run nothing.

    Setups are named after paper 001: `solo`, `interf_<access>_<size>`, `_cc<n>` for the
    colours of the critical guest, `_mbr-<guest>-<budget>` for a bandwidth budget, and
    `@<task>` when the critical guest has several tasks. Setups this host cannot enforce
    (no resctrl, for instance) are listed and marked with the reason; `measure campaign run`
    skips them.

    Examples:
      intercore measure campaign plan examples/campaigns/small.yaml --json
      intercore measure campaign plan examples/campaigns/sp-impact.yaml --any-host
      intercore measure campaign plan examples/campaigns/sp-impact.yaml --any-host \
          --export-colours bao

    --json prints {"name", "count", "interference", "solo", "configurations", "tasks",
    "rounds", "seed", "executor", "warnings", "enforcement_checked", "setups": [{"name",
    "hash", "config", "task", "baseline", "needs", "unenforceable", "victim", "engine",
    "colours", "bandwidth", ...}], "colour_export"}. "unenforceable" is the reason this
    host cannot run a setup (null: it can, or the executor is not local).
    """
    if export_colours is not None and export_colours not in FORMATS:
        raise InputError(f"{export_colours!r} is not one of {', '.join(FORMATS)}",
                         field="--export-colours")
    plan = _plan(file) if any_host else _checked_plan(file)
    reasons = _enforceability(plan)
    exported = None
    if export_colours is not None:
        exported = export(export_colours, colour_assignments(plan))
    if json_out:
        d = plan.to_dict()
        d["enforcement_checked"] = plan.executor == "local"
        for s in d["setups"]:
            s["unenforceable"] = reasons[s["name"]]
        d["colour_export"] = exported
        print_json(d)
        return
    render_plan(plan, reasons)
    if exported is not None:
        sys.stdout.write("\n" + (exported or "/* no setup of this campaign colours a "
                                              "guest */\n"))

