#!/usr/bin/env python3
"""Learning stage: the slowdown transformer against its baselines on held-out kernel families.

    python bench/learn.py [--dataset DIR] [--folds 3] [--alpha 0.05] [--budget 600]

Every family is tested once, by models that never saw a region of it (k family folds; the
calibration programs come from the training families). Prints, per model, acc@10 with its
bootstrap interval over programs and per fold, the underestimation rate of the calibrated
safe prediction, Spearman, training CPU time and prediction time per region; then the
ablation of the alignment term (none, the paper's, cosine, KL).

Goals (fail closed: any goal missed or any figure missing exits 1):
  transformer acc@10 >= 90 %, underestimation rate 0 at the stated confidence,
  training <= 600 CPU s per model, prediction <= 10 ms per region,
  and acc@10 above the best baseline's (the margin is printed).
Last line: `learn_acc10: <transformer acc@10> vs <best baseline> (<name>)`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from intercore.errors import HostUnsupported, InputError
from intercore.learn import dataset, evaluate, reference

BASELINES = ("linear-l2", "forest", "quantile")
GOAL_ACC = 0.90
GOAL_TRAIN_CPU_S = 600.0
GOAL_PREDICT_MS = 10.0


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
    try:
        ds = dataset.load(args.dataset or reference.path())
    except (InputError, HostUnsupported) as exc:
        print(f"refused: {exc}")
        return 1
    n = len(ds.examples())
    print(f"dataset: {ds.path} ({ds.hash}), {len(ds.programs)} programs, {n} labelled regions, "
          f"families {', '.join(ds.families())}; host {ds.meta.get('host', {}).get('cpu')}, "
          f"labels from the {ds.meta.get('label_regime', '?')} regime")
    if ds.meta.get("label_regime") != "shared":
        print("refused: the labels do not all come from the shared regime; the figures would "
              "not be evidence")
        return 1
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
        print("FAIL: a model produced no figures")
        return 1
    best = max(base, key=lambda b: base[b]["acc@10"])
    margin = t["acc@10"] - base[best]["acc@10"]
    confidence = min(f["calibration"]["confidence"] for f in t["folds"])
    checks = [
        (f"transformer acc@10 {_pct(t['acc@10'])} >= {_pct(GOAL_ACC)}", t["acc@10"] >= GOAL_ACC),
        (f"underestimation rate {_pct(t['underestimation_rate'])} == 0 at "
         f"{100 * confidence:.1f}% confidence", t["underestimation_rate"] == 0),
        (f"training {t['train_cpu_s_max']:.0f} CPU s <= {GOAL_TRAIN_CPU_S:.0f}",
         t["train_cpu_s_max"] <= GOAL_TRAIN_CPU_S),
        (f"prediction {t['predict_ms_per_region_max']:.2f} ms/region <= {GOAL_PREDICT_MS}",
         t["predict_ms_per_region_max"] <= GOAL_PREDICT_MS),
        (f"beats the best baseline ({best}, {_pct(base[best]['acc@10'])}) by "
         f"{100 * margin:+.1f} points", margin > 0),
    ]
    print()
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    values = [t["acc@10"], base[best]["acc@10"], t["underestimation_rate"]]
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        print("FAIL: a figure is missing")
        return 1
    print(f"learn_acc10: {t['acc@10']:.3f} vs {base[best]['acc@10']:.3f} ({best})")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
