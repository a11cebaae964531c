from dataclasses import replace

import pytest

from intercore.errors import InputError
from intercore.measure import stats
from intercore.measure.paired_comparison import comparisons


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
