import pytest

from intercore.base.job import JobResult
from intercore.mitigate.experiment.scenario import progress, summarize_jobs, work_done


def _job(i, response_ms, deadline_ms=30, cpu_ms=1.0):
    return JobResult(job=i, release_ns=0, start_ns=0, end_ns=int(response_ms * 1e6),
                     response_ns=int(response_ms * 1e6), cpu_ns=int(cpu_ms * 1e6),
                     missed=response_ms > deadline_ms, skipped=0)


def test_summary_counts_misses_with_a_wilson_interval():
    jobs = [_job(i, 40 if i % 2 else 5) for i in range(20)]
    s = summarize_jobs(jobs, noise_progress=1.0)
    assert (s.n, s.misses, s.miss_ratio) == (20, 10, 0.5)
    lo, hi = s.miss_ci
    assert 0.29 < lo < 0.5 < hi < 0.71
    assert s.p50_ms == pytest.approx(22.5)
    assert s.max_ms == pytest.approx(40)
    assert s.p99_ms is None  # 20 jobs cannot support a p99
    d = s.to_dict()
    assert set(d) >= {"n", "misses", "miss_ratio", "p50_ms", "p99_ms", "max_ms", "noise_progress"}


def test_zero_misses_still_has_an_upper_bound():
    s = summarize_jobs([_job(i, 5) for i in range(100)], None)
    assert s.misses == 0 and s.miss_ci[0] == 0.0
    assert 0.03 < s.miss_ci[1] < 0.04  # about 3.7/n at 95%
    assert s.p99_ms == pytest.approx(5)


def test_progress_is_work_relative_to_the_reference():
    ref = [_job(i, 40, cpu_ms=40) for i in range(10)]
    half = [_job(i, 40, cpu_ms=40) for i in range(5)]
    assert work_done(ref) == 400_000_000
    assert progress(half, ref) == pytest.approx(0.5)
    assert progress(half, []) is None


def test_summary_needs_jobs():
    with pytest.raises(ValueError):
        summarize_jobs([], None)
