"""`intercore mitigate protection --taskset FILE`: the user's own task set (the example's
control_task, built against the installed kit, as the critical task; a bandwidth writer as
the best-effort one) through Solo / Interference / Protected on the real kernel. Structure
only: the scenarios, their n, the plan made from the matrix the runs measured, the
monitor's log. The one timing fact relied on is a scheduling one (a job released while an
equal-priority job holds its CPU waits for it), as in test_experiment.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.host.topology import default_placement, read_topology
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.matrix_runner import WARMUP_JOBS
from intercore.measure.periodic.taskset import load
from intercore.mitigate.plan import algorithm1
from intercore.mitigate.experiment.protection import user_pair
from intercore.mitigate.freezer.monitor import read_log
from intercore.store import Store

from _board import board

TOPO = read_topology()
JOBS = 10


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", "mitigate", "protection",
                           *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def _task(name: str, what: str, cpu: int | None, role: str, extra: str = "") -> str:
    return (f"  - name: {name}\n    {what}\n    cpu: {cpu}\n    priority: 10\n"
            f"    role: {role}\n{extra}").replace("    cpu: None\n", "")


CTL = 'program: ["./control_task", "--steps-per-job", "50"]'
NOISE = "workload: bw\n    params: {op: write, size: 2xLLC}"


def _write(directory: Path, *tasks: str) -> Path:
    path = directory / "mine.yaml"
    path.write_text("name: mine\ntasks:\n" + "".join(tasks))
    return path


@pytest.mark.slow
def test_the_users_task_set_runs_solo_interference_and_protected(example, tmp_path,
                                                                 real_cgroups, test_root):
    cpu, _ = default_placement(TOPO)
    # Both on one CPU at one priority, the program released 1 ms into each 4 ms noise job:
    # it waits for the job, so the measured matrix must show the pair interfering.
    taskset = _write(example,
                     _task("ctl", CTL, cpu, "critical",
                           "    period: 10ms\n    deadline: 5ms\n    offset: 1ms\n"),
                     _task("noise", NOISE, cpu, "best-effort",
                           "    period: 20ms\n    work: time:4ms\n"))
    out, db = tmp_path / "out", tmp_path / "x.db"
    proc = _run("--taskset", str(taskset), "--jobs", str(JOBS), "--root", test_root,
                "--db", str(db), "-o", str(out), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert list(doc["placements"]) == ["taskset"]
    run = doc["placements"]["taskset"]
    assert run["victim"] == {"name": "ctl", "period_ms": 10.0, "deadline_ms": 5.0}
    assert run["noise"] == "noise" and doc["config"]["taskset"] == str(taskset)
    for scenario in ("solo", "interference", "protected"):
        assert run[scenario]["n"] == JOBS
    assert run["solo"]["noise_progress"] is None
    assert run["interference"]["noise_progress"] == 1.0

    # The plan is Algorithm 1's on the matrix these runs measured, nothing else.
    matrix = InterferenceMatrix.model_validate(
        {k: v for k, v in run["matrix"].items() if k != "symmetric"})
    # Its cells count the jobs after each run's warm-up, as a matrix's blocks do.
    assert matrix.tasks == ("ctl", "noise") and matrix.n[0][1] == JOBS - WARMUP_JOBS
    plan = algorithm1.plan(load(taskset), matrix, 1.5, matrix_source="test")
    assert run["plan"]["groups"] == [g.model_dump(mode="json") for g in plan.groups]
    assert run["plan"]["pairs"] == [p.model_dump(mode="json") for p in plan.pairs]
    assert any(g["monitor"] == "freeze" for g in run["plan"]["groups"])

    # Protected ran under that plan: the monitor froze the noise for the program's jobs.
    log = [e for e in read_log(out / "taskset.monitor.jsonl") if e.job is not None]
    assert any(e.action == "freeze" and e.reason == "release" for e in log)
    assert {e.job for e in log} <= set(range(JOBS))
    assert run["monitor"]["freezes"] >= 1
    assert all((out / Path(f).name).stat().st_size > 1000 for f in run["figures"])
    with Store.open(db) as store:
        jobs = store.jobs.of_invocation(doc["invocation_id"])
    assert len(jobs[("taskset/protected", "taskset/ctl")]) == JOBS
    assert ("taskset/noise-alone", "taskset/noise") in jobs
    assert not real_cgroups.roots_named(test_root)


@pytest.mark.parametrize("tasks, where", [
    ((_task("ctl", CTL, 1, "critical", "    period: 10ms\n"),), ":3: tasks: "),
    ((_task("ctl", CTL, 1, "critical", "    period: 10ms\n"),
      _task("other", CTL, 0, "critical", "    period: 10ms\n")), ":13: tasks[1].role: "),
    ((_task("ctl", CTL, None, "critical", "    period: 10ms\n"),
      _task("noise", NOISE, 0, "best-effort", "    period: 20ms\n    work: time:2ms\n")),
     ":3: tasks[0].cpu: "),
    ((_task("ctl", CTL, 1, "critical", "    period: 10ms\n"),
      _task("noise", NOISE, 0, "best-effort", "    period: 20ms\n    work: time:2ms\n"),
      _task("more", NOISE, 0, "best-effort", "    period: 20ms\n    work: time:2ms\n")),
     ":17: tasks[2]: "),
])
@pytest.mark.slow
def test_a_task_set_without_one_critical_and_one_best_effort_task_exits_2_first(
        example, tmp_path, tasks, where, real_cgroups, test_root):
    taskset = _write(example, *tasks)
    out, db = tmp_path / "out", tmp_path / "x.db"
    proc = _run("--taskset", str(taskset), "--root", test_root, "--db", str(db), "-o", str(out),
                cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith(f"error: {taskset}{where}") and "\n" not in line, proc.stderr
    assert not out.exists() and not db.exists()
    assert not real_cgroups.roots_named(test_root)


@pytest.mark.slow
def test_taskset_and_placement_together_exit_2(example, tmp_path):
    taskset = _write(example, _task("ctl", CTL, 1, "critical", "    period: 10ms\n"))
    proc = _run("--taskset", str(taskset), "--placement", "same-core", "--db",
                str(tmp_path / "x.db"), cwd=tmp_path)
    assert proc.returncode == 2 and "--placement" in proc.stderr, proc.stderr


BUILT_IN = 'workload: matrix1'


@pytest.mark.parametrize("cpus, victim_cpu, noise_cpu, monitor_cpu", [
    (4, 1, 2, 0),      # a CPU neither task uses
    (4, 0, 0, 1),
    (2, 1, 0, 0),      # none free: the noise's, never the critical task's
    (2, 1, 1, 0),
    (3, 2, None, 0),   # a floating noise: any CPU but the critical task's
])
def test_the_monitor_runs_where_the_critical_task_does_not(tmp_path, cpus, victim_cpu,
                                                           noise_cpu, monitor_cpu):
    # The best-effort task first: the roles decide, not the order.
    taskset = _write(tmp_path,
                     _task("noise", NOISE, noise_cpu, "best-effort",
                           "    period: 20ms\n    work: time:2ms\n"),
                     _task("ctl", BUILT_IN, victim_cpu, "critical", "    period: 100ms\n"))
    pair = user_pair(taskset, board(cpus))
    assert (pair.victim, pair.noise, pair.monitor_cpu) == ("ctl", "noise", monitor_cpu)
