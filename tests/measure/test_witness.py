"""The victim as its own witness (issue 24, item 5), on synthetic samples: a two-state
mixture of isolated times is found only where it is clear, Δ is given per state, and blocks
whose own state witnessed the opposite of the canary's regime are flagged."""

from __future__ import annotations

import random

import pytest

from intercore.measure.regime import witness as w
from intercore.measure.harness.paired import NOT_SHARED, SHARED, UNKNOWN
from intercore.measure.harness.comparison import comparisons
from intercore.base.sample import Sample

CACHE_NS, MEMORY_NS = 40.0, 125.0


def mixture(n_fast: int, n_slow: int, sigma: float = 0.05, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [CACHE_NS * rng.lognormvariate(0, sigma) for _ in range(n_fast)] + \
        [MEMORY_NS * rng.lognormvariate(0, sigma) for _ in range(n_slow)]


def test_a_clear_mixture_is_split_between_its_states():
    split = w.split_states(mixture(60, 40))
    assert split is not None
    assert (split.n_fast, split.n_slow) == (60, 40)
    assert CACHE_NS * 1.1 < split.threshold < MEMORY_NS / 1.1
    assert split.fast_median == pytest.approx(CACHE_NS, rel=0.05)
    assert split.slow_median == pytest.approx(MEMORY_NS, rel=0.05)
    assert split.state(50.0) == w.FAST and split.state(110.0) == w.SLOW


@pytest.mark.parametrize("iso", [
    mixture(100, 0, sigma=0.1),                                       # one state
    mixture(95, 0, sigma=0.05) + [CACHE_NS * f for f in (1.6, 2.0, 2.4, 2.8, 3.0)],  # a tail
    mixture(20, 0, sigma=0.05) + [55.0 + i for i in range(60)] + mixture(0, 20, 0.05),  # a ramp
    mixture(4, 40),                                                   # too few in one state
    [CACHE_NS * (1 + 0.02 * (i % 2)) for i in range(50)] + [CACHE_NS * 1.2] * 50,  # too close
])
def test_no_split_without_a_clear_two_state_mixture(iso):
    assert w.split_states(iso) is None


def pairs_of(iso: list[float], effect: dict[str, float], split: w.Split, per_block: int,
             canary: dict[str, str | None], seed: int = 2):
    """(iso, int, block, canary regime) in blocks of `per_block` pairs of one state each."""
    rng = random.Random(seed)
    by_state = {w.FAST: [t for t in iso if split.state(t) == w.FAST],
                w.SLOW: [t for t in iso if split.state(t) == w.SLOW]}
    out, block = [], 0
    for state, times in by_state.items():
        for i in range(0, len(times), per_block):
            for t in times[i:i + per_block]:
                out.append((t, t * effect[state] * rng.lognormvariate(0, 0.03), block,
                            canary[state]))
            block += 1
    return out


def test_delta_per_state_and_the_blocks_where_the_canary_said_the_opposite():
    """Issue 24's shape: the victim at cache speed was slowed 2-3x, at memory speed 1.0-1.1x,
    and the canary called most of the cache-speed blocks not shared."""
    iso = mixture(40, 60)
    split = w.split_states(iso)
    pairs = pairs_of(iso, {w.FAST: 2.5, w.SLOW: 1.05}, split, 4,
                     {w.FAST: NOT_SHARED, w.SLOW: NOT_SHARED})
    got = w.witness(pairs)
    assert got is not None
    assert got.by_state[w.FAST].delta == pytest.approx(2.5, rel=0.05)
    assert got.by_state[w.SLOW].delta == pytest.approx(1.05, rel=0.05)
    assert got.regimes == {w.FAST: SHARED, w.SLOW: NOT_SHARED}
    fast_blocks = sorted({b for t, _, b, _ in pairs if split.state(t) == w.FAST})
    assert [d.block for d in got.disagreements] == fast_blocks
    assert all((d.canary, d.victim, d.pairs) == (NOT_SHARED, SHARED, 4)
               for d in got.disagreements)
    doc = got.to_dict()
    assert doc["regimes"] == {"fast": "shared", "slow": "not-shared"}
    assert len(doc["disagreements"]) == len(fast_blocks) == 10


def test_a_canary_that_agrees_and_blocks_it_left_undecided_are_not_flagged():
    iso = mixture(40, 60)
    split = w.split_states(iso)
    agreeing = pairs_of(iso, {w.FAST: 2.5, w.SLOW: 1.05}, split, 4,
                        {w.FAST: SHARED, w.SLOW: NOT_SHARED})
    assert w.witness(agreeing).disagreements == []
    undecided = pairs_of(iso, {w.FAST: 2.5, w.SLOW: 1.05}, split, 4,
                         {w.FAST: UNKNOWN, w.SLOW: None})
    assert w.witness(undecided).disagreements == []


def test_a_block_spanning_both_states_witnesses_nothing():
    split = w.split_states(mixture(40, 60))
    regimes = {w.FAST: SHARED, w.SLOW: NOT_SHARED}
    assert w.block_witness([CACHE_NS, MEMORY_NS], split, regimes) == UNKNOWN
    assert w.disagreements({0: (NOT_SHARED, [CACHE_NS, MEMORY_NS])}, split, regimes) == []
    assert [d.block for d in w.disagreements({0: (NOT_SHARED, [CACHE_NS, CACHE_NS])}, split,
                                             regimes)] == [0]


def test_two_speeds_that_the_aggressor_treats_alike_witness_no_regime():
    iso = mixture(40, 60)
    split = w.split_states(iso)
    pairs = pairs_of(iso, {w.FAST: 1.3, w.SLOW: 1.3}, split, 4,
                     {w.FAST: NOT_SHARED, w.SLOW: SHARED})
    got = w.witness(pairs)
    assert got is not None and set(got.by_state) == {w.FAST, w.SLOW}
    assert got.regimes is None and got.disagreements == []


def test_comparisons_carry_the_victims_witness_beside_by_regime():
    iso = mixture(40, 60)
    split = w.split_states(iso)
    pairs = pairs_of(iso, {w.FAST: 2.5, w.SLOW: 1.05}, split, 4,
                     {w.FAST: NOT_SHARED, w.SLOW: NOT_SHARED})
    samples = []
    for p, (a, b, block, regime) in enumerate(pairs):
        for cond, t in (("iso", a), ("int", b)):
            samples.append(Sample(0, 2 * p + (cond == "int"), p, cond,
                                  "w" if cond == "int" else "", 0, "total", int(t * 1e3),
                                  int(t * 1e3), 0, 1, regime=regime, block=block))
    (c,) = comparisons(samples)
    assert c.witness is not None and c.witness.regimes == {w.FAST: SHARED, w.SLOW: NOT_SHARED}
    assert set(c.by_regime) == {NOT_SHARED}
    assert len(c.to_dict()["witness"]["disagreements"]) == 10
    slow_pairs = {s.pair for s in samples if s.condition == "iso"
                  and split.state(s.cpu_ns / 1e3) == w.SLOW}
    (one_state,) = comparisons([s for s in samples if s.pair in slow_pairs])
    assert one_state.witness is None and one_state.to_dict()["witness"] is None
