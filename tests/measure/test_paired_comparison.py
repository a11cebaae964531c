from dataclasses import replace

import pytest

from intercore.base.errors import InputError
from intercore.measure.harness import stats
from intercore.measure.harness.comparison import comparisons


def _load(store, inv_id):
    return store.samples_for(inv_id), {w.id: w.name for w in store.workloads_for(inv_id)}


def test_comparisons_per_victim_set_and_region(store, host_id, make_run):
    inv = store.record(*make_run(host_id, victims=("matmul", "qsort"),
                                 sets=("BwWrite(LLC)", "PLL(DRAM)"), n=4,
                                 regions=((0, "total"), (1, "kernel"))))
    got = comparisons(*_load(store, inv))
    keys = [(c.victim, c.aggressor_set, c.region, c.region_name) for c in got]
    assert keys == [(v, s, r, name) for v in ("matmul", "qsort")
                    for s in ("BwWrite(LLC)", "PLL(DRAM)") for r, name in ((0, "total"),
                                                                           (1, "kernel"))]
    first = got[0]
    iso = [1000, 1010, 1020, 1030]
    intf = [int(x * 1.5) for x in iso]
    assert first.wall == stats.compare(iso, intf)
    assert first.wall.n == 4 and first.wall.delta == pytest.approx(1.5, rel=1e-3)
    assert first.wall.iso.median == 1015.0 and first.wall.int.median == 1522.5
    # the headline result compares thread CPU time, not wall time
    assert first.result.iso.median == 1010.0 and first.result.int.median == 1517.5
    assert first.cpus == {"iso": (1,), "int": (1,)} and first.unpaired == 0
    # nivcsw is 0 in isolation and set index + pair % 2 under interference
    assert first.max_nivcsw == {"iso": 0, "int": 1}
    assert got[2].max_nivcsw == {"iso": 0, "int": 2}
    d = first.to_dict()
    assert d["victim"] == "matmul" and d["delta_ci"][0] <= d["delta"] <= d["delta_ci"][1]


def test_int_samples_without_iso_partner_are_counted_not_compared(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id, n=5)
    samples = [s for s in samples if not (s.condition == "iso" and s.pair in (1, 3))]
    samples[1] = replace(samples[1], cpu=0)
    inv_id = store.record(inv, workloads, samples)
    [c] = comparisons(*_load(store, inv_id))
    assert c.result.n == 3 and c.unpaired == 2
    assert c.wall.iso.median == 1020 and c.cpus == {"iso": (1,), "int": (0, 1)}


def test_group_without_any_pair_yields_no_comparison(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id, n=2)
    inv_id = store.record(inv, workloads, [s for s in samples if s.condition == "int"])
    assert comparisons(*_load(store, inv_id)) == []


def test_duplicate_sample_in_a_pair_is_an_error(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id, n=2)
    inv_id = store.record(inv, workloads, samples + [samples[1]])
    with pytest.raises(InputError, match="two int samples .* pair 0"):
        comparisons(*_load(store, inv_id))


# ---- regimes, the wall clock and Δ below 1 -------------------------------------------------

from intercore.base.sample import Sample  # noqa: E402


def _pairs(ratios_by_regime: dict[str, list[float]], *, clock="cpu", iso_nivcsw=0,
           descheduled=()) -> list[Sample]:
    out, pair = [], 0
    for regime, ratios in ratios_by_regime.items():
        for r in ratios:
            iso = 1_000_000 + 1000 * pair
            for rep, (cond, t, sw) in enumerate((("iso", iso, iso_nivcsw),
                                                 ("int", int(iso * r), 0))):
                out.append(Sample(0, 2 * pair + rep, pair, cond, "A" if cond == "int" else "", 0,
                                  "total", t, t, sw, 1, regime=regime, clock=clock,
                                  block=pair, descheduled=(2 * pair + rep) in descheduled))
            pair += 1
    return out


def test_results_are_stratified_by_regime_and_can_be_restricted_to_one():
    samples = _pairs({"shared": [5.0, 5.5, 6.0, 6.5], "not-shared": [1.0, 1.01, 0.99],
                      "unknown": [2.0]})
    [c] = comparisons(samples)
    assert c.result.n == 8 and c.regime is None
    assert {k: v.n for k, v in c.by_regime.items()} == {"shared": 4, "not-shared": 3,
                                                        "unknown": 1}
    assert c.by_regime["shared"].delta == pytest.approx(5.75, rel=1e-3)
    assert c.by_regime["not-shared"].delta == pytest.approx(1.0, abs=0.01)
    d = c.to_dict()
    assert set(d["by_regime"]["shared"]) == {"n", "delta", "delta_ci", "paired_median",
                                             "paired_max"}
    assert d["by_regime"]["unknown"]["delta_ci"] == [None, None]  # one pair: no interval
    [shared] = comparisons(samples, regime="shared")
    assert shared.result.n == 4 and shared.result.delta == pytest.approx(5.75, rel=1e-3)
    assert shared.to_dict()["regime"] == "shared"
    assert comparisons(_pairs({"not-shared": [1.0, 1.1]}), regime="shared") == []


def test_ci_below_one_is_flagged_with_its_likely_cause():
    faster = [0.80, 0.82, 0.85, 0.81, 0.83, 0.84]
    [c] = comparisons(_pairs({"shared": faster}, iso_nivcsw=3))
    assert c.result.delta_ci[1] < 1
    assert "CI below 1" in c.flag and "preempted" in c.flag and "isolated half" in c.flag
    assert c.to_dict()["flag"] == c.flag
    [mixed] = comparisons(_pairs({"shared": faster[:3], "not-shared": faster[3:]}))
    assert "--regime" in mixed.flag
    [fine] = comparisons(_pairs({"shared": [1.2, 1.3, 1.25]}))
    assert fine.flag is None and fine.to_dict()["flag"] is None


def test_wall_clock_pairs_with_a_descheduled_half_are_discarded():
    samples = _pairs({"shared": [2.0, 2.1, 9.0, 2.2]}, clock="wall", descheduled={5})
    [c] = comparisons(samples)
    assert c.discarded == 1 and c.result.n == 3 and c.result.paired_max < 3
    assert c.clock == "wall" and "wall clock" in c.to_dict()["metric"]
