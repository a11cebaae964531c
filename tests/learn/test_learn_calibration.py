"""Split-conformal calibration reaches its coverage on exchangeable held-out data."""

from __future__ import annotations

import numpy as np
import pytest

from intercore.learn.calibrate import Calibration, calibrate, calibrate_families


def test_coverage_on_held_out_data():
    rng = np.random.default_rng(0)
    alpha = 0.1
    covered = []
    for _ in range(40):
        truth = np.exp(rng.normal(0.3, 0.4, 1200))
        q = truth * np.exp(rng.normal(-0.1, 0.3, 1200))  # a biased, noisy raw quantile
        cal = calibrate(q[:200], truth[:200], alpha)
        covered.append(np.mean(cal.apply(q[200:]) >= truth[200:]))
    # Marginal coverage >= 1 - alpha; averaged over trials it sits just above.
    assert np.mean(covered) >= 1 - alpha - 0.01
    assert cal.confidence == pytest.approx(0.9)


def test_too_few_calibration_points_state_what_they_can():
    cal = calibrate(np.ones(5), np.array([1.0, 1.1, 1.2, 1.3, 1.4]), 0.05)
    assert cal.confidence == pytest.approx(5 / 6)
    assert np.exp(cal.offset) == pytest.approx(1.4)  # the largest shortfall


def test_the_safe_prediction_never_goes_below_one():
    cal = calibrate(np.full(50, 2.0), np.full(50, 1.0), 0.1)
    assert cal.apply(np.array([0.5, 2.0])).min() >= 1.0


def _family_scores(rng, families: range, bias: np.ndarray, per_family: int = 40):
    """Scores of a model on families it never saw: a family-wide shortfall (how much
    harder that family is for the model) plus each region's own."""
    return {f"f{i}": bias[i] + rng.normal(0, 0.05, per_family) for i in families}


def test_the_family_bound_holds_on_families_it_never_saw():
    """Synthetic families whose difficulty differs: calibrated on six, the bound is exceeded
    on at most α of the regions of three new ones, averaged over 1000 draws; calibrating on
    regions of the training families (the within-family bound), or pooling the six families'
    regions, is exceeded on twice that or more, which is why the bound is per family."""
    rng = np.random.default_rng(0)
    alpha = 0.05
    rates = []
    for _ in range(1000):
        bias = rng.normal(0, 0.1, 9)
        seen = _family_scores(rng, range(6), bias)
        new = np.concatenate(list(_family_scores(rng, range(6, 9), bias).values()))
        q = np.full(len(new), 1.5)
        truth = q * np.exp(new)  # the measured safe slowdown the scores imply
        bounds = {
            "families": calibrate_families(seen, {}, alpha),
            "within": calibrate(np.ones(200), np.exp(rng.normal(0, 0.05, 200)), alpha),
            "pooled": calibrate(np.ones(240), np.exp(np.concatenate(list(seen.values()))),
                                alpha)}
        rates.append([np.mean(c.apply(q) < truth) for c in bounds.values()])
    families, within, pooled = np.mean(rates, axis=0)
    assert families <= alpha
    assert within > 2 * alpha and pooled > 1.5 * alpha


def test_seen_families_keep_their_own_offset():
    unseen = {"a": np.array([0.1, 0.2, 0.3]), "b": np.array([0.5, 0.6, 0.7])}
    cal = calibrate_families(unseen, {"a": np.array([0.05, 0.01])}, 0.05)
    # too few regions per family for 95 %: each family's offset is its largest score, the
    # unseen one the hardest family's, and the stated confidence says so (3 of 4)
    assert cal.offset == pytest.approx(0.7) and cal.confidence == pytest.approx(0.75)
    assert cal.basis == "families" and cal.n == 6
    assert cal.offset_for("a") == pytest.approx(0.05)
    assert cal.offset_for("zzz") == cal.offset_for(None) == pytest.approx(0.7)
    assert cal.apply(np.array([2.0]), "a")[0] == pytest.approx(2.0 * np.exp(0.05))
    assert Calibration.from_dict(cal.to_dict()) == cal


def test_a_model_saved_before_family_calibration_still_loads():
    old = {"alpha": 0.05, "offset": 0.2, "n": 30, "confidence": 0.95}
    cal = Calibration.from_dict(old)
    assert cal.basis == "programs" and cal.offset_for("a") == pytest.approx(0.2)


def test_no_family_no_bound():
    with pytest.raises(ValueError):
        calibrate_families({}, {}, 0.05)
