"""Labels pooled over attempts, and the rule that stops measuring a program."""

import pytest

from intercore.learn import pooling
from intercore.base.sample import Sample


def _sample(pair, cond, regime, cpu, region=1):
    return Sample(0, 0, pair, cond, "A" if cond == "int" else "", region, "r", cpu, cpu, 0, 0,
                  regime)


def _attempt(n_shared, n_other, iso, intf, other="not-shared"):
    out = []
    for p in range(n_shared + n_other):
        regime = "shared" if p < n_shared else other
        out += [_sample(p, "iso", regime, iso), _sample(p, "int", regime, intf)]
    return out


def test_labels_use_only_pairs_wholly_in_the_shared_regime():
    samples = _attempt(8, 4, 100, 150)
    samples += [_sample(12, "iso", "shared", 100), _sample(12, "int", "not-shared", 900),
                _sample(13, "iso", "shared", 100)]  # a pair cut short has no int half
    pairs = pooling.region_pairs(samples, [1])
    assert pooling.regimes(pairs[1]) == {"shared": 8, "not-shared": 4, "mixed": 1}
    labels = pooling.labels(pairs, 5, "shared")
    assert labels[1].n == 8 and labels[1].delta == pytest.approx(1.5)
    assert labels[1].pairs == {"shared": 8, "not-shared": 4, "mixed": 1}
    assert pooling.labels(pairs, 9, "shared") == {}
    assert pooling.labels(pairs, 13, "any")[1].n == 13


def test_attempts_pool_without_mixing_their_pairs():
    """Both attempts number their pairs from 0: pooling keeps each pair's halves together."""
    one = pooling.region_pairs(_attempt(6, 2, 100, 200), [1])
    two = pooling.region_pairs(_attempt(6, 0, 110, 220), [1])
    pooled = pooling.pool([one, two])
    assert pooling.kept(pooled, "shared") == {1: 12}
    label = pooling.labels(pooled, 10, "shared")[1]
    assert label.n == 12 and all(b == 2 * a for a, b in zip(label.iso_ns, label.int_ns))
    assert label.pairs == {"shared": 12, "not-shared": 2}
    assert pooling.labels(pooling.pool([one]), 10, "shared") == {}


def test_the_stop_rule_closes_on_the_target_or_the_bound():
    rule = pooling.StopRule(target=30, max_attempts=3, regime="shared")
    assert rule.verdict({1: 30, 2: 31}, 1)["reason"] == "target"
    assert rule.verdict({1: 29, 2: 40}, 2) is None
    bound = rule.verdict({1: 29, 2: 40}, 3)
    assert bound["reason"] == "bound" and bound["fewest"] == 29
    # the next attempt asks for what the poorest region lacks at the recent rate, bounded
    assert rule.next_pairs({1: 20, 2: 40}, rate=0.5, cap=40, floor=8) == 25
    assert rule.next_pairs({1: 28}, rate=0.9, cap=40, floor=8) == 8
    assert rule.next_pairs({1: 0}, rate=0.01, cap=40, floor=8) == 40
    assert pooling.kept_rate([{"pairs": {"shared": 3, "unknown": 1}},
                              {"pairs": {"shared": 1, "not-shared": 3}}], "shared") == 0.5
    assert pooling.kept_rate([], "shared") == 1.0
