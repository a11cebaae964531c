#!/usr/bin/env python3
"""Learning stage: the slowdown transformer against its baselines on held-out kernel families.

    python bench/learn.py [--dataset DIR] [--folds 3] [--alpha 0.05] [--budget 600] [--ablation]
                          [--cost-only] [--cost-learners linear-l2,transformer]

Every family is tested once, by models that never saw a region of it (k family folds; each
model's safe bound is calibrated on family folds inside its training families). Prints, per
model, with 95 % bootstrap intervals over programs: median Spearman ρ within programs, ρ
across all regions, top-1 and top-3 recall of each program's most sensitive regions, acc@10,
MAPE and the rate at which the safe bound is exceeded; then acc@10 per fold, training CPU
time and prediction time per region; then the transformer against the best other learner on
ρ and top-3 recall (paired bootstrap of the difference) and the held-out winner, the model
`learn predict` and `learn heatmap` should use. --ablation adds the transformer's variants
(alignment none, the paper's, cosine; dynamic window).

First, what `learn train` and `learn predict` cost with each of --cost-learners (default: the
default model's learner; bench/_learn_cost.py says how each figure is taken): training CPU
time on the whole dataset, prediction per region once warm, and apart from it the start-up
of a fresh process (import, model load, first prediction). --cost-only stops there.

Goals (bench/_goals.py; fail closed: a goal missed or a figure or interval missing exits 1, a
dataset that cannot support the figures is refused with the reason, exit 3):
  every metric and interval present for every model; the safe bound exceeded on at most α of
  held-out regions by every model; transformer acc@10 >= 90 %, training <= 600 CPU s per
  model, prediction <= 10 ms per region, and its ρ and top-3 recall above the best other
  learner's with the interval of the difference above 0; for every --cost-learners, training
  on the whole dataset <= 600 CPU s (the slowest of its repeats) and prediction <= 10 ms per
  region (p90 over programs and repeats), every cost figure present.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _learn_cost
from _goals import Goals
from intercore.base.errors import HostUnsupported, InputError
from intercore.learn import dataset, evaluate, learners, reference

# Issue 10's three baselines, the analytical one from the trace, and `constant` (the training
# median for every region): what any model must beat to have learnt anything.
BASELINES = ("linear-l2", "forest", "quantile", "analytic", "constant")
GOAL_ACC = 0.90
GOAL_TRAIN_CPU_S = 600.0
GOAL_PREDICT_MS = 10.0
# What issue 10 asks of the reference dataset: below this the figures are not the benchmark's.
MIN_PROGRAMS = 300
MIN_LABELLED = 1000


HEADS = {"rho_within": "ρ within", "rho_across": "ρ across", "top1": "top-1",
         "top3": "top-3", "acc@10": "acc@10", "mape": "MAPE", "exceedance": "exceeded"}
PERCENT = ("top1", "top3", "acc@10", "mape", "exceedance")


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def _num(x: float | None, percent: bool = False) -> str:
    if x is None:
        return "MISSING"
    return f"{100 * x:.1f}" if percent else f"{x:.2f}"


def _with_ci(s: dict, m: str) -> str:
    """`value [lo, hi]`, percentages for shares."""
    ci = s["ci"][m] or (None, None)
    pct = m in PERCENT
    return f"{_num(s[m], pct)} [{_num(ci[0], pct)}, {_num(ci[1], pct)}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, help="dataset directory (default: the reference)")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--budget", type=float, default=GOAL_TRAIN_CPU_S,
                    help="CPU seconds per training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ablation", action="store_true",
                    help="also the transformer's variants (four more trainings per fold)")
    ap.add_argument("--cost-learners", default=evaluate.DEFAULT_LEARNER,
                    help="comma-separated learners whose training and prediction cost is "
                         "measured (default: the default model's)")
    ap.add_argument("--cost-only", action="store_true",
                    help="measure the cost, skip the held-out evaluation")
    args = ap.parse_args()
    cost_learners = [x.strip() for x in args.cost_learners.split(",") if x.strip()]
    unknown = [x for x in cost_learners if x not in learners.SAVEABLE]
    if unknown or not cost_learners:
        ap.error(f"--cost-learners: {unknown or 'none given'}; known: "
                 f"{', '.join(learners.SAVEABLE)}")
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
    for learner in cost_learners:
        _cost(goals, ds, learner, args.budget, args.seed)
    if args.cost_only:
        return goals.finish()
    report = evaluate.crossval(ds, learners=("transformer", *BASELINES), folds=args.folds,
                               alpha=args.alpha, seed=args.seed, budget_cpu_s=args.budget,
                               variants=evaluate.ABLATION if args.ablation else None,
                               progress=lambda text: print(f"  {text}", file=sys.stderr))
    print(f"\nheld-out families, {args.folds} folds: {report.folds}; safe bound at "
          f"{100 * (1 - args.alpha):.0f}%; [95% bootstrap interval over programs]")
    print(f"{'model':30} {'n':>5} " + " ".join(f"{h:>20}" for h in HEADS.values())
          + f" {'acc@10 by fold':>20} {'CPU s':>6} {'ms/reg':>7}")
    for name, s in report.learners.items():
        print(f"{name:30} {s['n']:>5} " + " ".join(f"{_with_ci(s, m):>20}" for m in HEADS)
              + f" {' '.join(_pct(a) for a in s['acc@10_by_fold']):>20} "
              f"{s['train_cpu_s_max']:6.0f} {s['predict_ms_per_region_max']:7.2f}")
        print(f"{'':30} programs with a ρ: {s['rho_within_programs']}, with a top-1: "
              f"{s['top1_programs']}, a top-3: {s['top3_programs']}; calibration "
              f"{s['calibration_cpu_s_max']:.0f} CPU s")
    t = report.learners.get("transformer")
    missing = [b for b in BASELINES if b not in report.learners]
    if t is None or missing:
        goals.check("learn_figures", None, "==", 1, f"no figures from {missing or 'transformer'}")
        return goals.finish()
    for name, s in report.learners.items():
        goals.check(f"learn_figures_with_intervals ({name})",
                    sum(s[m] is not None and s["ci"][m] is not None for m in HEADS), "==",
                    len(HEADS))
        goals.check(f"learn_exceedance ({name})", s["exceedance"], "<=", args.alpha)
    cmp = report.comparison("transformer")
    for m, d in cmp["metrics"].items():
        lo, hi = d["ci"] or (None, None)
        shown = "-" if d["difference"] is None else f"{d['difference']:+.3f}"
        print(f"transformer - {d['against']} on {HEADS[m]}: {shown} [{_num(lo)}, {_num(hi)}]")
        goals.check(f"learn_{m}_over_best ({d['against']}), CI low", lo, ">", 0.0)
    print(f"held-out winner (median ρ, then top-3): {cmp['winner']}"
          + ("" if cmp["wins"] else " (the transformer does not win with the interval above 0)"))
    goals.check("learn_acc10", t["acc@10"], ">=", GOAL_ACC)
    goals.check("learn_train_cpu_s", t["train_cpu_s_max"], "<=", GOAL_TRAIN_CPU_S)
    goals.check("learn_predict_ms_per_region", t["predict_ms_per_region_max"], "<=",
                GOAL_PREDICT_MS)
    return goals.finish()


COST_FIGURES = ("train_cpu_s", "predict_ms_per_region", "startup_s", "import_s", "load_s",
                "first_predict_s")


def _cost(goals: Goals, ds, learner: str, budget: float, seed: int) -> None:
    c = _learn_cost.measure(ds, learner, train_reps=3, startup_reps=5, programs=40, reps=5,
                            budget_cpu_s=budget, seed=seed)

    def shown(key: str, unit: str) -> str:
        s = c.get(key) or _learn_cost.spread([])
        if s["median"] is None:
            return f"MISSING (n {s['n']})"
        p90 = "-" if s["p90"] is None else f"{s['p90']:.3g}"
        return (f"median {s['median']:.3g} {unit}, p90 {p90}, range [{s['min']:.3g}, "
                f"{s['max']:.3g}], n {s['n']}")

    print(f"cost of {learner} on this host (bench/_learn_cost.py):")
    print(f"  training on {len(ds.examples())} regions (fit + calibration, CPU): "
          + shown("train_cpu_s", "s"))
    print("  prediction per region, warm (one program a call): "
          + shown("predict_ms_per_region", "ms"))
    print("  start-up of a fresh process, once per `learn predict`: " + shown("startup_s", "s"))
    for key, what in (("import_s", "import"), ("load_s", "model load"),
                      ("first_predict_s", "first prediction")):
        print(f"    of it, {what}: " + shown(key, "s"))
    goals.check(f"learn_cost_figures ({learner})",
                sum((c.get(k) or {}).get("median") is not None for k in COST_FIGURES), "==",
                len(COST_FIGURES))
    goals.check(f"learn_train_cpu_s_whole_dataset ({learner}), slowest",
                c["train_cpu_s"]["max"], "<=", GOAL_TRAIN_CPU_S)
    goals.check(f"learn_predict_ms_per_region ({learner}), p90",
                (c.get("predict_ms_per_region") or {}).get("p90"), "<=", GOAL_PREDICT_MS)


def _refuse(goals: Goals, reason: str) -> int:
    goals.refuse("learn_acc10", ">=", GOAL_ACC, reason)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
