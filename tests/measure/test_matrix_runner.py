import itertools

import pytest

from intercore.errors import InputError
from intercore.measure.matrix_runner import Block, degradation, jobs_in, schedule, statistic_of
from intercore.measure.periodic import JobResult


def _jobs(responses_ms):
    return [JobResult(job=i, release_ns=0, start_ns=0, end_ns=int(r * 1e6),
                      response_ns=int(r * 1e6), cpu_ns=0, missed=False, skipped=0)
            for i, r in enumerate(responses_ms)]


def test_schedule_runs_every_task_alone_and_every_pair_once_per_round():
    names = ("a", "b", "c")
    plan = schedule(names, rounds=3, seed=7)
    assert len(plan) == 3 * (3 + 3)
    for r in range(3):
        members = sorted(b.members for b in plan if b.round == r)
        expected = sorted([(n,) for n in names] + list(itertools.combinations(names, 2)))
        assert members == expected
    # Rounds are contiguous: round r's blocks all precede round r+1's.
    assert [b.round for b in plan] == sorted(b.round for b in plan)


def test_schedule_order_is_seeded_and_differs_between_rounds():
    names = tuple("abcdef")
    assert schedule(names, 2, seed=1) == schedule(names, 2, seed=1)
    plan = schedule(names, 2, seed=1)
    first = [b.members for b in plan if b.round == 0]
    second = [b.members for b in plan if b.round == 1]
    assert first != second  # shuffled per round, not one fixed order repeated


def test_schedule_rejects_zero_rounds():
    with pytest.raises(InputError) as info:
        schedule(("a", "b"), 0, seed=1)
    assert info.value.field == "--rounds"


def test_block_labels():
    assert Block(0, ("a",)).label == "round 0: a alone"
    assert Block(2, ("a", "b")).label == "round 2: a + b"


@pytest.mark.parametrize("period, block, jobs", [(100, 1000, 10), (200, 1000, 5), (300, 1000, 4),
                                                  (5000, 1000, 1)])
def test_jobs_in_block(period, block, jobs):
    assert jobs_in(period, block) == jobs


def test_degradation_is_the_ratio_of_worst_cases():
    alone = _jobs([4, 5, 4.5])
    beside = _jobs([4, 40, 5])
    assert degradation(alone, beside, "max") == pytest.approx(8.0)


def test_p99_needs_enough_jobs():
    with pytest.raises(InputError, match="at least 100 jobs"):
        statistic_of([1.0] * 99, "p99")
    values = list(range(1, 101))
    assert statistic_of(values, "p99") == pytest.approx(99.01)
