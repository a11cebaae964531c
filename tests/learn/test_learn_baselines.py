"""The analytical baseline, and the unseen-family calibration every learner gets in `fit`."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from intercore.learn.dataset import Example, Label
from intercore.learn.evaluate import Split, fit, split_programs
from intercore.learn.features import RegionFeatures, beyond_private
from intercore.learn.learners import Analytic

from _synthetic import HIER, examples, region


def _with_reuse(buckets: dict[int, int], insns: int) -> RegionFeatures:
    reuse = [0] * 27
    for b, n in buckets.items():
        reuse[b] = n
    accesses = sum(reuse)
    return RegionFeatures(1, "r", 1, insns, accesses, 0, 8 * accesses, 10,
                          (accesses, 0, 0, 0), tuple(reuse), ())


def test_beyond_private_by_hand():
    # 48 KiB L1d = 768 lines (bucket 9 and below), 1 MiB L2 = 2^14 lines (buckets 10-14),
    # 32 MiB L3 (15-19), beyond (20-25), first touch (26). The private caches are L1d and
    # L2: 10 + 5 + 5 of 100 accesses leave them, over 400 instructions.
    r = _with_reuse({5: 60, 12: 20, 17: 10, 22: 5, 26: 5}, insns=400)
    assert beyond_private(r, HIER) == pytest.approx(20 / 400)
    assert beyond_private(_with_reuse({5: 50, 14: 50}, 100), HIER) == 0.0


def _label(d: float) -> Label:
    return Label(30, d, (d * 0.98, d * 1.02), d * 1.05, 1e6, "shared", {"shared": 30})


def test_analytic_recovers_the_host_constant():
    rng = random.Random(0)
    data = []
    for p in range(30):
        r = region(rng, 1, rng.random())
        data.append(Example(f"p{p}", "a", "O2", r,
                            _label(math.exp(4.0 * beyond_private(r, HIER)))))
    model = Analytic(HIER)
    info = model.fit(data, [], seed=0, budget_cpu_s=1)
    assert info["c"] == pytest.approx(4.0)
    med, safe = model.predict([e.region for e in data])
    assert med == pytest.approx([e.label.delta for e in data])
    assert np.all(safe >= med)


def _family(name: str, delta: float, programs: int = 6) -> list[Example]:
    rng = random.Random(name)
    return [Example(f"{name}-{p}", name, "O2", region(rng, r, 0.1), _label(delta))
            for p in range(programs) for r in (1, 2)]


def test_the_unseen_bound_comes_from_a_family_no_model_saw():
    """Family a slows down 2x, b and c not at all. A constant model fitted without a
    predicts b and c's upper quantile (1.05) for it: a's score is log(2.1 / 1.05) = log 2,
    the hardest family's, so the bound for a new family is twice the raw prediction. A
    model that had seen a while scoring it would have scored less."""
    data = _family("a", 2.0) + _family("b", 1.0) + _family("c", 1.0)
    fitted = fit("constant", split_programs(data, 0), HIER, alpha=0.05, seed=0,
                 budget_cpu_s=1)
    cal = fitted.calibration
    assert cal.basis == "families"
    assert cal.offset == pytest.approx(math.log(2.0))
    assert set(cal.families) == {"a", "b", "c"}  # each from its own calibration programs
    assert fitted.info["calibration_cpu_s"] >= 0


def test_one_family_is_calibrated_on_its_programs():
    data = _family("a", 1.5, programs=10)
    fitted = fit("analytic", split_programs(data, 0), HIER, alpha=0.05, seed=0,
                 budget_cpu_s=1)
    assert fitted.calibration.basis == "programs" and not fitted.calibration.families


def test_inner_folds_zero_keeps_the_within_family_bound():
    data = examples(30, seed=4)
    split = split_programs(data, 0)
    assert isinstance(split, Split)
    fitted = fit("analytic", split, HIER, alpha=0.1, seed=0, budget_cpu_s=1, inner_folds=0)
    assert fitted.calibration.basis == "programs"
