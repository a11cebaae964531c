"""The user's program as a periodic task: examples/user-program/control_task.c, built with
gcc and clang 19 against the installed kit (ic_task.h, libicruntime), speaks ic-periodic's
protocol by the same runner code, and a task set names it (`program:`) so that `intercore
matrix` measures it beside a built-in aggressor. Protocol and logic only: the host is too
noisy for timing figures."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.host.topology import read_topology
from intercore.measure.periodic.runner import PeriodicTask, start_together
from intercore.base.procs import ProcessGroup
from intercore.measure.periodic.taskset import load
from intercore.base.native import tool

from _kit import COMPILERS, build_example, need

TOPO = read_topology()
MS = 1_000_000


def run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    need("gcc")
    return build_example("gcc", tmp_path_factory.mktemp("example"))


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
def test_the_task_speaks_the_periodic_runners_protocol(cc, tmp_path):
    need(cc)
    task = build_example(cc, tmp_path) / "control_task"
    done = run(str(task), "--period", "5ms", "--deadline", "4ms", "--jobs", "4", "--name", "ctl",
               "--", "--steps-per-job", "50")
    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    ready, jobs, summary = lines[0], lines[1:-1], lines[-1]
    assert ready["event"] == "ready" and summary["event"] == "summary"
    assert (ready["name"], ready["family"], ready["kind"]) == ("ctl", "program", "control_task")
    assert ready["runtime"] == "intercore-task-runtime/1"
    assert (ready["period_ns"], ready["deadline_ns"], ready["jobs"]) == (5 * MS, 4 * MS, 4)
    assert [j["job"] for j in jobs] == [0, 1, 2, 3]
    for j in jobs:
        assert j["start_ns"] >= j["release_ns"] and j["end_ns"] >= j["start_ns"]
        assert (j["release_ns"] - jobs[0]["release_ns"]) % (5 * MS) == 0  # on the grid
        assert j["missed"] == (j["response_ns"] > 4 * MS) and "accesses" not in j
    assert summary["jobs"] == 4 and summary["misses"] == sum(j["missed"] for j in jobs)
    assert "checksum" not in summary
    # The program's own arguments reached it: 4 jobs of 50 steps.
    assert done.stderr.startswith("control_task: 200 steps"), done.stderr


@pytest.mark.slow
def test_the_tasks_help_lists_the_runner_options(example):
    done = run(str(example / "control_task"), "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: control_task [runner options]")
    for option in ("--period", "--deadline", "--offset", "--jobs", "--notify", "--cgroup",
                   "--start-at", "--cpu", "--rt-priority"):
        assert option in done.stdout
    periodic = run(str(tool("ic-periodic")), "--help").stdout
    # One option table for both: every runner option's help line is the same.
    options = [ln for ln in done.stdout.splitlines() if ln.startswith("  --")]
    assert len(options) == 13 and set(options) <= set(periodic.splitlines())


@pytest.mark.parametrize("args,needle", [
    (["--period", "0"], "--period: must be in (0, 1h]"),
    (["--jobs", "0"], "--jobs"),
    (["--start-at", "soon"], "--start-at"),
    (["--bogus"], "--bogus"),
    (["--", "--steps-per-job", "0"], "--steps-per-job"),
])
def test_bad_runner_options_or_own_arguments_exit_2_before_any_job(example, args, needle):
    done = run(str(example / "control_task"), *args)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert needle in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_sigterm_ends_the_task_after_its_job_with_the_results(example):
    proc = subprocess.Popen([str(example / "control_task"), "--period", "10ms", "--jobs",
                             "100000"], stdout=subprocess.PIPE, text=True)
    assert json.loads(proc.stdout.readline())["event"] == "ready"
    time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    lines = events(out)
    summary = lines[-1]
    assert summary["stopped"] is True and 0 < summary["jobs"] < 100000
    assert len(lines) - 1 == summary["jobs"]


def write_taskset(directory: Path, program: list[str], role: str = "critical",
                  cpu: int | None = None) -> Path:
    noise_cpu = TOPO.online_cpus[-1]
    path = directory / "user.yaml"
    path.write_text(
        "name: user-control\ntasks:\n"
        f"  - name: ctl\n    program: {json.dumps(program)}\n    period: 10ms\n"
        f"    deadline: 5ms\n    role: {role}\n"
        + (f"    cpu: {cpu}\n" if cpu is not None else "") +
        "  - name: noise\n    workload: bw\n    params: {op: write, size: 2xLLC}\n"
        f"    period: 20ms\n    work: time:2ms\n    cpu: {noise_cpu}\n    role: best-effort\n")
    return path


def test_a_task_set_runs_the_program_as_a_periodic_task(example):
    ts = load(write_taskset(example, ["./control_task", "--steps-per-job", "30"]))
    task = ts.task("ctl")
    assert (task.binary, task.kind) == ("program", str(example / "control_task"))
    assert task.to_dict()["args"] == ["--steps-per-job", "30"]
    with ProcessGroup() as group:
        running = PeriodicTask.launch(task.periodic_spec(jobs=5), group)
        start_together([running])
        result = running.result()
    assert running.ready["family"] == "program" and running.ready["name"] == "ctl"
    assert [j.job for j in result.jobs] == list(range(5)) and result.summary.jobs == 5
    assert result.summary.checksum is None and not result.summary.stopped


@pytest.mark.slow
def test_intercore_matrix_measures_the_program_beside_an_aggressor(example, tmp_path):
    taskset = write_taskset(example, ["./control_task", "--steps-per-job", "30"],
                            cpu=TOPO.online_cpus[0])
    db = tmp_path / "m.db"
    done = run(sys.executable, "-m", "intercore", "measure", "matrix", str(taskset), "--rounds",
               "1",
               "--block", "200ms", "--no-canary", "--json", "--db", str(db),
               "-o", str(tmp_path / "m"), timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["tasks"] == ["ctl", "noise"]
    n = doc["n"]
    # ~20 jobs of ctl beside noise (200 ms / 10 ms) and ~10 of noise beside ctl, each with
    # its alone counterpart: every cell measured, none invented.
    assert n[0][1] >= 10 and n[1][0] >= 5
    assert doc["directed"][0][1] > 0 and doc["directed"][1][0] > 0


@pytest.mark.slow
@pytest.mark.parametrize("program,role,needle", [
    (["./missing"], "critical", "missing: no such file"),
    (["./controller.h"], "critical", "is not an executable file"),
    (["./control"], "critical", "is not built with intercore's task runtime"),
    (["./control"], "best-effort", "is not built with intercore's task runtime"),
    ([], "critical", "at least 1 item"),
])
def test_bad_programs_in_a_task_set_exit_2_naming_file_line_and_field(example, tmp_path,
                                                                       program, role, needle):
    taskset = write_taskset(example, program, role)
    done = run(sys.executable, "-m", "intercore", "measure", "matrix", str(taskset), "--db",
               str(tmp_path / "x.db"), "-o", str(tmp_path / "m"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {taskset}:4: tasks[0].program: "), done.stderr
    assert needle in done.stderr and done.stderr.count("\n") == 1
    assert not list(tmp_path.iterdir())  # no store, no outputs
