"""Campaign statistics against hand-computed values."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from intercore.campaign.stats import (RunSamples, SetupInfo, bootstrap_ci, campaign_stats,
                                      compare_campaigns, median_ci, miss_ratio, ratio_ci,
                                      setup_infos, verdict)
from intercore.base.sample import Sample
from intercore.measure.harness.stats import wilson_interval


def S(pair: int, condition: str, cpu_ns: int, region_name: str = "total", region: int = 0,
      aggressor_set: str = "", counters: dict | None = None) -> Sample:
    """A raw sample as the store gives it back (victim 7, wall time as long as CPU time)."""
    return Sample(victim=7, rep=pair, pair=pair, condition=condition,
                  aggressor_set=aggressor_set, region=region, region_name=region_name,
                  wall_ns=cpu_ns, cpu_ns=cpu_ns, nivcsw=0, cpu=1, counters=counters or {})


def solo_run(setup: str, round_: int, times: list[int]) -> RunSamples:
    return RunSamples(setup, round_, "qsort", [S(i, "iso", t) for i, t in enumerate(times)])


def paired_run(setup: str, round_: int, iso: list[int], intf: list[int],
               counters: dict | None = None) -> RunSamples:
    samples = []
    for i, (a, b) in enumerate(zip(iso, intf)):
        samples += [S(i, "iso", a), S(i, "int", b, aggressor_set="bw", counters=counters or {})]
    return RunSamples(setup, round_, "qsort", samples)


# --- Wilson interval: published values (Newcombe 1998, Table I) ----------------------------

@pytest.mark.parametrize("k, n, lo, hi", [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
])
def test_wilson_matches_published_intervals(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_wilson_zero_successes_is_z_squared_over_n_plus_z_squared():
    z2 = 1.959963984540054 ** 2
    assert wilson_interval(0, 100) == pytest.approx((0.0, z2 / (100 + z2)))


def test_wilson_narrows_with_n_and_rejects_bad_input():
    assert wilson_interval(10, 1000)[1] - wilson_interval(10, 1000)[0] < \
        wilson_interval(1, 100)[1] - wilson_interval(1, 100)[0]
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


# --- bootstrap ------------------------------------------------------------------------------

def test_bootstrap_of_a_constant_ratio_is_exact():
    assert ratio_ci([2.0] * 5, [1.0] * 5) == (2.0, 2.0)


def test_bootstrap_needs_two_values_per_group():
    assert all(math.isnan(x) for x in median_ci([3.0]))
    assert all(math.isnan(x) for x in ratio_ci([1.0, 2.0], [1.0]))


def test_median_ci_brackets_the_median_and_is_deterministic():
    values = [10.0, 11.0, 12.0, 13.0, 50.0, 9.0, 10.5]
    lo, hi = median_ci(values)
    assert lo <= 11.0 <= hi
    assert min(values) <= lo and hi <= max(values)
    assert median_ci(values) == (lo, hi)


def test_bootstrap_rejects_a_bad_confidence():
    with pytest.raises(ValueError):
        bootstrap_ci([[1.0, 2.0]], lambda m: m, confidence=1.0)


# --- deadline misses ------------------------------------------------------------------------

def test_miss_ratio_counts_strictly_late_jobs():
    got = miss_ratio([1.0, 2.0, 3.0, 4.0, 5.0], deadline_ns=3.0)
    assert (got.misses, got.n, got.ratio) == (2, 5, 0.4)  # 3.0 meets its deadline
    assert got.ci == wilson_interval(2, 5)


# --- per setup and task ---------------------------------------------------------------------

def test_slowdown_against_solo_pools_rounds():
    solo = [solo_run("solo", 1, [100, 110, 120]), solo_run("solo", 2, [90, 100, 130])]
    # median(solo) over both rounds = median(90, 100, 100, 110, 120, 130) = 105
    interf = [paired_run("interf", 1, [100, 100, 100], [200, 210, 220]),
              paired_run("interf", 2, [100, 100, 100], [190, 200, 230])]
    # median(int) = median(190, 200, 200, 210, 220, 230) = 205
    stats = campaign_stats([SetupInfo("solo", None), SetupInfo("interf", "solo")],
                           solo + interf)
    by = {t.setup: t for t in stats}
    assert by["solo"].condition == "iso" and by["interf"].condition == "int"
    assert by["solo"].summary.n == 6 and by["solo"].summary.median == 105
    assert by["solo"].slowdown is None and by["solo"].paired is None
    assert by["solo"].runs == 2
    t = by["interf"]
    assert t.summary.n == 6 and t.summary.median == 205
    assert t.slowdown.value == pytest.approx(205 / 105)
    assert t.slowdown.max_ratio == pytest.approx(230 / 130)
    lo, hi = t.slowdown.ci
    assert lo <= t.slowdown.value <= hi
    # The paired Δ uses the setup's own pairs, all six of them across both rounds.
    assert t.paired.n == 6
    assert t.paired.delta == pytest.approx(205 / 100)
    assert t.summary.p90 is None  # n = 6 < 10: "insufficient n"


def test_regions_are_tasks_of_their_own_total_first():
    run = RunSamples("solo", 1, "qsort", [S(0, "iso", 10, "sort", 1), S(0, "iso", 12),
                                          S(1, "iso", 11, "sort", 1), S(1, "iso", 13)])
    stats = campaign_stats([SetupInfo("solo", None)], [run])
    assert [(t.region, t.summary.median) for t in stats] == [("total", 12.5), ("sort", 10.5)]


def test_counters_are_medians_of_the_measured_samples():
    run = paired_run("interf", 1, [10, 10, 10], [20, 20, 20], counters={"aggressor_bytes": 8})
    (t,) = campaign_stats([SetupInfo("interf", None)], [run])
    assert t.counters == {"aggressor_bytes": 8.0}
    assert t.slowdown is None  # no baseline named


def test_deadline_misses_for_a_periodic_task():
    run = solo_run("solo", 1, [5, 6, 7, 12, 13])
    (t,) = campaign_stats([SetupInfo("solo", None, deadline_ns=10)], [run])
    assert (t.misses.misses, t.misses.n) == (2, 5)
    assert t.to_dict()["deadline"]["ci"] == list(wilson_interval(2, 5))


def test_setups_without_samples_are_left_out_and_order_follows_the_plan():
    runs = [solo_run("b", 1, [1, 2]), solo_run("a", 1, [3, 4])]
    infos = setup_infos({"setups": [{"name": "a"}, {"name": "missing"}, {"name": "b"}]})
    assert [t.setup for t in campaign_stats(infos, runs)] == ["a", "b"]


def test_to_dict_has_no_nan():
    (t,) = campaign_stats([SetupInfo("solo", None)], [solo_run("solo", 1, [7])])
    d = t.to_dict()
    assert d["median_ci"] == [None, None] and d["n"] == 1 and d["std"] is None


# --- comparing campaigns --------------------------------------------------------------------

def test_compare_finds_a_slower_candidate():
    a = {"solo": [solo_run("solo", 1, [100, 101, 99, 100])],
         "interf": [paired_run("interf", 1, [100] * 4, [150, 151, 149, 150])]}
    b = {"solo": [solo_run("solo", 1, [100, 101, 99, 100])],
         "interf": [paired_run("interf", 1, [100] * 4, [200, 201, 199, 200])]}
    got = {c.setup: c for c in compare_campaigns(a, b, {"solo": None, "interf": "solo"})}
    c = got["interf"]
    assert c.slowdown_a == pytest.approx(1.5) and c.slowdown_b == pytest.approx(2.0)
    assert c.difference == pytest.approx(0.5)
    assert c.difference_ci[0] > 0 and c.verdict == "B slower"
    # The solo setups are the same: their median ratio minus one is 0, not significant.
    assert got["solo"].difference == 0.0
    assert got["solo"].verdict == "no significant difference"


def test_compare_ignores_setups_only_one_side_ran():
    a = {"solo": [solo_run("solo", 1, [1, 2])], "x": [solo_run("x", 1, [1, 2])]}
    b = {"solo": [solo_run("solo", 1, [1, 2])]}
    assert [c.setup for c in compare_campaigns(a, b, {})] == ["solo"]


def test_verdict():
    assert verdict((math.nan, math.nan)) == "insufficient n"
    assert verdict((-0.2, -0.1)) == "B faster"
    assert verdict((0.1, 0.2)) == "B slower"
    assert verdict((-0.1, 0.2)) == "no significant difference"


def test_each_regime_gets_its_own_paired_delta_and_slowdown_against_the_same_regime():
    shared, alone = "shared", "not-shared"

    def tagged(run: RunSamples, regimes: list[str]) -> RunSamples:
        by_pair = dict(enumerate(regimes))
        return RunSamples(run.setup, run.round, run.victim,
                          [replace(s, regime=by_pair[s.pair]) for s in run.samples])

    solo = tagged(solo_run("solo", 1, [100, 100, 200, 200]), [shared, shared, alone, alone])
    interf = tagged(paired_run("interf", 1, [100, 100, 100, 100], [300, 300, 110, 110]),
                    [shared, shared, alone, alone])
    by = {t.setup: t for t in campaign_stats([SetupInfo("solo", None),
                                              SetupInfo("interf", "solo")], [solo, interf])}
    t = by["interf"]
    assert set(t.by_regime) == {shared, alone}
    assert t.by_regime[shared].n == 2 and t.by_regime[shared].paired.delta == 3.0
    assert t.by_regime[alone].paired.delta == pytest.approx(1.1)
    # Against the solo samples of the same regime: 300/100 and 110/200.
    assert t.by_regime[shared].slowdown.value == 3.0
    assert t.by_regime[alone].slowdown.value == pytest.approx(0.55)
    assert by["solo"].by_regime[shared].paired is None and by["solo"].by_regime[alone].n == 2
    assert t.to_dict()["by_regime"][shared]["paired"]["delta"] == 3.0
