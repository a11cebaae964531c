"""Resumable steps: each step's artefact is one JSON file in the dossier directory, written in
one rename when the step has finished, and holding the inputs it was made from.

A re-run reads the artefact back and skips the step when its inputs (content hashes of the
files, the sizes, the host's fingerprint, the artefacts of the steps before) are unchanged,
so nothing is measured twice; a step interrupted part way has no artefact and runs again.
An artefact that does not read back (hand-edited, another version's) is not trusted: its
step runs again and replaces it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..base import artefact, outputs
from ..base.errors import InputError
from ..host.config import value_hash

FORMAT = "intercore.assess-step/1"


@dataclass(frozen=True)
class Step:
    name: str
    what: str                       # the progress line: what the step does
    inputs: dict[str, Any]          # JSON data; equal inputs, equal result
    work: Callable[[], dict[str, Any]]


def path_of(out: Path, name: str) -> Path:
    return out / f"step-{name}.json"


def finished(out: Path, step: Step) -> dict[str, Any] | None:
    """The step's artefact when it was made from exactly these inputs, else None."""
    path = path_of(out, step.name)
    if not path.is_file() or path.is_symlink():
        return None
    try:
        doc = artefact.read_document(path).data
    except InputError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or \
            doc.get("inputs") != step.inputs or not isinstance(doc.get("result"), dict):
        return None
    return doc


class Runner:
    """Runs steps in order, one progress line each, numbered out of `total`."""

    def __init__(self, out: Path, total: int, say: Callable[[str], None]):
        self.out, self.total, self.say, self.count = out, total, say, 0

    def __call__(self, step: Step) -> dict[str, Any]:
        """The step's artefact: read back when its inputs are unchanged, else made now."""
        self.count += 1
        head = f"[{self.count}/{self.total}] {step.name}"
        doc = finished(self.out, step)
        if doc is not None:
            self.say(f"{head}: skipped, inputs unchanged since {doc['finished']} "
                     f"(inputs sha256 {doc['inputs_sha256'][:12]})")
            return doc
        self.say(f"{head}: {step.what}")
        started = time.time()
        result = step.work()
        doc = {"format": FORMAT, "step": step.name, "inputs": step.inputs,
               "inputs_sha256": value_hash(step.inputs),
               "started": _utc(started), "finished": _utc(time.time()),
               "seconds": round(time.time() - started, 3), "result": result}
        outputs.write_text(path_of(self.out, step.name), artefact.dumps(doc))
        return doc


def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
