"""The pair schedule (measure/harness/schedule.py): pure, so tested exhaustively here; the harness
tests check that the processes follow it."""

from collections import Counter

import pytest

from intercore.measure.harness import schedule as sched


def test_every_set_gets_the_same_number_of_pairs_each_complete():
    reps = sched.repetitions(n_sets=4, pairs=10, block_pairs=3, seed=5)
    assert len(reps) == 4 * 10 * 2
    pairs = Counter(r.set_index for r in reps)
    assert pairs == {s: 20 for s in range(4)}
    by_pair: dict[int, list] = {}
    for r in reps:
        by_pair.setdefault(r.pair, []).append(r)
    assert len(by_pair) == 40  # pair numbers are unique across sets
    for halves in by_pair.values():
        assert sorted(h.condition for h in halves) == ["int", "iso"]
        assert len({(h.set_index, h.block) for h in halves}) == 1


def test_order_is_reproducible_from_the_seed_and_changes_with_it():
    a = sched.repetitions(3, 8, 2, seed=11)
    assert a == sched.repetitions(3, 8, 2, seed=11)
    assert a != sched.repetitions(3, 8, 2, seed=12)
    firsts = Counter(a[i].condition for i in range(0, len(a), 2))
    assert firsts["iso"] and firsts["int"]  # the order inside pairs is drawn


def test_blocks_rotate_through_every_set_each_round_in_a_drawn_order():
    blocks = list(sched.blocks(n_sets=3, pairs=8, block_pairs=2, seed=3))
    assert [b.pairs for b in blocks] == [2] * 12
    rounds: dict[int, list[int]] = {}
    for b in blocks:
        rounds.setdefault(b.round, []).append(b.set_index)
    assert all(sorted(v) == [0, 1, 2] for v in rounds.values())
    assert len({tuple(v) for v in rounds.values()}) > 1  # not the same order every round
    # a block holds consecutive repetitions of one set only
    for b in blocks:
        assert {r.set_index for r in b.reps} == {b.set_index}
        assert {r.block for r in b.reps} == {b.index}


def test_the_last_block_of_a_set_is_shortened_not_the_count():
    blocks = list(sched.blocks(n_sets=2, pairs=5, block_pairs=2, seed=1))
    assert Counter(b.set_index for b in blocks) == {0: 3, 1: 3}
    assert sorted(b.pairs for b in blocks if b.set_index == 0) == [1, 2, 2]


def test_rotation_drops_stopped_sets_and_stays_deterministic():
    def run(stop_after_round):
        rot = sched.Rotation(3, 2, seed=4)
        remaining = {0: 6, 1: 6, 2: 6}
        out = []
        while any(remaining.values()):
            for b in rot.round(remaining):
                remaining[b.set_index] -= b.pairs
                out.append((b.set_index, b.reps))
            if rot._round == stop_after_round:
                remaining[1] = 0
        return out

    a = run(1)
    assert a == run(1)
    assert Counter(s for s, _ in a) == {0: 3, 1: 1, 2: 3}


def test_one_set_order_does_not_depend_on_the_block_size():
    """What the ssh driver relies on: one set, any block size, the same (pair, condition)."""
    orders = {tuple((r.pair, r.condition) for r in sched.repetitions(1, 9, b, seed=2))
              for b in (1, 2, 4, 9)}
    assert len(orders) == 1


@pytest.mark.parametrize("switch_ms,pair_ms,pairs,expected", [
    (10, 100, 100, 1),      # cheap switch: a pair per block
    (200, 50, 100, 20),     # 200 ms / (0.2 x 50 ms)
    (200, 50, 40, 10),      # at least 4 blocks per set
    (5000, 1500, 100, 2),   # a block stays under 4 s
])
def test_block_size_from_the_switch_cost(switch_ms, pair_ms, pairs, expected):
    size = sched.choose_block_pairs(switch_ms * 1e6, pair_ms * 1e6, pairs)
    assert size.pairs == expected
    assert f"{switch_ms:.1f} ms" in size.reason or f"{switch_ms}.0 ms" in size.reason


@pytest.mark.parametrize("probe_ms,pair_ms,pairs,expected", [
    (30, 50, 200, 20),      # 30 ms / (0.03 x 50 ms): the probe within 3 % of a block
    (50, 50, 40, 10),       # at least 4 blocks per set still wins
    (0, 50, 100, 1),        # no canary: the switch alone decides
])
def test_block_size_keeps_the_canary_probe_within_its_share(probe_ms, pair_ms, pairs,
                                                           expected):
    size = sched.choose_block_pairs(1e6, pair_ms * 1e6, pairs, probe_ms * 1e6)
    assert size.pairs == expected
    assert ("probes between blocks" in size.reason) == bool(probe_ms)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        sched.Rotation(0, 2, 1)
    with pytest.raises(ValueError):
        sched.Rotation(2, 0, 1)


def test_blocks_are_sized_again_from_the_costs_measured():
    first = sched.choose_block_pairs(1e6, 50e6, 200, 30e6)   # 20 pairs from the first probe
    same = sched.resized_block_pairs(first, 1e6, 50e6, 200, 30e6, rounds=1)
    assert same is first
    later = sched.resized_block_pairs(first, 1e6, 50e6, 200, 69e6, rounds=2)
    assert later.pairs == 46                                  # 69 ms / (0.03 x 50 ms)
    assert "after round 2" in later.reason and "first probe alone chose 20" in later.reason
    cheaper = sched.resized_block_pairs(first, 1e6, 50e6, 200, 15e6, rounds=2)
    assert cheaper.pairs == 10                                # probes cheaper: shorter blocks


def _share_of_probes(later_probe_ms: float, resize: bool) -> float:
    """A run of one set, 200 pairs of 140 ms, whose first probe took 30 ms and every later one
    `later_probe_ms` (a quiet host: the first probe, timed at calibration, was 2.3x too cheap
    in bench/canary_probe.py): the probes' share of its wall time, with the harness's own
    sizing after each round or with the first size throughout."""
    from intercore.base.sample import ISO
    from intercore.measure.harness.paired import BlockRecord, Probe, _resized

    pair_ns, first_probe = 140e6, 30e6
    first = sched.choose_block_pairs(1e6, 2 * 60e6, 200, first_probe)
    rotation = sched.Rotation(1, first.pairs, seed=1)
    blocks, probes, t, left = [], [Probe(int(first_probe), "", (), 0)], first_probe, 200
    while left:
        for block in rotation.round({0: left}):
            start = t
            t += block.pairs * pair_ns
            blocks.append(BlockRecord(block.index, block.round, "w", int(start), int(t),
                                      block.pairs, ISO, {}))
            probes.append(Probe(int(t + later_probe_ms * 1e6), "", (), int(t)))
            t += later_probe_ms * 1e6
            left -= block.pairs
        if resize:
            rotation.block_pairs = _resized(first, 1e6, 200, blocks, [probes], rotation).pairs
    return sum(p.at_ns - p.start_ns for p in probes) / t


def test_sizing_again_keeps_the_probes_within_their_share():
    assert _share_of_probes(69, resize=False) > 0.05      # what the first probe alone gave
    assert _share_of_probes(69, resize=True) <= 0.04
    assert _share_of_probes(25, resize=True) <= 0.04
