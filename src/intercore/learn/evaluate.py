"""Held-out-family evaluation of every learner, and the split that `train` uses.

Within the families a model trains on, programs are dealt three ways: fit, validation (early
stopping) and calibration (split conformal): a program is wholly in one. Evaluation holds out
whole families: with k folds, each family is tested exactly once, by models that never saw a
region of it, so the pooled figures are over every labelled region of the dataset.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from .calibrate import Calibration, calibrate
from .dataset import Dataset, Example, family_folds, split_by_family
from .hierarchy import Hierarchy
from .learners import LEARNERS, make
from .metrics import score

VAL_SHARE = 0.15
CAL_SHARE = 0.2

# The transformer's variants the ablation compares with the default (KL alignment, one token
# per static instruction).
ABLATION: dict[str, dict[str, Any]] = {
    "transformer (no alignment)": {"alignment": "none"},
    "transformer (paper's term)": {"alignment": "paper"},
    "transformer (cosine)": {"alignment": "cosine"},
    "transformer (dynamic window)": {"tokens": "window"},
}


@dataclass(frozen=True)
class Split:
    fit: list[Example]
    val: list[Example]
    cal: list[Example]


def split_programs(examples: Sequence[Example], seed: int) -> Split:
    """Programs of the training families into fit / validation / calibration, stratified by
    family so every family with enough programs appears in each part; a small dataset still
    gets one validation and one calibration program when it has three or more."""
    by_family: dict[str, list[str]] = {}
    for e in examples:
        progs = by_family.setdefault(e.family, [])
        if e.program not in progs:
            progs.append(e.program)
    rng = random.Random(seed)
    val: set[str] = set()
    cal: set[str] = set()
    for family, progs in sorted(by_family.items()):
        progs = sorted(progs)
        rng.shuffle(progs)
        by_family[family] = progs
        n_val = round(VAL_SHARE * len(progs))
        n_cal = round(CAL_SHARE * len(progs))
        val.update(progs[:n_val])
        cal.update(progs[n_val:n_val + n_cal])
    rest = [p for _, progs in sorted(by_family.items(), key=lambda kv: -len(kv[1]))
            for p in progs if p not in val and p not in cal]
    if len(rest) + len(val) + len(cal) >= 3:
        if not cal and len(rest) > 1:
            cal.add(rest.pop(0))
        if not val and len(rest) > 1:
            val.add(rest.pop(0))
    return Split([e for e in examples if e.program not in val | cal],
                 [e for e in examples if e.program in val],
                 [e for e in examples if e.program in cal])


@dataclass
class Fitted:
    """A learner fitted on a split's fit part, calibrated on its calibration part."""

    name: str
    learner: Any
    calibration: Calibration
    info: dict[str, Any]

    def predict(self, regions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(median Δ̂, calibrated safe Δ̂, raw quantile) per region; the safe prediction is
        never below the median one."""
        med, q = self.learner.predict(regions)
        return med, np.maximum(self.calibration.apply(q), med), q


Progress = Callable[[str], None]


def fit(name: str, split: Split, hierarchy: Hierarchy, *, alpha: float, seed: int,
        budget_cpu_s: float, on_epoch=None, **overrides: Any) -> Fitted:
    learner = make(name, hierarchy, **overrides)
    t0 = time.process_time()
    info = learner.fit(split.fit, split.val, seed=seed, budget_cpu_s=budget_cpu_s,
                       on_epoch=on_epoch)
    info["train_cpu_s"] = time.process_time() - t0
    cal = split.cal or split.val
    if not cal:
        raise InputError("too few programs to hold some out for calibration: the dataset "
                         "needs at least three", field="--dataset")
    _, q = learner.predict([e.region for e in cal])
    calibration = calibrate(q, np.array([e.label.delta_safe for e in cal]), alpha)
    return Fitted(name, learner, calibration, info)


@dataclass
class Report:
    folds: list[list[str]]
    alpha: float
    learners: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "alpha": self.alpha, "learners": self.learners}


def crossval(ds: Dataset, *, learners: Sequence[str] = LEARNERS, folds: int = 3,
             alpha: float = 0.05, seed: int = 0, budget_cpu_s: float = 600.0,
             progress: Progress | None = None, variants: dict[str, dict[str, Any]] | None
             = None) -> Report:
    """Every learner (and every named transformer variant: name -> Config overrides) on
    k family folds. Pooled metrics over all test regions plus each fold's acc@10."""
    say = progress or (lambda text: None)
    examples = ds.examples()
    groups = family_folds(ds.families(), folds, seed)
    report = Report(groups, alpha)
    runs: list[tuple[str, str, dict[str, Any]]] = [(name, name, {}) for name in learners]
    runs += [(label, "transformer", over) for label, over in (variants or {}).items()]
    pooled: dict[str, dict[str, list]] = {label: {k: [] for k in
                                                  ("med", "safe", "true", "strue", "prog", "key")}
                                          for label, _, _ in runs}
    per_fold: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in runs}
    for i, test_families in enumerate(groups):
        train_ex, test_ex = split_by_family(examples, test_families)
        if not test_ex or not train_ex:
            continue
        split = split_programs(train_ex, seed + i)
        regions = [e.region for e in test_ex]
        for label, name, over in runs:
            say(f"fold {i + 1}/{len(groups)} (test: {', '.join(test_families)}): {label}")
            fitted = fit(name, split, ds.hierarchy, alpha=alpha, seed=seed + i,
                         budget_cpu_s=budget_cpu_s, **over)
            fitted.predict(regions[:1])  # compile first: time inference, not the jit
            t0 = time.perf_counter()
            med, safe, _ = fitted.predict(regions)
            per_region_ms = (time.perf_counter() - t0) * 1000 / max(len(regions), 1)
            p = pooled[label]
            p["med"] += med.tolist()
            p["safe"] += safe.tolist()
            p["true"] += [e.label.delta for e in test_ex]
            p["strue"] += [e.label.delta_safe for e in test_ex]
            p["prog"] += [e.program for e in test_ex]
            p["key"] += [e.key for e in test_ex]
            fold_score = score(med, safe, [e.label.delta for e in test_ex],
                               [e.label.delta_safe for e in test_ex],
                               [e.program for e in test_ex], boot=200)
            per_fold[label].append({"test": list(test_families), "n": len(test_ex),
                                    "acc@10": fold_score["acc@10"],
                                    "underestimation_rate": fold_score["underestimation_rate"],
                                    "calibration": fitted.calibration.to_dict(),
                                    "train_cpu_s": fitted.info["train_cpu_s"],
                                    "predict_ms_per_region": per_region_ms,
                                    "info": fitted.info})
    for label, _, _ in runs:
        p = pooled[label]
        if not p["true"]:
            continue
        s = score(p["med"], p["safe"], p["true"], p["strue"], p["prog"], seed=seed)
        folds_ = per_fold[label]
        s["folds"] = folds_
        s["acc@10_by_fold"] = [f["acc@10"] for f in folds_]
        s["train_cpu_s_max"] = max(f["train_cpu_s"] for f in folds_)
        s["predict_ms_per_region_max"] = max(f["predict_ms_per_region"] for f in folds_)
        report.learners[label] = s
        report.predictions[label] = {k: (m, sf) for k, m, sf in
                                     zip(p["key"], p["med"], p["safe"])}
    return report
