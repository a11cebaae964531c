"""`intercore mitigate protection` end to end on this host (real job runners, real cgroups,
the real monitor), in quick mode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from intercore.host.steal import TICK_MS
from intercore.store import Store


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "intercore", "mitigate", "protection", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def _no_miss_but_the_hosts(placement: dict, scenario: str) -> None:
    """The victim (about 5 ms of work, a 30 ms deadline, SCHED_FIFO) meets every deadline
    unless its vCPU did not run: a CI run once saw one Solo job miss on this shared VM. A miss
    passes only when the hypervisor took from the victim's CPU, during the scenario, at least
    what the slowest job took beyond the median one (to within one tick, the kernel's unit of
    steal), and the experiment then says so in its notes."""
    s = placement[scenario]
    if s["misses"] == 0:
        return
    cpu = str(next(t["cpu"] for t in placement["taskset"]["tasks"] if t["name"] == "victim"))
    stolen = (s["host_steal_ms"] or {}).get(cpu, 0.0)
    assert stolen + TICK_MS > s["max_ms"] - s["p50_ms"], (scenario, s, placement["notes"])
    if stolen:
        assert any(n.startswith(f"{scenario}: ") and "hypervisor" in n
                   for n in placement["notes"])


@pytest.mark.slow
def test_same_core_protection_quick(tmp_path, real_cgroups, test_root):
    db = tmp_path / "x.db"
    proc = _run("--quick", "--placement", "same-core", "--root", test_root, "--db", str(db),
                "-o", str(tmp_path / "out"), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    same = doc["placements"]["same-core"]
    for scenario in ("solo", "interference", "protected"):
        assert same[scenario]["n"] == 20
        assert set(same[scenario]) >= {"misses", "miss_ratio", "p50_ms", "p99_ms", "max_ms",
                                       "noise_progress"}
    # On one CPU at equal SCHED_FIFO priority the victim waits for the 40 ms noise job: a
    # scheduling fact, not a noisy measurement, so it must show.
    assert same["interference"]["misses"] >= 5
    _no_miss_but_the_hosts(same, "solo")
    # The plan separated the pair and the monitor froze the noise at every release.
    assert any(g["monitor"] == "freeze" for g in same["plan"]["groups"])
    assert same["monitor"]["freezes"] >= 15
    _no_miss_but_the_hosts(same, "protected")
    assert same["protected"]["noise_progress"] > 0.5
    for figure in same["figures"]:
        assert (tmp_path / "out" / figure.rsplit("/", 1)[1]).stat().st_size > 1000
    with Store.open(db) as store:
        jobs = store.jobs.of_invocation(doc["invocation_id"])
    assert len(jobs[("same-core/protected", "same-core/victim")]) == 20
    assert len(jobs[("same-core/solo", "same-core/victim")]) == 20
    assert ("same-core/noise-alone", "same-core/noise") in jobs
    assert not any(p.name == test_root for p in real_cgroups.roots_named(test_root))


@pytest.mark.parametrize("args, field", [
    (["--theta", "1"], "--theta"),
    (["--placement", "sideways"], "--placement"),
    (["--policy", "sometimes"], "--policy"),
    (["--jobs", "1"], "--jobs"),
])
@pytest.mark.slow
def test_bad_options_exit_2_before_anything_runs(tmp_path, args, field, real_cgroups, test_root):
    proc = _run(*args, "--root", test_root, "--db", str(tmp_path / "x.db"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert field in proc.stderr
    assert not (tmp_path / "x.db").exists()
    assert not real_cgroups.roots_named(test_root)


# ---- the cross-check against the matrix --------------------------------------------------------

from intercore.measure.periodic.matrix import InterferenceMatrix  # noqa: E402
from intercore.mitigate.plan.algorithm1 import plan  # noqa: E402
from intercore.mitigate.experiment.protection import cross_check  # noqa: E402
from intercore.measure.harness.paired import VictimSpec  # noqa: E402
from intercore.measure.periodic.taskset import Task, TaskSet  # noqa: E402
from intercore.mitigate.experiment.scenario import ScenarioSummary  # noqa: E402
from intercore.measure.harness.stats import wilson_interval  # noqa: E402


def _summary(misses: int, n: int = 100) -> ScenarioSummary:
    return ScenarioSummary(n=n, misses=misses, miss_ci=wilson_interval(misses, n),
                           p50_ms=10.0, p99_ms=30.0, max_ms=40.0, noise_progress=None)


def _matrix(i: float, **kw) -> InterferenceMatrix:
    return InterferenceMatrix(tasks=("victim", "noise"), statistic="max",
                              directed=((None, i), (1.0, None)), n=((0, 100), (50, 0)), **kw)


def _check(solo: int, interference: int, matrix: InterferenceMatrix) -> str | None:
    """cross_check with the plan Algorithm 1 makes from `matrix` (θ = 1.5, D = 30 ms)."""
    tasks = tuple(Task(name=name, role=role, workload=VictimSpec("matmul"),
                       period_ns=100_000_000, deadline_ns=30_000_000, offset_ns=0, cpu=1,
                       priority=10, weight=100, overrun="skip", work=None)
                  for name, role in (("victim", "critical"), ("noise", "best-effort")))
    ts = TaskSet(name="experiment", source="test", tasks=tasks)
    return cross_check(_summary(solo), _summary(interference), matrix, plan(ts, matrix, 1.5))


def test_a_planted_contradiction_refuses_protected_as_protection():
    """bench/protection.py's case: 2/100 misses alone, 49/100 beside the noise, and a matrix
    measured while the vCPUs did not share the cache saying I = 1.1 <= θ."""
    why = _check(2, 49, _matrix(1.1))
    assert why and "49/100" in why and "2/100" in why and "I = 1.10" in why
    assert "not evidence of protection" in why
    provisional = _matrix(1.1, provisional=True, notes=("no block was shared",))
    assert "provisional" in _check(2, 49, provisional)


def test_a_deadline_the_matrix_sees_broken_is_protected_not_refused():
    """The same run with the victim's times alone recorded: 25 ms alone, 1.3 beside the noise
    is 32.5 ms, past the 30 ms deadline though below θ: the pair is separated."""
    matrix = _matrix(1.3, alone_ns=(25e6, 10e6))
    assert _check(2, 49, matrix) is None
    assert _check(2, 49, _matrix(1.3, alone_ns=(20e6, 10e6)))  # 26 ms: kept, so refused


@pytest.mark.parametrize("solo,interference,i", [
    (2, 49, 2.4),   # the matrix saw it: Algorithm 1 separated the pair
    (2, 5, 1.1),    # no clear difference in misses: nothing contradicts the matrix
    (0, 0, 1.0),
])
def test_no_refusal_without_a_contradiction(solo, interference, i):
    assert _check(solo, interference, _matrix(i)) is None
