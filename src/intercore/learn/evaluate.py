"""Held-out-family evaluation of every learner, and the split that `train` uses.

Within the families a model trains on, programs are dealt three ways: fit, validation (early
stopping) and calibration (split conformal): a program is wholly in one. Evaluation holds out
whole families: with k folds, each family is tested exactly once, by models that never saw a
region of it, so the pooled figures are over every labelled region of the dataset.

The safe bound for unseen families is calibrated the same way one level down: the training
families are dealt into inner folds, a model fitted on the others scores each (calibrate.py),
so no test family's label reaches its own bound.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..base.errors import InputError
from .calibrate import Calibration, calibrate, calibrate_families, scores
from .dataset import Dataset, Example, family_folds, split_by_family
from .hierarchy import Hierarchy
from .learners import LEARNERS, make
from .metrics import Scored, paired_difference, score

VAL_SHARE = 0.15
CAL_SHARE = 0.2
# Family folds inside the training families for the unseen-family bound: each inner model
# trains on two thirds of them, so it errs at least as much on a new family as the final
# model, which trains on all.
INNER_FOLDS = 3

# What the transformer must beat every baseline on, with the interval of the difference above
# 0, to stay the default model: the heatmap's job is to order a program's regions.
DECISIVE = ("rho_within", "top3")

# The model `learn train`, `predict` and `heatmap` use unless told otherwise: the transformer
# if it beat every baseline on DECISIVE with the interval above 0 (bench/learn.py checks),
# else the held-out winner (Report.winner). On the reference dataset (docs/learn.md, Results)
# linear-l2 won: median ρ 0.30 against the transformer's 0.26, difference -0.04 [-0.20, 0.17].
DEFAULT_LEARNER = "linear-l2"

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


def _by_family(examples: Sequence[Example], q: np.ndarray) -> dict[str, np.ndarray]:
    s = scores(q, np.array([e.label.delta_safe for e in examples]))
    out: dict[str, list[float]] = {}
    for e, v in zip(examples, s):
        out.setdefault(e.family, []).append(float(v))
    return {f: np.asarray(v) for f, v in out.items()}


def unseen_scores(name: str, examples: Sequence[Example], hierarchy: Hierarchy, *,
                  inner_folds: int, seed: int, budget_cpu_s: float, on_epoch=None,
                  **overrides: Any
                  ) -> dict[str, np.ndarray]:
    """Family -> calibration scores of its regions by a model fitted without that family
    (empty with fewer than two families: nothing can be held out)."""
    families = sorted({e.family for e in examples})
    if len(families) < 2 or inner_folds < 2:
        return {}
    out: dict[str, np.ndarray] = {}
    for group in family_folds(families, min(inner_folds, len(families)), seed):
        train_ex, held = split_by_family(list(examples), group)
        inner = split_programs(train_ex, seed)
        learner = make(name, hierarchy, **overrides)
        learner.fit(inner.fit, inner.val, seed=seed, budget_cpu_s=budget_cpu_s,
                    on_epoch=on_epoch)
        out.update(_by_family(held, learner.predict([e.region for e in held])[1]))
    return out


def fit(name: str, split: Split, hierarchy: Hierarchy, *, alpha: float, seed: int,
        budget_cpu_s: float, on_epoch=None, inner_folds: int = INNER_FOLDS,
        **overrides: Any) -> Fitted:
    """`name` fitted on the split's fit part; its safe bound calibrated for unseen families
    on `inner_folds` family folds of the whole split (0: on the calibration programs only,
    a within-family bound)."""
    cal = split.cal or split.val
    if not cal:
        raise InputError("too few programs to hold some out for calibration: the dataset "
                         "needs at least three", field="--dataset")
    learner = make(name, hierarchy, **overrides)
    t0 = time.process_time()
    info = learner.fit(split.fit, split.val, seed=seed, budget_cpu_s=budget_cpu_s,
                       on_epoch=on_epoch)
    info["train_cpu_s"] = time.process_time() - t0
    _, q = learner.predict([e.region for e in cal])
    t0 = time.process_time()
    unseen = unseen_scores(name, [*split.fit, *split.val, *split.cal], hierarchy,
                           inner_folds=inner_folds, seed=seed, budget_cpu_s=budget_cpu_s,
                           on_epoch=on_epoch, **overrides)
    info["calibration_cpu_s"] = time.process_time() - t0
    calibration = (calibrate_families(unseen, _by_family(cal, q), alpha) if unseen else
                   calibrate(q, np.array([e.label.delta_safe for e in cal]), alpha))
    return Fitted(name, learner, calibration, info)


@dataclass
class Report:
    folds: list[list[str]]
    alpha: float
    learners: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    scored: dict[str, Scored] = field(default_factory=dict)
    seed: int = 0

    def winner(self) -> str | None:
        """The learner that ranks regions best on the held-out families (median ρ within
        programs, then top-3 recall); a learner without a value on either ranks last."""
        def key(name):
            s = self.learners[name]
            return tuple(-1e9 if s[m] is None else s[m] for m in DECISIVE)
        return max(self.scored, key=key, default=None)

    def comparison(self, learner: str = "transformer") -> dict[str, Any] | None:
        """`learner` against the best other learner on each decisive metric, with the paired
        bootstrap interval of the difference; `wins` only where every interval is above 0."""
        if learner not in self.scored or len(self.scored) < 2:
            return None
        out: dict[str, Any] = {"learner": learner, "metrics": {}}
        for m in DECISIVE:
            others = [n for n in self.scored if n != learner
                      and self.learners[n][m] is not None]
            if not others:
                out["metrics"][m] = {"against": None, "difference": None, "ci": None}
                continue
            best = max(others, key=lambda n: self.learners[n][m])
            out["metrics"][m] = {"against": best, **paired_difference(
                self.scored[learner], self.scored[best], m, seed=self.seed)}
        out["wins"] = all(d["ci"] is not None and d["ci"][0] > 0
                          for d in out["metrics"].values())
        out["winner"] = learner if out["wins"] else self.winner()
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "alpha": self.alpha, "learners": self.learners,
                "comparison": self.comparison(), "winner": self.winner()}


def crossval(ds: Dataset, *, learners: Sequence[str] = LEARNERS, folds: int = 3,
             alpha: float = 0.05, seed: int = 0, budget_cpu_s: float = 600.0,
             progress: Progress | None = None, variants: dict[str, dict[str, Any]] | None
             = None) -> Report:
    """Every learner (and every named transformer variant: name -> Config overrides) on
    k family folds. Pooled metrics over all test regions plus each fold's acc@10."""
    say = progress or (lambda text: None)
    examples = ds.examples()
    groups = family_folds(ds.families(), folds, seed)
    report = Report(groups, alpha, seed=seed)
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
                                    "exceedance": fold_score["exceedance"],
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
        s["calibration_cpu_s_max"] = max(f["info"]["calibration_cpu_s"] for f in folds_)
        s["predict_ms_per_region_max"] = max(f["predict_ms_per_region"] for f in folds_)
        report.learners[label] = s
        # Variants are compared with their default in the ablation, not ranked as learners.
        if label in learners:
            report.scored[label] = Scored.of(p["med"], p["safe"], p["true"], p["strue"],
                                             p["prog"])
        report.predictions[label] = {k: (m, sf) for k, m, sf in
                                     zip(p["key"], p["med"], p["safe"])}
    return report
