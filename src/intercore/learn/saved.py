"""A trained transformer on disk, with everything needed to trust and reuse it.

    DIR/model.json   config, vocabulary, cache hierarchy, calibration, provenance (dataset
                     hash, host, seed, families, split, training CPU time, intercore version)
    DIR/params.npz   the parameters

Prediction refuses regions traced on another cache geometry: their features would mean
something else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import __version__, outputs, yamlfile
from ..errors import InputError
from .calibrate import Calibration
from .encode import Vocab
from .evaluate import Fitted
from .features import RegionFeatures
from .hierarchy import Hierarchy
from .learners import Transformer
from . import model as tmodel

FORMAT = 1


@dataclass
class SavedModel:
    transformer: Transformer
    calibration: Calibration
    provenance: dict[str, Any]
    path: Path | None = None

    @property
    def hierarchy(self) -> Hierarchy:
        return self.transformer.hierarchy

    def check(self, hierarchy: Hierarchy) -> None:
        if not self.hierarchy.same_geometry(hierarchy):
            raise InputError(f"the model was trained on {self.hierarchy.describe()}, the "
                             f"regions were traced on {hierarchy.describe()}; trace with the "
                             "model's caches (--caches) or train on this host's dataset",
                             field="--model")

    def describe(self) -> dict[str, Any]:
        """The model as outputs name it: where it is, what it learnt from and what its
        predictions are for (regime, host class, aggressor set)."""
        unknown = "unrecorded (a model saved before intercore recorded it)"
        return {"path": str(self.path) if self.path else None,
                "dataset": self.provenance.get("dataset_hash"),
                "confidence": self.calibration.confidence,
                "hierarchy": self.hierarchy.describe(),
                **{k: self.provenance.get("labelled_for", {}).get(k, unknown)
                   for k in ("regime", "host", "aggressor")}}

    def predict(self, regions: Sequence[RegionFeatures]):
        """(median Δ̂, safe Δ̂, attention received [N, L])."""
        med, q = self.transformer.predict(regions)
        rec, _ = self.transformer.attention(regions)
        return med, np.maximum(self.calibration.apply(q), med), rec

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        t = self.transformer
        if t.cfg is None or t.vocab is None:
            raise RuntimeError("the transformer is saved before fit()")
        with outputs.replacing(directory / "params.npz") as tmp:
            # numpy's stub types **kwds as its keyword allow_pickle too: names are ours here
            np.savez_compressed(tmp, **tmodel.flatten(t.params))  # type: ignore[arg-type]
        doc = {"format": FORMAT, "intercore": __version__,
               "config": tmodel.config_dict(t.cfg), "vocab": list(t.vocab.words),
               "hierarchy": t.hierarchy.to_dict(), "calibration": self.calibration.to_dict(),
               "provenance": self.provenance}
        outputs.write_text(directory / "model.json", json.dumps(doc, indent=2) + "\n")
        self.path = directory


def from_fitted(fitted: Fitted, provenance: dict[str, Any]) -> SavedModel:
    if not isinstance(fitted.learner, Transformer):
        raise TypeError("only the transformer is saved as a model")
    return SavedModel(fitted.learner, fitted.calibration, {**provenance, "fit": fitted.info})


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
        if doc.get("format") != FORMAT:
            raise InputError(f"format {doc.get('format')}, this intercore reads {FORMAT}",
                             source=str(meta), field="format")
        hierarchy = Hierarchy.from_dict(doc["hierarchy"])
        t = Transformer(hierarchy)
        t.vocab = Vocab(tuple(doc["vocab"]))
        t.cfg = tmodel.Config(**doc["config"])
        with np.load(directory / "params.npz") as arrays:
            t.params = tmodel.unflatten(dict(arrays), t.cfg)
        calibration = Calibration.from_dict(doc["calibration"])
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"unreadable model ({type(exc).__name__}: {exc})",
                         source=str(meta)) from None
    return SavedModel(t, calibration, doc.get("provenance", {}), directory)
