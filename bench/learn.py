#!/usr/bin/env python3
"""Learning stage: the slowdown transformer against its baselines on held-out kernel families.

    python bench/learn.py [--dataset DIR] [--folds 3] [--alpha 0.05] [--budget 600]

Every family is tested once, by models that never saw a region of it (k family folds; the
calibration programs come from the training families). Prints, per model, acc@10 with its
bootstrap interval over programs and per fold, the underestimation rate of the calibrated
safe prediction, Spearman, training CPU time and prediction time per region; then the
ablation of the alignment term (none, the paper's, cosine, KL).

Goals (bench/_goals.py; fail closed: a goal missed or a figure missing exits 1, a dataset
that cannot support the figures is refused with the reason, exit 3):
  transformer acc@10 >= 90 %, underestimation rate 0 at the stated confidence,
  training <= 600 CPU s per model, prediction <= 10 ms per region,
  and acc@10 above the best baseline's: the ratio and the margin, from this one run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _goals import Goals
from intercore.errors import HostUnsupported, InputError
from intercore.learn import dataset, evaluate, reference

# The three baselines, and `constant` (the training median for every region): what
# any model must beat to have learnt anything, on a host where most regions barely slow.
BASELINES = ("linear-l2", "forest", "quantile", "constant")
GOAL_ACC = 0.90
GOAL_TRAIN_CPU_S = 600.0
GOAL_PREDICT_MS = 10.0
# What issue 10 asks of the reference dataset: below this the figures are not the benchmark's.
MIN_PROGRAMS = 300
MIN_LABELLED = 1000


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, help="dataset directory (default: the reference)")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--budget", type=float, default=GOAL_TRAIN_CPU_S,
                    help="CPU seconds per training")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    goals = Goals()
    try:
        ds = dataset.load(args.dataset or reference.path())
    except (InputError, HostUnsupported) as exc:
        return _refuse(goals, str(exc))
    n = len(ds.examples())
    print(f"dataset: {ds.path} ({ds.hash}), {len(ds.programs)} programs, {n} labelled regions, "
          f"families {', '.join(ds.families())}; host {ds.meta.get('host', {}).get('cpu')}, "
          f"labels from the {ds.meta.get('label_regime', '?')} regime")
    if ds.meta.get("label_regime") != "shared":
        return _refuse(goals, "the labels do not all come from the shared regime; the figures "
                              "would not be evidence")
    if len(ds.programs) < MIN_PROGRAMS or n < MIN_LABELLED:
        regimes = ds.meta.get("regimes", {})
        total = sum(regimes.values())
        shared = regimes.get("shared", 0) / total if total else 0.0
        return _refuse(goals, f"{len(ds.programs)} programs and {n} labelled regions, fewer "
                              f"than the {MIN_PROGRAMS} and {MIN_LABELLED} the benchmark needs: "
                              f"the host gave {100 * shared:.0f}% of {total} pairs in the "
                              f"shared regime over "
                              f"{ds.meta.get('attempts', {}).get('total', '?')} attempts")
    report = evaluate.crossval(ds, learners=("transformer", *BASELINES), folds=args.folds,
                               alpha=args.alpha, seed=args.seed, budget_cpu_s=args.budget,
                               variants=evaluate.ABLATION,
                               progress=lambda text: print(f"  {text}", file=sys.stderr))
    print(f"\nheld-out families, {args.folds} folds: {report.folds}; safe bound at "
          f"{100 * (1 - args.alpha):.0f}%")
    print(f"{'model':30} {'n':>5} {'acc@10':>7} {'95% CI':>17} {'acc@5':>7} {'by fold':>24} "
          f"{'UR':>7} {'worst':>7} {'pess.':>7} {'rho':>5} {'CPU s':>6} {'ms/reg':>7}")
    for name, s in report.learners.items():
        lo, hi = s["acc@10_ci"]
        rho = "-" if s["spearman"] is None else f"{s['spearman']:.2f}"
        print(f"{name:30} {s['n']:>5} {_pct(s['acc@10'])} [{_pct(lo)}, {_pct(hi)}] "
              f"{_pct(s['acc@5'])} {' '.join(_pct(a) for a in s['acc@10_by_fold']):>24} "
              f"{_pct(s['underestimation_rate'])} {_pct(s['worst_miss'])} "
              f"{_pct(s['pessimism'])} {rho:>5} {s['train_cpu_s_max']:6.0f} "
              f"{s['predict_ms_per_region_max']:7.2f}")
    t = report.learners.get("transformer")
    base = {b: report.learners[b] for b in BASELINES if b in report.learners}
    if t is None or len(base) != len(BASELINES):
        goals.check("learn_acc10", None, ">=", GOAL_ACC, "a model produced no figures")
        return goals.finish()
    best = max(base, key=lambda b: base[b]["acc@10"])
    ratio = t["acc@10"] / base[best]["acc@10"] if base[best]["acc@10"] else None
    confidence = min(f["calibration"]["confidence"] for f in t["folds"])
    shown = "-" if ratio is None else f"{ratio:.3f}"
    print(f"\ntransformer acc@10 / best baseline's ({best}): {shown} "
          f"({100 * (t['acc@10'] - base[best]['acc@10']):+.1f} points); safe bound stated at "
          f"{100 * confidence:.1f}% confidence")
    goals.check("learn_acc10", t["acc@10"], ">=", GOAL_ACC)
    goals.check("learn_underestimation_rate", t["underestimation_rate"], "==", 0)
    goals.check("learn_train_cpu_s", t["train_cpu_s_max"], "<=", GOAL_TRAIN_CPU_S)
    goals.check("learn_predict_ms_per_region", t["predict_ms_per_region_max"], "<=",
                GOAL_PREDICT_MS)
    goals.check(f"learn_acc10_over_best_baseline ({best})", ratio, ">", 1.0)
    return goals.finish()


def _refuse(goals: Goals, reason: str) -> int:
    goals.refuse("learn_acc10", ">=", GOAL_ACC, reason)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
