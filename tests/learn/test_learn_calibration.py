"""Split-conformal calibration reaches its coverage on exchangeable held-out data."""

from __future__ import annotations

import numpy as np
import pytest

from intercore.learn.calibrate import calibrate


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
