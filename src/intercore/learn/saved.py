"""A trained model on disk, with everything needed to trust and reuse it.

    DIR/model.json   the learner's name and settings (for the transformer: config and
                     vocabulary), cache hierarchy, calibration, provenance (dataset hash,
                     host, seed, families, split, training CPU time, intercore version)
    DIR/params.npz   the learner's arrays (none for the analytical and constant baselines)

Any learner but the forest is saved: the default model is whichever learner ranks regions
best on held-out families (evaluate.DEFAULT_LEARNER). Format 1 (before baselines were saved)
held a transformer and still loads. Prediction refuses regions traced on another cache
geometry: their features would mean something else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import __version__
from ..base import outputs, yamlfile
from ..base.errors import InputError
from .calibrate import Calibration
from .evaluate import Fitted
from .features import RegionFeatures, l2_map
from .hierarchy import Hierarchy
from .learners import LEARNERS, make

FORMAT = 2


@dataclass
class SavedModel:
    learner: Any  # learners.Learner
    hierarchy: Hierarchy
    calibration: Calibration
    provenance: dict[str, Any]
    path: Path | None = None

    def check(self, hierarchy: Hierarchy) -> None:
        if not self.hierarchy.same_geometry(hierarchy):
            raise InputError(f"the model was trained on {self.hierarchy.describe()}, the "
                             f"regions were traced on {hierarchy.describe()}; trace with the "
                             "model's caches (--caches) or train on this host's dataset",
                             field="--model")

    def describe(self) -> dict[str, Any]:
        """The model as outputs name it: where it is, which learner, what it learnt from and
        what its predictions are for (regime, host class, aggressor set)."""
        unknown = "unrecorded (a model saved before intercore recorded it)"
        return {"path": str(self.path) if self.path else None,
                "learner": self.learner.name,
                "dataset": self.provenance.get("dataset_hash"),
                "confidence": self.calibration.confidence,
                "hierarchy": self.hierarchy.describe(),
                **{k: self.provenance.get("labelled_for", {}).get(k, unknown)
                   for k in ("regime", "host", "aggressor")}}

    def predict(self, regions: Sequence[RegionFeatures]):
        """(median Δ̂, safe Δ̂, per region the weight of each token, region token first). The
        transformer's weights are the attention its tokens received; a learner that reads
        only a region's totals has none, and its slowdown is laid on the instructions in
        proportion to their L2 accesses, the traffic the shared caches see."""
        med, q = self.learner.predict(regions)
        if hasattr(self.learner, "attention"):
            weights, _ = self.learner.attention(regions)
        else:
            weights = [l2_map(r) for r in regions]
        return med, np.maximum(self.calibration.apply(q), med), weights

    def save(self, directory: Path) -> None:
        """A new model directory appears whole, in one rename (a stop part way leaves none);
        an existing one has each file replaced in one rename."""
        if directory.exists():
            self._write(directory)
        else:
            directory.parent.mkdir(parents=True, exist_ok=True)
            with outputs.new_directory(directory) as tmp:
                self._write(tmp)
        self.path = directory

    def _write(self, directory: Path) -> None:
        meta, arrays = self.learner.state()
        with outputs.replacing(directory / "params.npz") as tmp:
            np.savez_compressed(tmp, **arrays)
        doc = {"format": FORMAT, "intercore": __version__, "learner": self.learner.name,
               "state": meta, "hierarchy": self.hierarchy.to_dict(),
               "calibration": self.calibration.to_dict(), "provenance": self.provenance}
        outputs.write_text(directory / "model.json", json.dumps(doc, indent=2) + "\n")


def from_fitted(fitted: Fitted, hierarchy: Hierarchy, provenance: dict[str, Any]
                ) -> SavedModel:
    return SavedModel(fitted.learner, hierarchy, fitted.calibration,
                      {**provenance, "fit": fitted.info})


def _learner(doc: dict[str, Any], hierarchy: Hierarchy, source: str
             ) -> tuple[Any, dict[str, Any]]:
    """The learner a model.json names, and its settings."""
    if doc.get("format") == 1:
        return make("transformer", hierarchy), {"config": doc["config"], "vocab": doc["vocab"]}
    if doc.get("format") != FORMAT:
        raise InputError(f"format {doc.get('format')}, this intercore reads 1 and {FORMAT}",
                         source=source, field="format")
    if doc.get("learner") not in LEARNERS:
        raise InputError(f"learner {doc.get('learner')!r}, known: {', '.join(LEARNERS)}",
                         source=source, field="learner")
    return make(doc["learner"], hierarchy), doc["state"]


def load(directory: Path) -> SavedModel:
    directory = Path(directory)
    meta = directory / "model.json"
    if not meta.is_file():
        raise InputError("no model.json here: not a model directory (make one with "
                         "`intercore learn train`)", source=str(directory))
    try:
        doc = yamlfile.read_json(meta).data
        if not isinstance(doc, dict):
            raise InputError("not a JSON object", source=str(meta))
        hierarchy = Hierarchy.from_dict(doc["hierarchy"])
        learner, state = _learner(doc, hierarchy, str(meta))
        with np.load(directory / "params.npz") as arrays:
            learner.restore(state, dict(arrays))
        calibration = Calibration.from_dict(doc["calibration"])
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"unreadable model ({type(exc).__name__}: {exc})",
                         source=str(meta)) from None
    return SavedModel(learner, hierarchy, calibration, doc.get("provenance", {}), directory)
