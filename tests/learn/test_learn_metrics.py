"""The held-out metrics, on cases small enough to compute by hand (docs/learn.md, Metrics)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from intercore.learn.evaluate import Report
from intercore.learn.metrics import (Scored, intervals, paired_difference, score, spearman,
                                     top_k_recall)


def test_spearman_orders_and_ties():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([3, 2, 1], [10, 20, 30]) == pytest.approx(-1.0)
    # Average ranks: Δ̂ ranks (1, 2.5, 2.5), Δ ranks (1, 2, 3); centred (-1, .5, .5) and
    # (-1, 0, 1): covariance 1.5, variances 1.5 and 2, so ρ = 1.5 / √3.
    assert spearman([1, 2, 2], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3))


def test_spearman_undefined_only_where_the_truth_has_no_order():
    assert spearman([1.3], [1.1]) is None           # one region
    assert spearman([1, 2, 3], [1.1, 1.1, 1.1]) is None  # nothing to recover
    assert spearman([1.0, 1.0, 1.0], [1, 2, 3]) == 0.0   # a constant claims no order


def test_top_k_recall_by_hand():
    pred, true = [3, 2, 1, 0], [0.9, 1.5, 1.2, 1.0]
    assert top_k_recall(pred, true, 1) == 0.0  # predicted first is the least sensitive
    # predicted top 3: regions 0, 1, 2; measured top 3: 1, 2, 3 -> 2 of 3
    assert top_k_recall(pred, true, 3) == pytest.approx(2 / 3)
    assert top_k_recall([0, 3, 2, 1], true, 3) == 1.0


def test_top_k_ties_in_the_prediction_count_against_it():
    assert top_k_recall([1, 1, 1], [1, 2, 3], 1) == 0.0
    assert top_k_recall([1, 1, 1, 1], [1, 2, 3, 4], 3) == pytest.approx(2 / 3)


def test_top_k_ties_in_the_truth_all_count_as_most_sensitive():
    true = [2, 2, 1]
    assert top_k_recall([2, 1, 0], true, 1) == 1.0
    assert top_k_recall([1, 2, 0], true, 1) == 1.0
    assert top_k_recall([0, 1, 2], true, 1) == 0.0


def test_top_k_undefined_where_any_choice_is_right():
    assert top_k_recall([1.0], [1.2], 1) is None
    assert top_k_recall([1, 2, 3], [1, 2, 3], 3) is None  # k regions: all of them
    assert top_k_recall([1, 2, 3, 4], [1.1] * 4, 1) is None


def test_score_pools_programs_by_hand():
    # Program a: 3 regions, predicted in order; b: 1 region (no ρ, no top-k); c: 3 regions
    # predicted in reverse.
    true = np.array([1.0, 1.2, 1.5, 1.1, 1.0, 1.2, 1.5])
    med = np.array([1.0, 1.1, 1.3, 1.5, 1.5, 1.2, 1.0])
    safe_true = true * 1.1
    safe = np.array([2.0, 2.0, 2.0, 1.0, 2.0, 2.0, 1.2])  # regions 3 and 6 exceeded
    progs = ["a", "a", "a", "b", "c", "c", "c"]
    s = score(med, safe, true, safe_true, progs, boot=50)
    assert s["n"] == 7 and s["programs"] == 3
    assert s["rho_within"] == pytest.approx(0.0)  # median of (1, -1)
    assert s["rho_within_programs"] == 2
    assert s["top1"] == pytest.approx(0.5) and s["top1_programs"] == 2
    assert s["top3"] is None and s["top3_programs"] == 0
    ape = np.abs(med - true) / true
    assert s["mape"] == pytest.approx(ape.mean())
    assert s["acc@10"] == pytest.approx(np.mean(ape <= 0.10))
    assert s["exceedance"] == pytest.approx(2 / 7) and s["exceeded"] == 2
    assert s["rho_across"] == pytest.approx(spearman(med, true))
    assert s["ci"]["top3"] is None  # no program has more than 3 regions


def test_median_over_programs():
    true = np.tile([1.0, 1.1, 1.2], 3)
    med = np.concatenate([[1, 2, 3], [3, 2, 1], [1, 3, 2]]).astype(float)
    s = Scored.of(med, med, true, true, ["a"] * 3 + ["b"] * 3 + ["c"] * 3)
    assert s.value("rho_within") == pytest.approx(0.5)  # median of (1, -1, 0.5)


def _two_programs(flip: bool):
    true = np.array([1.0, 1.2, 1.4, 1.0, 1.3, 1.6, 1.1, 1.2, 1.9])
    med = true[::-1].copy() if flip else true.copy()
    return Scored.of(med, med, true, true, ["a"] * 3 + ["b"] * 3 + ["c"] * 3)


def test_intervals_over_programs_hold_the_estimate():
    s = _two_programs(flip=False)
    ci = intervals(s, boot=200)
    assert ci["rho_within"] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert ci["exceedance"] == [0.0, 0.0]
    rng = np.random.default_rng(1)
    true = np.exp(rng.normal(0, 0.2, 120))
    med = true * np.exp(rng.normal(0, 0.1, 120))
    noisy = Scored.of(med, med, true, true, [f"p{i // 4}" for i in range(120)])
    lo, hi = intervals(noisy, boot=400)["mape"]
    assert lo < noisy.value("mape") < hi


def test_paired_difference():
    good, bad = _two_programs(False), _two_programs(True)
    d = paired_difference(good, bad, "top1", boot=200)
    assert d["difference"] == pytest.approx(1.0) and d["ci"] == [1.0, 1.0]
    same = paired_difference(good, good, "rho_across", boot=200)
    assert same["difference"] == 0.0 and same["ci"] == [0.0, 0.0]
    other = Scored.of([1, 2], [1, 2], [1, 2], [1, 2], ["x", "y"])
    with pytest.raises(ValueError):
        paired_difference(good, other, "top1")


def _report(**scored: Scored) -> Report:
    names = ("rho_within", "top3")
    return Report([], 0.05, learners={n: {m: s.value(m) for m in names}
                                      for n, s in scored.items()}, scored=scored)


def test_the_transformer_loses_unless_both_intervals_clear_zero():
    rng = np.random.default_rng(2)
    true = np.exp(rng.normal(0, 0.2, 200))
    progs = [f"p{i // 5}" for i in range(200)]
    truth_order = Scored.of(true, true, true, true, progs)
    noise = Scored.of(rng.permutation(true), true, true, true, progs)
    won = _report(transformer=truth_order, analytic=noise).comparison()
    assert won["wins"] and won["winner"] == "transformer"
    assert all(d["against"] == "analytic" and d["ci"][0] > 0 for d in won["metrics"].values())
    lost = _report(transformer=noise, analytic=truth_order).comparison()
    assert not lost["wins"] and lost["winner"] == "analytic"
