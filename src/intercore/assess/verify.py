"""`intercore dossier verify DIR`: the dossier's figures (all, or those chosen) measured again on
this host, each marked reproduced or not within the interval the dossier states for it.

The re-measurement is the assessment's own step (the validation, the worst-aggressor search,
the matrix, the regions of the user's programs, or Solo / Interference / Protected under the
dossier's plan, not a new one), run on the same inputs: every input file must still have
the hash the dossier recorded, or there is nothing to reproduce. A search figure is judged by
the Δ of what the search finds again, which need not be the same aggressor: the question is
how bad the worst interference found is, and the figure shows both aggressors side by side.
The host's configuration is compared with the one the dossier recorded and every setting that
drifted is named beside the verdicts: a figure reproduced under another kernel
command line is reported with that fact, not as if the hosts were the same.

The steps run in a scratch directory (their artefacts, the store of the new rows): removed at
the end, or renamed into place as a dossier of the re-measurement when --out names one, so a
stop leaves nothing half-written.
"""

from __future__ import annotations

import fnmatch
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..base.errors import InputError
from ..host.topology import Topology
from ..model.platform import Platform
from . import compare, dossier as dossier_mod, readback, steps, system as system_mod
from .pipeline import STEPS, Pipeline

FORMAT = "intercore.dossier-verification/1"
STORE_NAME = "store.db"
# The step that measures each kind of figure (the first part of its id).
MEASURED_BY = {"validation": "validation", "search": "search", "matrix": "matrix",
               "regions": "regions", "protection": "protection"}
# Steps a dossier of an earlier version may lack; one is needed only for its own figures.
LATER = ("search",)


@dataclass(frozen=True)
class Request:
    directory: Path
    dossier: dict[str, Any]
    done: dict[str, dict[str, Any]]   # the dossier's step artefacts
    system: system_mod.System
    chosen: list[dict[str, Any]]      # the figures to re-measure
    steps: tuple[str, ...]            # the steps that measure them, in STEPS order


def choose(dossier: dict[str, Any], patterns: list[str]) -> list[dict[str, Any]]:
    """The figures whose id matches one of `patterns` (shell-style; none: every figure)."""
    figures = dossier["figures"]
    for p in patterns:
        if not any(fnmatch.fnmatchcase(f["id"], p) for f in figures):
            known = ", ".join(sorted({f["id"].split("/")[0] + "/*" for f in figures}))
            raise InputError(f"{p!r} matches no figure of the dossier (its kinds: {known})",
                             field="--figure")
    return [f for f in figures
            if not patterns or any(fnmatch.fnmatchcase(f["id"], p) for p in patterns)]


def prepare(directory: Path, patterns: list[str], topo: Topology) -> Request:
    """Everything verify needs, checked before anything is measured."""
    dossier = readback.read(directory, "DIR")
    chosen = choose(dossier, patterns)
    done = readback.step_artefacts(directory, dossier)
    missing = [s for s in STEPS if s not in done and s not in LATER]
    if missing:
        raise InputError(f"the dossier has no {', '.join(missing)} step",
                         source=str(directory / readback.DOSSIER), field="steps")
    kinds = {f["id"].split("/")[0] for f in chosen}
    unknown = sorted(kinds - set(MEASURED_BY))
    if unknown:
        raise InputError(f"no step measures figures of kind {', '.join(unknown)}",
                         source=str(directory / readback.DOSSIER), field="figures")
    source = Path(dossier["system"]["source"])
    if not source.is_file():
        raise InputError(f"the system description {source} is not a file here: verify "
                         "re-measures the same inputs, at the paths the dossier names",
                         source=str(directory / readback.DOSSIER), field="system.source")
    system = system_mod.load(source, topo, quick=dossier["system"]["quick"])
    for path, sha in system.files.items():
        recorded = str(dossier["inputs"].get(path))
        if recorded != sha:
            raise InputError(f"sha256 {sha[:12]} is not the {recorded[:12]} "
                             "the dossier recorded: the figures were measured from another "
                             "input, so there is nothing to reproduce", source=path)
    wanted = {MEASURED_BY[k] for k in kinds}
    return Request(directory, dossier, done, system, chosen,
                   tuple(s for s in STEPS if s in wanted))


def drift(dossier: dict[str, Any], snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Every setting of this host (and the tool) that differs from the dossier's."""
    recorded = compare.host(dossier["host_fingerprint"],
                            dossier["sections"]["configuration"]["settings"])
    here = compare.host(snapshot["fingerprint"], snapshot["settings"])
    rows = [{"setting": d["setting"], "recorded": d["a"], "here": d["b"]}
            for d in compare.changed(recorded, here)]
    if dossier["tool_version"] != __version__:
        rows.append({"setting": "tool_version", "recorded": dossier["tool_version"],
                     "here": __version__})
    return rows


def remeasure(req: Request, scratch: Path, *, root: str, topo: Topology,
              snapshot: dict[str, Any], argv: list[str],
              say: Callable[[str], None]) -> dict[str, Any]:
    """The chosen steps run again into `scratch`, the others' artefacts copied beside them;
    the dossier those steps make, built as `intercore assess` builds it."""
    for name in STEPS:
        if name not in req.steps and name in req.done:
            shutil.copyfile(steps.path_of(req.directory, name), steps.path_of(scratch, name))
    store = scratch / STORE_NAME
    pipeline = Pipeline(req.system, scratch, db=store, root=root, topo=topo,
                        fingerprint=snapshot["fingerprint"], argv=argv, say=say)
    done = dict(req.done)
    platform: Platform = pipeline.load_platform(done)
    make = {"validation": lambda: pipeline.validation_step(platform),
            "search": pipeline.search_step,
            "matrix": pipeline.matrix_step,
            # beside the co-runners the dossier's matrix chose, so the same figures come back
            "regions": lambda: pipeline.regions_step(req.done, platform),
            # the dossier's plan, not one made from a new matrix: its protection is the figure
            "protection": lambda: pipeline.protection_step(req.done)}
    runner = steps.Runner(scratch, len(req.steps), say)
    for name in req.steps:
        done[name] = runner(make[name]())
    # The counters are the host's, not measured: the dossier's section is carried over.
    return dossier_mod.build(done, req.system, platform, snapshot,
                             req.dossier["sections"]["capacity"], scratch, store,
                             req.dossier["system"]["quick"])


def verdicts(req: Request, again: dict[str, Any], snapshot: dict[str, Any]) -> dict[str, Any]:
    new = {f["id"]: f for f in again["figures"]}
    rows = [compare.against(f, new.get(f["id"])) for f in req.chosen]
    reproduced = sum(r["verdict"] == compare.REPRODUCED for r in rows)
    drifted = drift(req.dossier, snapshot)
    headline = f"{reproduced} of {len(rows)} figures reproduced within their stated interval"
    if drifted:
        headline += ("; measured on a host whose configuration differs from the dossier's in "
                     + ", ".join(d["setting"] for d in drifted))
    return {"format": FORMAT, "dossier": str(req.directory),
            "recorded": {"host_fingerprint": req.dossier["host_fingerprint"],
                         "tool_version": req.dossier["tool_version"],
                         "generated": req.dossier.get("generated")},
            "here": {"host_fingerprint": snapshot["fingerprint"], "tool_version": __version__},
            "drift": drifted, "steps": list(req.steps), "figures": rows,
            "reproduced": reproduced, "chosen": len(rows),
            "all_reproduced": reproduced == len(rows), "headline": headline}
