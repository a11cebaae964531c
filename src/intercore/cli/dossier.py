"""`intercore dossier verify DIR` and `intercore dossier diff A B`: a dossier measured again on
this host, or beside another."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.table import Table

from ..base import artefact, outputs
from ..assess import diff as diff_mod, html, readback, verify as verify_mod
from ..base.errors import InputError
from ..host import config
from ..host.topology import read_topology
from ..base.stopping import sigterm_unwinds
from ..mitigate.cgroupfs import DEFAULT_ROOT, root_parts
from . import paths
from .cgroups import ROOT_HELP
from .output import JSON_HELP, MARKUP, console, err_console, handle_errors, print_json, warn

dossier_app = typer.Typer(no_args_is_help=True, rich_markup_mode=MARKUP)
VERIFICATION = "verification.json"


def register(app: typer.Typer) -> None:
    app.add_typer(dossier_app, name="dossier",
                  help="A dossier of `intercore assess`: measured again here, or beside "
                       "another.")


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return "-" if value is None else str(value)


@dossier_app.command("verify")
@handle_errors
def verify_cmd(
    directory: Path = typer.Argument(..., metavar="DIR", help="The dossier's directory."),
    figures: Optional[List[str]] = typer.Option(
        None, "--figure", "-f", metavar="GLOB",
        help="Re-measure only the figures whose id matches (shell-style, e.g. "
             "'validation/*', 'protection/ctl/*'); repeatable. Default: every figure."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", metavar="NEW_DIR",
        help="Keep the re-measurement as a dossier of its own (a new directory: its step "
             "artefacts, store, dossier.json/html and verification.json), e.g. for "
             "`intercore dossier diff DIR NEW_DIR`."),
    root: str = typer.Option(DEFAULT_ROOT, "--root", help=ROOT_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Measure the dossier's figures again on this host and mark each reproduced or not
    within the interval the dossier states for it.

    Each figure is measured again by the assessment step that made it (the channel
    validation, the interference matrix, Solo / Interference / Protected under the
    dossier's plan), from the same input files (each must still have the sha256 the
    dossier recorded). A figure is judged by its stated intervals only (a Δ by its 95% CI,
    deadline misses by theirs); one with no stated interval is shown side by side and not
    counted as reproduced. Every configuration setting of this host that differs from the
    dossier's is named.

    Exit 0 when every chosen figure reproduced, 1 when one did not, 2 for bad input. Ctrl-C
    stops within a second and leaves nothing behind.

    Example:

        intercore dossier verify dossier --figure 'validation/*'
    """
    if out is not None:
        if out.exists() or out.is_symlink():
            raise InputError(f"{out} exists: verify writes its dossier into a new directory",
                             field="--out")
        paths.output_dir(out, "--out")
    root_parts(root)
    topo = read_topology()
    req = verify_mod.prepare(directory, figures or [], topo)
    say = (lambda text: err_console.print(text, highlight=False, markup=False)) \
        if json_out else (lambda text: console.print(text, highlight=False, markup=False))
    snapshot = config.snapshot()
    # A scratch directory beside --out (renamed onto it at the end) or a temporary one: a
    # stop removes it, so nothing half-measured is left to be taken for a result.
    scratch = Path(tempfile.mkdtemp(prefix=".verify-",
                                    dir=None if out is None else out.absolute().parent))
    try:
        with sigterm_unwinds():
            again = verify_mod.remeasure(req, scratch, root=root, topo=topo,
                                         snapshot=snapshot, argv=sys.argv, say=say)
        result = verify_mod.verdicts(req, again, snapshot)
        if out is not None:
            scratch.chmod(0o755)
            outputs.write_text(scratch / readback.DOSSIER, artefact.dumps(again))
            outputs.write_text(scratch / "dossier.html", html.render(again))
            outputs.write_text(scratch / VERIFICATION, artefact.dumps(result))
            scratch.rename(out)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    if json_out:
        print_json(result)
    else:
        _render_verify(result)
    if not result["all_reproduced"]:
        raise typer.Exit(1)


def _render_verify(result: dict[str, Any]) -> None:
    table = Table(title=f"dossier {result['dossier']} measured again on this host")
    for col in ("figure", "quantity", "recorded [interval]", "measured here", "verdict"):
        table.add_column(col)
    for f in result["figures"]:
        qs = f["quantities"] or [None]
        for i, q in enumerate(qs):
            table.add_row(f["id"] if i == 0 else "",
                          q["quantity"] if q else "-",
                          f"{_short(q['recorded'])} {_short(q['interval'])}" if q else
                          _short(f["recorded"]),
                          _short(q["measured"]) if q else _short(f["measured"]),
                          f["verdict"] if i == 0 else "")
    console.print(table)
    for d in result["drift"]:
        warn(f"{d['setting']} differs from the dossier's: recorded {_short(d['recorded'])}, "
             f"here {_short(d['here'])}", label="drift")
    if result["all_reproduced"]:
        console.print(result["headline"], highlight=False)
    else:
        warn(result["headline"])


@dossier_app.command("diff")
@handle_errors
def diff_cmd(
    a: Path = typer.Argument(..., metavar="A", help="A dossier's directory."),
    b: Path = typer.Argument(..., metavar="B", help="Another dossier's directory."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Two dossiers side by side (two boards, two kernels, two dates): every configuration
    setting that differs, and every figure whose value in one lies outside the interval the
    other states for it (or that only one has, or that changed with no interval to judge
    it).

    Exit 0 when nothing is flagged, 1 when something is, 2 for bad input.
    """
    result = diff_mod.diff(readback.read(a, "A"), readback.read(b, "B"))
    if json_out:
        print_json(result)
    else:
        _render_diff(result)
    if result["settings"] or result["flagged"]:
        raise typer.Exit(1)


def _render_diff(result: dict[str, Any]) -> None:
    if result["settings"]:
        table = Table(title="configuration settings that differ")
        for col in ("setting", "A", "B"):
            table.add_column(col)
        for s in result["settings"]:
            table.add_row(s["setting"], _short(s["a"]), _short(s["b"]))
        console.print(table)
    table = Table(title="figures (A beside B)")
    for col in ("figure", "quantity", "A [interval]", "B [interval]", "flag"):
        table.add_column(col)
    for f in result["figures"]:
        for i, q in enumerate(f["quantities"] or [None]):
            table.add_row(f["id"] if i == 0 else "", q["quantity"] if q else "-",
                          f"{_short(q['a'])} {_short(q['a_interval'])}" if q else _short(f["a"]),
                          f"{_short(q['b'])} {_short(q['b_interval'])}" if q else _short(f["b"]),
                          (f["flag"] or "") if i == 0 else "")
    console.print(table)
    if result["flagged"] or result["settings"]:
        warn(result["headline"])
    else:
        console.print(result["headline"], highlight=False)
