import itertools

import pytest

from intercore.base.errors import InputError
from intercore.measure.periodic.matrix_runner import (WARMUP_JOBS, Block, degradation, jobs_in,
                                                     schedule, statistic_of, steady)
from intercore.base.job import JobResult


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


def test_the_cold_first_job_of_a_block_is_left_out():
    # A process's first job pays its page faults and cold caches beside anything: counted,
    # it is both maxima and the co-runner's 8 ms vanishes.
    alone, beside = _jobs([9, 4, 5]), _jobs([9, 8, 6])
    assert degradation(alone, beside, "max") == 1.0
    assert [j.job for j in steady(beside)] == list(range(WARMUP_JOBS, 3))
    assert degradation(steady(alone), steady(beside), "max") == pytest.approx(8 / 5)


def test_degradation_is_the_ratio_of_worst_cases():
    alone = _jobs([4, 5, 4.5])
    beside = _jobs([4, 40, 5])
    assert degradation(alone, beside, "max") == pytest.approx(8.0)


def test_p99_needs_enough_jobs():
    with pytest.raises(InputError, match="at least 100 jobs"):
        statistic_of([1.0] * 99, "p99")
    values = list(range(1, 101))
    assert statistic_of(values, "p99") == pytest.approx(99.01)


# ---- per regime: the worst regime, and a provisional mark ------------------------------------

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from intercore.host.topology import default_placement, largest_private, read_topology  # noqa: E402
from intercore.measure.periodic import taskset as tasksets  # noqa: E402
from intercore.measure.harness.paired import CanaryPlan, VictimSpec  # noqa: E402
from intercore.measure.periodic.matrix import InterferenceMatrix  # noqa: E402
from intercore.measure.periodic.matrix_runner import measure_matrix, provisional_note  # noqa: E402
from intercore.measure.aggressors.presets import AggressorSpec  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent.parent))
from _flipping import FlippingHost, aggressor_argv, usable  # noqa: E402


def test_provisional_only_where_the_cache_can_be_shared_and_never_was():
    assert provisional_note(["shared", "unknown"], can_share=True) is None
    assert provisional_note(["not-shared"] * 3, can_share=False) is None
    note = provisional_note(["not-shared", "not-shared", "unknown"], can_share=True)
    assert "no block of 3" in note and "2 not-shared" in note and "1 unknown" in note
    assert "without the running canary" in provisional_note([None, None], can_share=True)


def _flipping_taskset(tmp_path, cpu: int, l2: int):
    """A victim sized to its private cache, and the flipping host's test aggressor as the
    noise task beside it on its CPU, at a higher SCHED_FIFO priority (tests/_flipping.py)."""
    text = f"""
name: flipping
tasks:
  - name: victim
    workload: ptrchase
    params: {{size: '{3 * l2 // 4}', accesses: '100K'}}
    period: 2ms
    cpu: {cpu}
    priority: 1
    role: critical
  - name: flipping-host-noise
    workload: bw
    params: {{op: write, size: '{8 * l2}'}}
    period: 1ms
    work: passes:1
    cpu: {cpu}
    priority: 2
    role: best-effort
"""
    path = tmp_path / "flipping.yaml"
    path.write_text(text)
    return tasksets.load(path)


@pytest.mark.slow
@pytest.mark.skipif(usable() is not None, reason=str(usable()))
def test_a_matrix_under_a_flipping_host_takes_the_worst_regime(tmp_path):
    topo = read_topology()
    cpu = default_placement(topo).victim
    l2 = largest_private(topo, cpu).size
    ts = _flipping_taskset(tmp_path, cpu, l2)
    thrasher = AggressorSpec("cmd", "", 0, "canary thrasher", cpu=cpu,
                             command=aggressor_argv(cpu, 8 * l2))
    canary = CanaryPlan(VictimSpec("ptrchase", (("size", str(3 * l2 // 4)),
                                                ("accesses", "250K"))), thrasher, 5)
    other = next(c for c in topo.online_cpus if c != cpu)
    # The timer keeps the schedule's time: on in even rounds, off in odd ones, so most
    # blocks lie wholly in one state (a round's first block has a probe from the last).
    host = FlippingHost(period_s=None, move_to=(cpu, other))
    with host.running():
        # p99, not max: one host hiccup in a job alone must not decide a cell here.
        run = measure_matrix(ts, rounds=6, block_ns=300_000_000, seed=3, canary=canary,
                             canary_cpu=cpu, can_share=True, statistic="p99",
                             on_block=lambda i, n, b: host.set("on" if b.round % 2 == 0
                                                               else "off"))
    m = run.matrix
    assert len(run.probes) == len(run.blocks) + 1 and len(run.regimes) == len(run.blocks)
    v, n = m.index("victim"), m.index("flipping-host-noise")
    per = {r: cells.directed[v][n] for r, cells in m.by_regime.items()
           if cells.directed[v][n] is not None}
    if not {"shared", "not-shared"} <= set(per):
        pytest.skip(f"the pair's blocks did not meet both states: {run.regimes}")
    # Algorithm 1 reads the worst regime, with that regime's n, whichever it was: on this
    # host other tenants often leave the simulated sharing no stronger than its absence.
    assert m.directed[v][n] == max(per.values()) and m.regime_of[v][n] == max(per, key=per.get)
    assert m.n[v][n] == m.by_regime[m.regime_of[v][n]].n[v][n]
    assert not m.provisional
    # The artefact keeps all of it through its JSON file.
    m.save_json(tmp_path / "m.json")
    assert InterferenceMatrix.load_json(tmp_path / "m.json") == m

    with FlippingHost(period_s=None, start="off", move_to=(cpu, other)).running():
        calm = measure_matrix(ts, rounds=1, block_ns=300_000_000, seed=3, canary=canary,
                              canary_cpu=cpu, can_share=True, statistic="p99")
    if "shared" in calm.regimes:
        # "Off" moves the noise to the other CPU, and this host's vCPUs share their L3 at
        # times: then the canary rightly saw sharing, and the matrix stands on it.
        assert not calm.matrix.provisional, calm.regimes
    else:
        assert calm.matrix.provisional and "no block of 3" in calm.matrix.notes[0]


def test_the_matrix_carries_the_deadline_misses_behind_each_cell(tmp_path):
    """A victim whose deadline no job can meet, beside a task that keeps its own: the
    matrix counts the misses of exactly the jobs behind each cell, alone and beside."""
    cpu = default_placement(read_topology()).victim
    path = tmp_path / "misses.yaml"
    path.write_text(f"""
name: misses
tasks:
  - name: victim
    workload: matmul
    params: {{n: '16', k: '64', m: '4'}}
    period: 5ms
    deadline: 1us
    cpu: {cpu}
    priority: 2
    role: critical
  - name: noise
    workload: bw
    params: {{op: write, size: 64K}}
    period: 5ms
    work: passes:1
    cpu: {cpu}
    priority: 1
    role: best-effort
""")
    run = measure_matrix(tasksets.load(path), rounds=2, block_ns=50_000_000, seed=1)
    m = run.matrix
    v, n = m.index("victim"), m.index("noise")
    assert m.misses[v][n] == m.n[v][n] > 0 and m.alone_misses[v][0] == m.alone_misses[v][1] > 0
    # The noise's count is whatever its jobs after the warm-up say, job by job, never assumed.
    noise_beside = [j for block, by in run.blocks if len(block.members) == 2
                    for j in steady(by["noise"].jobs)]
    noise_alone = [j for block, by in run.blocks if block.members == ("noise",)
                   for j in steady(by["noise"].jobs)]
    assert m.misses[n][v] == sum(j.missed for j in noise_beside)
    # Each block ran its warm-up job first and more after it; the cells count the rest.
    assert m.provenance["warmup_jobs"] == WARMUP_JOBS
    for _, by in run.blocks:
        for result in by.values():
            assert [j.job for j in result.jobs][:WARMUP_JOBS + 1] == \
                list(range(WARMUP_JOBS + 1))
    assert m.n[n][v] == len(noise_beside)
    # Round by round, each round's jobs beside over its own jobs alone.
    assert len(m.by_round) == 2
    for r, rows in enumerate(m.by_round):
        alone = [j for block, by in run.blocks if block.round == r
                 and block.members == ("victim",) for j in steady(by["victim"].jobs)]
        beside = [j for block, by in run.blocks if block.round == r
                  and len(block.members) == 2 for j in steady(by["victim"].jobs)]
        assert rows[v][n] == degradation(alone, beside, "max")
    assert m.typical("victim", "noise") is not None
    assert noise_alone and m.alone_misses[n] == (sum(j.missed for j in noise_alone),
                                                 len(noise_alone))
    m.save_json(tmp_path / "m.json")
    assert InterferenceMatrix.load_json(tmp_path / "m.json") == m
