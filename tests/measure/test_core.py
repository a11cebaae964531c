"""Core sharing: the core probe's logic against a simulated host whose state the test sets,
the topology's reading of SMT siblings on fake sysfs trees, and the warning built from both
(no real-host timing here: bench/canary_probe.py --core measures the real one)."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest
from _simulated_core import SEPARATE, SHARED, SimulatedCore
from _state_checks import change_inside_block, follow_random_flips

from intercore.host.topology import core_siblings, read_topology
from intercore.measure.regime import core
from intercore.measure.harness import paired as harness
from intercore.base.sample import INT, ISO

sys.path.insert(0, str(Path(__file__).parents[1] / "host"))  # the fake sysfs trees
from fake_host import FakeHost, hybrid_x86_vm, xeon_cat_v2  # noqa: E402

PLAN = core.core_plan(1)
QUIET = {"sigma": 0.02}
HEAVY = {"sigma": 0.06, "hit": 0.15, "effect": (1.25, 1.8)}
EXPECTED = {SHARED: harness.SAME_CORE, SEPARATE: harness.SEPARATE_CORES}
OPPOSITE = {SHARED: harness.SEPARATE_CORES, SEPARATE: harness.SAME_CORE}


def states(state: bool, n: int, seed: int = 1, **noise) -> Counter:
    host = SimulatedCore(lambda _tick: state, seed=seed, **noise)
    return Counter(host.probe(PLAN).regime for _ in range(n))


@pytest.mark.parametrize("noise", [QUIET, HEAVY], ids=["quiet", "heavy noise"])
@pytest.mark.parametrize("state", [SHARED, SEPARATE], ids=["same core", "separate cores"])
def test_the_core_probe_tells_the_states_apart(state, noise):
    seen = states(state, 400, **noise)
    assert seen[EXPECTED[state]] >= 0.9 * 400, seen
    assert seen[harness.UNKNOWN] <= 0.1 * 400, seen
    assert seen[OPPOSITE[state]] <= 0.02 * 400, seen


def test_a_tenant_beside_the_isolated_half_can_hide_sharing_but_never_invent_it():
    """The isolated half leaves the other CPU to the host; a tenant there loads a shared core
    as the spinner does, so sharing reads weaker: never as separate cores in most probes."""
    shared = states(SHARED, 400, sibling_tenant=0.3, **HEAVY)
    assert shared[harness.SAME_CORE] >= 0.6 * 400, shared
    separate = states(SEPARATE, 400, sibling_tenant=0.9, **HEAVY)
    assert separate[harness.SAME_CORE] <= 0.02 * 400, separate


def test_a_register_only_victim_beside_a_spinner_on_another_core_reads_no_slowdown():
    """What the thresholds rest on: with nothing shared the pairs centre on 1."""
    host = SimulatedCore(lambda _tick: SEPARATE, **HEAVY)
    ratios = [b / a for a, b in (host.pair() for _ in range(400))]
    assert 0.97 <= sorted(ratios)[200] <= 1.03


def test_a_state_change_inside_a_block_leaves_its_core_state_unknown():
    unknown, decided = change_inside_block(
        lambda state, seed: SimulatedCore(state, seed=seed, **HEAVY), PLAN)
    assert unknown >= 0.9 * 200 and decided <= 0.1 * 200, (unknown, decided)


def test_blocks_follow_a_host_that_moves_vcpus_at_random_even_inside_probes():
    rng = random.Random(5)
    flips = sorted(rng.sample(range(50, 30_000), 60))

    def state(tick: int) -> bool:
        return sum(f <= tick for f in flips) % 2 == 0

    right, steady, flipped = follow_random_flips(SimulatedCore(state, seed=6, **HEAVY), state,
                                                 PLAN, 40, 30_000, EXPECTED, OPPOSITE)
    assert steady >= 200 and flipped >= 20 and right >= 0.9 * steady, (right, steady, flipped)


def test_a_block_records_the_core_state_beside_its_cache_regime():
    def probe(state: str) -> harness.Probe:
        return harness.Probe(0, state, (1.0,))

    block = harness.BlockRecord(3, 1, "set", 0, 10, 2, harness.UNKNOWN, {})
    cache = [probe(harness.SHARED), probe(harness.SHARED)]
    same = [probe(harness.SAME_CORE), probe(harness.SAME_CORE)]
    mixed = [probe(harness.SAME_CORE), probe(harness.SEPARATE_CORES)]
    got = harness._with_regime(block, cache, same)
    assert (got.regime, got.core) == (harness.SHARED, harness.SAME_CORE)
    assert got.to_dict()["core"] == harness.SAME_CORE
    assert harness._with_regime(block, cache, mixed).core == harness.UNKNOWN
    assert harness._with_regime(block, cache, []).core == harness.UNKNOWN


def test_samples_carry_their_blocks_core_state_only_where_a_core_probe_ran():
    meta = {0: harness.RepMeta(0, 0, ISO, "set", 0, 3, 0), 1: harness.RepMeta(1, 0, INT, "set",
                                                                            5, 3, 0)}
    block = harness.BlockRecord(3, 1, "set", 0, 10, 1, harness.SHARED, {}, harness.SAME_CORE)
    lines = [{"event": "sample", "rep": r, "region": 0, "name": "total", "wall_ns": 10,
              "cpu_ns": 10} for r in (0, 1)]
    both = harness.parse_samples(lines, meta, {3: block}, "cpu", core=True)
    assert [(s.regime, s.core) for s in both] == [(harness.SHARED, harness.SAME_CORE)] * 2
    cache_only = harness.parse_samples(lines, meta, {3: block}, "cpu")
    assert [(s.regime, s.core) for s in cache_only] == [(harness.SHARED, None)] * 2


def _smt_vm(root: Path, siblings: str | None) -> None:
    """The 2-vCPU KVM guest of this project, with sysfs naming the vCPUs' threads."""
    host = hybrid_x86_vm(root)
    for cpu in (0, 1):
        host.cpu(cpu, core_id=0 if siblings else cpu, thread_siblings=siblings or str(cpu))


def test_sysfs_thread_siblings_name_the_cores_threads(tmp_path):
    xeon_cat_v2(tmp_path / "xeon")
    FakeHost(tmp_path / "xeon").cpu(2, core_id=2, thread_siblings="2,6")
    xeon = read_topology(tmp_path / "xeon")
    assert core_siblings(xeon, 2) == {2, 6}
    assert core_siblings(xeon, 1) == {1, 5}  # no thread_siblings_list: by core id
    _smt_vm(tmp_path / "smt", "0-1")
    smt = read_topology(tmp_path / "smt")
    assert [c.thread_siblings for c in smt.cpus] == [(0, 1), (0, 1)]
    _smt_vm(tmp_path / "apart", None)
    assert core_siblings(read_topology(tmp_path / "apart"), 1) == {1}


def _simulated_prober(state: bool):
    host = SimulatedCore(lambda _tick: state, **HEAVY)
    calls: list[tuple[int, int]] = []

    def prober(victim_cpu: int, other_cpu: int) -> harness.Probe:
        calls.append((victim_cpu, other_cpu))
        return host.probe(PLAN)
    return prober, calls


def test_the_warning_names_what_shares_a_core_from_sysfs_without_probing(tmp_path):
    _smt_vm(tmp_path, "0-1")
    topo = read_topology(tmp_path)
    prober, calls = _simulated_prober(SEPARATE)
    note = core.core_warning(topo, 0, [1], "the profiler's busy-wait sampler", prober)
    assert note and note.startswith("the profiler's busy-wait sampler on CPU 0 shares a "
                                    "physical core with the victim's CPU 1")
    assert "thread_siblings" in note and calls == []
    assert core.core_warning(topo, 1, [1], "the sampler", prober) is None


def test_where_the_hypervisor_hides_the_threads_the_probe_decides(tmp_path):
    _smt_vm(tmp_path, None)
    topo = read_topology(tmp_path)
    assert topo.hypervisor == "KVM"
    shared, calls = _simulated_prober(SHARED)
    note = core.core_warning(topo, 0, [0, 1], "the regulator", shared)
    assert note and "under KVM" in note and "slowed register-only work" in note
    assert calls == [(1, 0)]
    apart, _ = _simulated_prober(SEPARATE)
    assert core.core_warning(topo, 0, [1], "the regulator", apart) is None
    assert core.core_warning(topo, 0, [1], "the regulator", None) is None
