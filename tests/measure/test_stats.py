import json
import math

import numpy as np
import pytest

from intercore.measure.harness import stats


def test_percentile_interpolates_linearly():
    values = [10, 20, 30, 40]
    assert stats.percentile(values, 0) == 10
    assert stats.percentile(values, 100) == 40
    assert stats.percentile(values, 50) == 25
    # rank = 0.9 * 3 = 2.7 -> 30 + 0.7 * 10
    assert stats.percentile(values, 90) == pytest.approx(37.0)
    assert stats.percentile([5, 1, 3], 50) == 3


@pytest.mark.parametrize("q", [-1, 100.5])
def test_percentile_rejects_q_out_of_range(q):
    with pytest.raises(ValueError):
        stats.percentile([1, 2], q)


def test_empty_and_non_finite_input_rejected():
    with pytest.raises(ValueError, match="empty"):
        stats.summarize([])
    with pytest.raises(ValueError, match="NaN"):
        stats.summarize([1.0, float("nan")])


@pytest.mark.parametrize("q,n", [(90, 10), (99, 100), (99.9, 1000), (0, 1), (50, 2)])
def test_min_n_for_tail_percentiles(q, n):
    assert stats.min_n_for(q) == n


def test_summarize_hand_computed():
    s = stats.summarize([1, 2, 3, 4, 10])
    assert (s.n, s.min, s.median, s.mean, s.max) == (5, 1, 3, 4, 10)
    # deviations -3 -2 -1 0 6 -> squares 50 -> /4
    assert s.std == pytest.approx(math.sqrt(12.5))
    assert s.cv == pytest.approx(math.sqrt(12.5) / 4)
    # a tail percentile from 5 samples would be an interpolation towards the max
    assert (s.p90, s.p99, s.p999) == (None, None, None)


def test_summarize_reports_tails_exactly_at_their_minimum_n():
    ten = stats.summarize(np.arange(1, 11))
    assert ten.p90 == pytest.approx(9.1)  # rank 0.9 * 9 = 8.1
    assert ten.p99 is None
    hundred = stats.summarize(np.arange(100))
    assert hundred.p99 == pytest.approx(98.01)
    assert hundred.p999 is None
    thousand = stats.summarize(np.arange(1000))
    assert thousand.p999 == pytest.approx(998.001)
    assert stats.summarize(np.arange(999)).p999 is None


def test_summarize_single_value_has_no_spread():
    s = stats.summarize([7.0])
    assert s.std is None and s.cv is None
    assert s.min == s.median == s.max == 7.0


def test_summary_to_dict_keys():
    d = stats.summarize([1, 2]).to_dict()
    assert list(d) == ["n", "min", "median", "mean", "std", "cv", "p90", "p99", "p999", "max"]


def test_paired_ratios_and_delta():
    iso = [10, 20, 40]
    intf = [15, 20, 60]
    assert stats.paired_ratios(iso, intf).tolist() == [1.5, 1.0, 1.5]
    assert stats.delta(iso, intf) == 20 / 20
    assert stats.delta([1, 2, 3], [2, 4, 9]) == 2.0


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_ratios([1, 2], [1])
    with pytest.raises(ValueError, match="differ in length"):
        stats.delta([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="differ in length"):
        stats.bootstrap_delta_ci([1, 2], [1])
    with pytest.raises(ValueError, match="differ in length"):
        stats.compare([1, 2], [1])


def test_non_positive_iso_rejected():
    with pytest.raises(ValueError, match="positive"):
        stats.paired_ratios([0, 1], [1, 1])


def _noisy_pairs(n, seed=1, slowdown=1.2):
    rng = np.random.default_rng(seed)
    iso = rng.normal(1000, 50, n)
    intf = iso * slowdown + rng.normal(0, 50, n)
    return iso, intf


def test_bootstrap_ci_contains_delta_and_shrinks_with_n():
    widths = []
    for n in (20, 200, 2000):
        iso, intf = _noisy_pairs(n)
        lo, hi = stats.bootstrap_delta_ci(iso, intf)
        assert lo <= stats.delta(iso, intf) <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < widths[0] / 4


def test_bootstrap_ci_reproducible_for_a_seed():
    iso, intf = _noisy_pairs(50)
    ci = stats.bootstrap_delta_ci(iso, intf, seed=3)
    assert stats.bootstrap_delta_ci(iso, intf, seed=3) == ci
    assert stats.bootstrap_delta_ci(iso, intf, seed=4) != ci


def test_bootstrap_ci_widens_with_confidence():
    iso, intf = _noisy_pairs(100)
    lo90, hi90 = stats.bootstrap_delta_ci(iso, intf, confidence=0.90)
    lo99, hi99 = stats.bootstrap_delta_ci(iso, intf, confidence=0.99)
    assert lo99 <= lo90 and hi90 <= hi99 and (hi99 - lo99) > (hi90 - lo90)


def test_bootstrap_ci_with_one_pair_is_undefined():
    lo, hi = stats.bootstrap_delta_ci([1.0], [2.0])
    assert math.isnan(lo) and math.isnan(hi)
    assert stats.compare([1.0], [2.0]).to_dict()["delta_ci"] == [None, None]


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0}, {"n_boot": 0}])
def test_bootstrap_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        stats.bootstrap_delta_ci([1, 2], [1, 2], **kwargs)


def _unpaired_bootstrap_width(iso, intf, n_boot=2000, seed=0):
    rng = np.random.default_rng(seed)
    n = len(iso)
    d = (np.median(intf[rng.integers(0, n, (n_boot, n))], axis=1)
         / np.median(iso[rng.integers(0, n, (n_boot, n))], axis=1))
    lo, hi = np.percentile(d, [2.5, 97.5])
    return hi - lo


def test_pairing_matters():
    # Each pair shares a large common drift (e.g. the CPU frequency at the time); the
    # interference effect within a pair is a steady 1.3x. Resampling pairs jointly cancels the
    # drift; resampling each condition independently does not.
    rng = np.random.default_rng(7)
    base = rng.uniform(500, 1500, 200)
    iso = base
    intf = base * 1.3 * rng.normal(1, 0.005, 200)
    lo, hi = stats.bootstrap_delta_ci(iso, intf)
    paired_width = hi - lo
    assert lo <= stats.delta(iso, intf) <= hi
    assert paired_width * 5 < _unpaired_bootstrap_width(iso, intf)

    # Breaking the pairing (same marginals) must change the paired interval.
    shuffled = rng.permutation(intf)
    lo_s, hi_s = stats.bootstrap_delta_ci(iso, shuffled)
    assert (hi_s - lo_s) > paired_width * 5


def test_compare_to_dict_shape():
    iso = [100, 110, 120, 130]
    intf = [150, 132, 180, 130]
    result = stats.compare(iso, intf)
    d = result.to_dict()
    assert list(d) == ["n", "delta", "delta_ci", "paired_median", "paired_max", "iso", "int"]
    assert d["n"] == 4
    assert d["delta"] == pytest.approx(141 / 115)
    # ratios 1.5, 1.2, 1.5, 1.0
    assert d["paired_median"] == pytest.approx(1.35)
    assert d["paired_max"] == pytest.approx(1.5)
    assert d["iso"]["median"] == 115 and d["int"]["max"] == 180
    assert len(d["delta_ci"]) == 2
    json.dumps(d, allow_nan=False)
    assert result.int.median == 141
