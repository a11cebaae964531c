"""The demo's assess stage: examples/systems/control-demo.yaml (the example's control_task and
matrix_task beside a DRAM writer and its image_filter) assessed with --quick into a dossier,
beside the user-program stage's build."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from ..base import examples
from ..assess import run, system as system_mod
from ..host.topology import read_topology
from ..mitigate.cgroupfs import DEFAULT_ROOT
from . import user_program

SYSTEM = "control-demo.yaml"
PROGRAMS = ("control_task", "matrix_task", "image_filter")  # what its task set runs
DOSSIER = "dossier"


def run_quick(out: Path, on_phase: Callable[[str], None],
              root: str = DEFAULT_ROOT) -> dict[str, Any]:
    """out/dossier (its store inside it), from the example system copied to out/systems: the
    system names its programs as ../user-program/PROG, which are built there."""
    user_program.build(out, on_phase, targets=PROGRAMS)
    source = examples.example("systems", "the example systems")
    systems = out / "systems"
    shutil.copytree(source, systems, dirs_exist_ok=True)
    topo = read_topology()
    system = system_mod.load(systems / SYSTEM, topo, quick=True)
    dossier = out / DOSSIER
    dossier.mkdir(exist_ok=True)
    return run.assess(system, dossier, store=dossier / "store.db", root=root,
                      topo=topo, argv=sys.argv, say=on_phase)
