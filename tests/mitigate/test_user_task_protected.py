"""The user's program as a protected periodic task on the real kernel: the example's
control_task (built against the installed kit) is the critical task of a task set, a
bandwidth writer the best-effort one; Algorithm 1's plan separates them, and the experiment's
Protected run (cgroups, watchdog, event monitor on a housekeeping CPU) runs them. The monitor
learns the program's releases and completions from the notification block the task runtime
publishes, so its freezes must line up with the program's own job lines. Logic only (which
job each freeze belongs to, and its order against the job's times), never a latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercore.host.topology import default_placement, read_topology
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.taskset import load
from intercore.mitigate.plan import algorithm1
from intercore.mitigate.experiment import protection as experiment
from intercore.mitigate.freezer.guard import roles
from intercore.mitigate.freezer.monitor import read_log

from _kit import build_example, need

TOPO = read_topology()
JOBS = 20


@pytest.fixture
def taskset(tmp_path) -> Path:
    need("gcc")
    if len(TOPO.online_cpus) < 2:
        pytest.skip("needs two online CPUs: the program's and the monitor's")
    build_example("gcc", tmp_path)
    victim_cpu, others = default_placement(TOPO)
    path = tmp_path / "protected.yaml"
    path.write_text(
        "name: user-protected\ntasks:\n"
        "  - name: victim\n"
        f"    program: {json.dumps(['./control_task', '--steps-per-job', '100'])}\n"
        f"    period: 10ms\n    deadline: 5ms\n    cpu: {victim_cpu}\n    priority: 10\n"
        "    role: critical\n"
        "  - name: noise\n    workload: bw\n    params: {op: write, size: 2xLLC}\n"
        f"    period: 20ms\n    work: time:2ms\n    cpu: {others[0]}\n    priority: 10\n"
        "    role: best-effort\n")
    return path


@pytest.mark.slow
def test_the_monitor_freezes_at_the_programs_releases_and_thaws_at_its_completions(
        taskset, tmp_path, real_cgroups, test_root):
    ts = load(taskset)
    # The matrix is given, not measured: what is under test is the program as a protected
    # task, not whether this host's cache interferes today.
    matrix = InterferenceMatrix(tasks=("victim", "noise"), statistic="max",
                                directed=((None, 3.0), (1.0, None)), n=((0, 20), (20, 0)),
                                provenance={"measured_by": "test"})
    plan = algorithm1.plan(ts, matrix, 1.5, matrix_source="test")
    assert roles(plan)[1]  # the noise's group is the monitor's to freeze
    _, others = default_placement(TOPO)
    cfg = experiment.Config(jobs=JOBS, policy="event", root_name=test_root, out_dir=tmp_path)
    log = tmp_path / "monitor.jsonl"
    results, stats = experiment._protected(ts, plan, cfg, {"victim": JOBS, "noise": JOBS // 2},
                                           others[0], log, [])
    victim = results["victim"]
    assert victim.ready["family"] == "program" and victim.summary.jobs == JOBS
    assert not real_cgroups.roots_named(test_root)  # torn down

    entries = [e for e in read_log(log) if e.job is not None]
    freezes = {e.job: e for e in entries if e.action == "freeze"}
    # Every release of the program reached the monitor: frozen for, or already complete.
    assert stats.releases == JOBS and len(freezes) + stats.late_releases == JOBS
    assert freezes and stats.write_errors == 0
    assert set(freezes) <= {j.job for j in victim.jobs}
    for job in victim.jobs:
        if job.job not in freezes:
            continue
        freeze = freezes[job.job]
        assert freeze.t_ns >= job.release_ns and freeze.reason == "release"
        thaw = next(e for e in entries if e.action == "thaw" and e.job == job.job
                    and e.t_ns >= freeze.t_ns)
        assert thaw.reason in ("complete", "cap")
        if thaw.reason == "complete":
            assert thaw.t_ns >= job.end_ns
