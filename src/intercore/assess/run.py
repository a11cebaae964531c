"""One assessment, from a loaded system to the written dossier: what `intercore assess` runs once
its input is checked, and what the demo runs on the example system."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..base import artefact, outputs
from ..host import config
from ..host.topology import Topology
from ..base.stopping import sigterm_unwinds
from . import capacity, dossier, html, pipeline
from .steps import Runner
from .system import System


def assess(system: System, out: Path, *, store: Path, root: str, topo: Topology,
           argv: list[str], say: Callable[[str], None]) -> dict[str, Any]:
    """Every step into `out` (made by the caller), then DIR/dossier.json and dossier.html."""
    snapshot = config.snapshot()
    steps = pipeline.Pipeline(system, out, db=store, root=root, topo=topo,
                              fingerprint=snapshot["fingerprint"], argv=argv, say=say)
    with sigterm_unwinds():
        done = pipeline.run(steps, Runner(out, len(pipeline.STEPS), say))
    doc = dossier.build(done, system, steps.load_platform(done), snapshot,
                        capacity.section(system), out, store, system.quick)
    outputs.write_text(out / "dossier.json", artefact.dumps(doc))
    outputs.write_text(out / "dossier.html", html.render(doc))
    return doc
