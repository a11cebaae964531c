"""The analytical baseline, and the unseen-family calibration every learner gets in `fit`."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from intercore.base.errors import InputError
from intercore.learn import saved
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


@pytest.mark.parametrize("name", ["linear-l2", "analytic", "constant"])
def test_a_baseline_saves_loads_and_lays_its_slowdown_on_l2_traffic(tmp_path, name):
    data = examples(20, seed=6)
    fitted = fit(name, split_programs(data, 0), HIER, alpha=0.1, seed=0, budget_cpu_s=1)
    m = saved.from_fitted(fitted, HIER, {"dataset_hash": "x"})
    m.save(tmp_path / "m")
    back = saved.load(tmp_path / "m")
    regions = [e.region for e in data]
    (med, safe, _), (med2, safe2, weights2) = m.predict(regions), back.predict(regions)
    assert np.allclose(med, med2) and np.allclose(safe, safe2)
    assert back.describe()["learner"] == name and back.calibration == fitted.calibration
    for r, w in zip(regions, weights2):
        assert list(w) == [0.0] + [float(sum(t.served[1:])) for t in r.tokens]


def test_the_forest_is_not_saved(tmp_path):
    data = examples(12, seed=7)
    fitted = fit("forest", split_programs(data, 0), HIER, alpha=0.1, seed=0, budget_cpu_s=1,
                 inner_folds=0)
    with pytest.raises(TypeError, match="pickles"):
        saved.from_fitted(fitted, HIER, {}).save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_model_of_an_unknown_learner_is_refused(tmp_path):
    data = examples(12, seed=8)
    fitted = fit("constant", split_programs(data, 0), HIER, alpha=0.1, seed=0, budget_cpu_s=1)
    saved.from_fitted(fitted, HIER, {}).save(tmp_path / "m")
    meta = tmp_path / "m" / "model.json"
    meta.write_text(meta.read_text().replace('"learner": "constant"', '"learner": "svm"'))
    with pytest.raises(InputError) as err:
        saved.load(tmp_path / "m")
    assert err.value.field == "learner" and err.value.source == str(meta)
