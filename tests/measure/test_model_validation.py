"""Validation: mapping transactions to micro-benchmarks, choosing the pairs, the verdict rule,
and one real run on this host stored and read back as evidence."""

import math
import sqlite3
from datetime import datetime, timezone

import pytest
from host.fake_host import hybrid_x86_vm

from intercore.base.errors import InputError
from intercore.host.topology import read_topology
from intercore.measure import model_validation as validate
from intercore.measure.model_validation import (CONFIRMED, CONTRADICTED, FREE, INTERFERENCE,
                                                NOT_OBSERVED, decide)
from intercore.measure.harness.stats import compare
from intercore.model.calculus import analyze
from intercore.model.channels import build_table
from intercore.model.detect import build_model, detect, to_yaml
from intercore.measure.model_validation import stored_evidence
from intercore.model.loader import loads

from _procs import native_processes

MiB = 1 << 20


@pytest.fixture
def vm(tmp_path):
    """The development host's shape, from a fake sysfs tree: 2 vCPUs, 48K L1D, 2M L2, 260M L3."""
    hybrid_x86_vm(tmp_path)
    topo = read_topology(tmp_path)
    text = to_yaml(build_model(topo, now=datetime(2025, 1, 1, tzinfo=timezone.utc)))
    p = loads(text, "host.yaml")
    return topo, p, build_table(analyze(p, 2), p)


def test_each_transaction_gets_a_benchmark_sized_to_its_level(vm):
    topo, p, _ = vm
    found, why_not = validate.exercises(p, topo)
    l1, l2, llc, dram = (found[f"cpu1_{lv}_ld"] for lv in ("l1d", "l2", "l3", "dram"))
    assert [(e.level, e.footprint) for e in (l1, l2, llc, dram)] == \
        [("L1", 24 * 1024), ("L2", MiB), ("LLC", 8 * MiB), ("DRAM", 520 * MiB)]
    assert l1.victim == "ptrchase:size=24KiB,accesses=1M"
    assert l1.aggressor == "bw:op=read,size=24KiB"
    assert found["cpu0_l3_st"].victim == "stream:size=8MiB"
    assert found["cpu0_l3_st"].aggressor == "BwWrite(LLC)"
    assert found["cpu0_dram_ld"].aggressor == "BwRead(DRAM)"
    assert set(why_not) == {"external_l3_ld", "external_l3_st", "external_dram_ld",
                            "external_dram_st"}
    assert "no cpu: attribute" in why_not["external_l3_ld"]


def test_plan_runs_every_pair_victim_nearest_the_core_and_samples_negative_controls(vm):
    topo, p, table = vm
    found, why_not = validate.exercises(p, topo)
    trials, skipped = validate.plan(table, found, why_not, topo, free_sample=4, seed=3)
    itf = [t for t in trials if t.expected == INTERFERENCE]
    free = [t for t in trials if t.expected == FREE]
    assert len(itf) == 48 and len(free) == 4  # 8x8 cross-CPU pairs, 16 of them free
    order = validate.LEVEL_ORDER
    for t in trials:
        assert order[t.victim.level] <= order[t.aggressor.level]
        if t.victim.level == t.aggressor.level:
            assert (t.victim.cpu, t.aggressor.cpu) == (1, 0)  # the harness's victim CPU
    inclusion = next(t for t in trials if t.key == {"cpu0_l1d_ld", "cpu1_l3_st"})
    assert (inclusion.victim.tx, inclusion.aggressor.tx) == ("cpu0_l1d_ld", "cpu1_l3_st")
    assert all(t.channel and t.services for t in itf)
    # the external initiator's 4 transactions against the 16 of the CPUs: nothing drives it
    assert len(skipped) == 64 and all("external" in " ".join(s["transactions"]) for s in skipped)
    again, _ = validate.plan(table, found, why_not, topo, free_sample=4, seed=3)
    assert [t.key for t in again] == [t.key for t in trials]


def test_quick_plan_is_short_and_dram_free(vm):
    topo, p, table = vm
    found, why_not = validate.exercises(p, topo)
    trials, _ = validate.plan(table, found, why_not, topo, quick=True)
    assert [(t.expected, t.victim.tx, t.aggressor.tx) for t in trials] == [
        (INTERFERENCE, "cpu1_l1d_ld", "cpu0_l3_st"),  # through the (assumed) inclusive L3
        (INTERFERENCE, "cpu1_l3_ld", "cpu0_l3_st"),   # the shared L3 itself
        (FREE, "cpu1_l1d_ld", "cpu0_l1d_st"),
    ]


def test_models_without_host_cpus_cannot_be_validated(vm):
    topo, _, _ = vm
    from pathlib import Path
    board = Path(__file__).resolve().parents[2] / "examples" / "platforms" / "rpi4.yaml"
    from intercore.model.loader import load
    with pytest.raises(InputError, match="no initiator names a host CPU"):
        validate.exercises(load(board), topo)


@pytest.mark.parametrize("expected, iso, intf, verdict", [
    (INTERFERENCE, [100, 101, 99, 100, 102], [140, 141, 139, 142, 140], CONFIRMED),
    (INTERFERENCE, [100, 101, 99, 100, 102], [101, 100, 99, 102, 101], NOT_OBSERVED),
    (FREE, [100, 101, 99, 100, 102], [101, 100, 99, 102, 101], CONFIRMED),
    (FREE, [100, 101, 99, 100, 102], [120, 121, 119, 122, 120], CONTRADICTED),
    # a 3 % slowdown is real but below the 5 % threshold: not counted either way
    (FREE, [100, 101, 99, 100, 102], [103, 104, 102, 103, 105], CONFIRMED),
])
def test_decide_uses_the_ci_lower_bound_against_the_threshold(expected, iso, intf, verdict):
    assert decide(expected, compare(iso, intf)) == verdict


def _comparison(rows):
    """One region's comparison from (regime, iso ns, int ns) pairs."""
    from intercore.measure.harness.comparison import comparisons
    from intercore.base.sample import Sample

    samples = []
    for pair, (regime, a, b) in enumerate(rows):
        samples += [Sample(0, 2 * pair, pair, "iso", "", 1, "walk", a, a, 0, 0, regime=regime),
                    Sample(0, 2 * pair + 1, pair, "int", "agg", 1, "walk", b, b, 0, 0,
                           regime=regime)]
    (c,) = comparisons(samples)
    return c


def _trial(expected, level):
    victim = validate.Exercise("v", 1, level, "load", 1, "ptrchase", "BwRead(LLC)")
    aggressor = validate.Exercise("a", 0, level, "load", 1, "ptrchase", "BwRead(LLC)")
    return validate.Trial(expected, None, (), victim, aggressor)


SLOW = [("shared", 100 + i, 200 + i) for i in range(4)]
FLAT = [("not-shared", 100 + i, 101 + i) for i in range(6)]


def test_a_shared_cache_pair_is_decided_on_its_shared_blocks():
    verdict, result, regime, basis = validate.regime_verdict(
        _trial(INTERFERENCE, "LLC"), _comparison(SLOW + FLAT), can_share=True,
        run_regime="mixed")
    assert (verdict, regime, result.n) == (CONFIRMED, "shared", 4) and "4 pairs" in basis
    # All ten pairs together would not have shown it: Δ over all pairs stays near 1.
    assert validate.decide(INTERFERENCE, _comparison(SLOW + FLAT).result) == NOT_OBSERVED


def test_without_shared_blocks_absence_is_unobservable_but_a_slowdown_still_counts():
    flat = _comparison(FLAT)
    for expected in (INTERFERENCE, FREE):
        verdict, _, regime, basis = validate.regime_verdict(
            _trial(expected, "LLC"), flat, can_share=True, run_regime="not-shared")
        assert verdict == validate.UNOBSERVABLE and regime == "not-shared"
        assert "provisional" in basis
    slowed = _comparison([("not-shared", 100 + i, 150 + i) for i in range(6)])
    assert validate.regime_verdict(_trial(INTERFERENCE, "DRAM"), slowed, can_share=True,
                                   run_regime="not-shared")[0] == CONFIRMED
    assert validate.regime_verdict(_trial(FREE, "DRAM"), slowed, can_share=True,
                                   run_regime="not-shared")[0] == CONTRADICTED


def test_private_pairs_and_hosts_that_cannot_share_ignore_the_regime():
    flat = _comparison(FLAT)
    assert validate.regime_verdict(_trial(FREE, "L2"), flat, can_share=True,
                                   run_regime="not-shared")[0] == CONFIRMED
    assert validate.regime_verdict(_trial(INTERFERENCE, "LLC"), flat, can_share=False,
                                   run_regime="not-shared")[0] == NOT_OBSERVED


def test_decide_with_a_single_pair_claims_no_slowdown():
    one = compare([100], [200])
    assert math.isnan(one.delta_ci[0])
    assert decide(INTERFERENCE, one) == NOT_OBSERVED and decide(FREE, one) == CONFIRMED


def test_runs_below_three_are_refused(vm):
    topo, p, table = vm
    found, why_not = validate.exercises(p, topo)
    trials, _ = validate.plan(table, found, why_not, topo, quick=True)
    with pytest.raises(InputError) as info:
        validate.validate(trials, topo, runs=2)
    assert info.value.field == "--runs"


HOST = read_topology()


@pytest.mark.slow
@pytest.mark.skipif(len(HOST.online_cpus) < 2, reason="needs a victim and an aggressor CPU")
def test_a_real_negative_control_is_measured_stored_and_read_back(tmp_path):
    p = loads(to_yaml(detect()), "host.yaml")
    table = build_table(analyze(p, 2), p)
    found, why_not = validate.exercises(p, HOST)
    trials, skipped = validate.plan(table, found, why_not, HOST, quick=True)
    control = [t for t in trials if t.expected == FREE]
    result = validate.validate(control, HOST, skipped=skipped, runs=4, canary=False)
    [v] = result.verdicts
    assert v.result.n == 4 and v.region != "total" and v.regime == "unknown"
    assert v.verdict in (CONFIRMED, CONTRADICTED)
    db = tmp_path / "r.db"
    inv = validate.save(db, p, result, runs=4, argv=["test"], topo=HOST, params={})
    con = sqlite3.connect(db)
    (model_hash, text, regime), = con.execute(
        "SELECT model_hash, model_text, regime FROM model_validations WHERE invocation_id = ?",
        (inv,))
    assert (model_hash, text, regime) == (p.hash, p.text, "unknown")
    (victim_id, verdict, n), = con.execute(
        "SELECT victim_id, verdict, n FROM model_verdicts WHERE invocation_id = ?", (inv,))
    assert (verdict, n) == (v.verdict, 4)
    role, = con.execute("SELECT role FROM workloads WHERE id = ?", (victim_id,)).fetchone()
    assert role == "victim"
    pairs = con.execute("SELECT COUNT(*) FROM samples WHERE victim_id = ? AND aggressor_set = ? "
                        "AND region_name = ?", (victim_id, v.trial.aggressor_set, v.region))
    assert pairs.fetchone()[0] == 4  # the int samples behind the verdict
    evidence = stored_evidence(db, p.hash)
    assert evidence[v.trial.key].verdict == v.verdict
    assert evidence[v.trial.key].invocation_id == inv
    assert stored_evidence(db, "other hash") == {}
    assert not native_processes()
