"""`intercore assess SYSTEM.yaml -o DIR`: every stage on one system, resumably, into a dossier."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..base.errors import InputError
from ..host.topology import read_topology
from ..mitigate.cgroupfs import DEFAULT_ROOT, root_parts
from . import paths
from .cgroups import ROOT_HELP
from .output import JSON_HELP, console, err_console, handle_errors, print_json, warn

STORE_NAME = "store.db"


@handle_errors
def assess_cmd(
    system_path: Path = typer.Argument(..., metavar="SYSTEM.yaml",
                                       help="System description (see examples/systems/)."),
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR",
                             help="The dossier's directory (made if its parent exists). "
                                  "A re-run into it resumes."),
    quick: bool = typer.Option(False, "--quick",
                               help="Cap every size at a smoke run's (1 matrix round of "
                                    "0.5 s blocks, 20 jobs, 3 validation pairs)."),
    db: Optional[Path] = typer.Option(None, "--db",
                                      help="Results store (default: DIR/store.db, so the "
                                           "dossier's rows travel with it)."),
    root: str = typer.Option(DEFAULT_ROOT, "--root", help=ROOT_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Assess one system: channels, their validation on this host, the interference
    matrix, Algorithm 1's plan and Solo / Interference / Protected under it, written as
    a certification dossier (DIR/dossier.json and a self-contained DIR/dossier.html).

    Each step's artefact (DIR/step-NAME.json) is written when the step has finished,
    with the content hashes of its inputs: a re-run skips every step whose inputs are
    unchanged and measures nothing twice. Ctrl-C stops within a second and leaves no
    group frozen and no half-written artefact; run the same command again to go on.

    Needs root (SCHED_FIFO, cgroups, the freezer) and two online CPUs.

    Example:

        intercore assess examples/systems/control-demo.yaml -o dossier --quick

    --json prints dossier.json.
    """
    if out.is_symlink():
        raise InputError(f"{out} is a symbolic link; give the directory itself",
                         field="--out")
    paths.output_dir(out, "--out")
    store = db if db is not None else out / STORE_NAME
    if db is not None or out.is_dir():
        paths.store_file(store)
    root_parts(root)
    # Deferred: the whole methodology is a fifth of every other command's start-up.
    from ..assess import run, system as system_mod
    topo = read_topology()
    system = system_mod.load(system_path, topo, quick=quick)
    out.mkdir(exist_ok=True)
    say = (lambda text: err_console.print(text, highlight=False, markup=False)) \
        if json_out else (lambda text: console.print(text, highlight=False, markup=False))
    doc = run.assess(system, out, store=store, root=root, topo=topo, argv=sys.argv, say=say)
    if json_out:
        print_json(doc)
        return
    if doc["flagged"]:
        warn(doc["headline"])
    for task in doc["sections"]["timing"]["tasks"]:
        if task.get("protection_refused"):
            warn(f"{task['task']}: {task['protection_refused']}")
    for w in doc["sections"]["plan"]["warnings"]:
        warn(w["message"], label=f"warning ({w['code']})")
    console.print(f"dossier: {out / 'dossier.html'} and {out / 'dossier.json'}",
                  highlight=False)
