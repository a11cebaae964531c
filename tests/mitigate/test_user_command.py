"""An unmodified program as a best-effort task (`command:` in a task set): ic-corun runs it
in the task's cgroup, on its CPU, at its priority, from the start shared with the other
tasks, re-runs it until they end, and leaves no process and no cgroup. It reports no jobs,
so every figure that reads the noise's jobs is None (progress unknown): the matrix row, the
plan's direction, the experiment's noise progress. On the real kernel; logic and structure
only, never a timing figure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base.errors import NativeError
from intercore.host.topology import default_placement, read_topology
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.runner import CommandSpec, CommandTask, launch, start_together
from intercore.base.procs import ProcessGroup
from intercore.measure.periodic.taskset import load
from intercore.mitigate.plan import algorithm1
from intercore.mitigate.experiment import protection as experiment
from intercore.mitigate.freezer.monitor import read_log
from intercore.base.native import tool
from intercore.store import Store


TOPO = read_topology()
JOBS = 10
# Busy for a few ms (shell arithmetic), then asleep: a neighbour that presses on its CPU in
# bursts, yet never holds a SCHED_FIFO CPU for good.
BURSTS = "#!/bin/sh\ni=0\nwhile [ $i -lt 3000 ]; do i=$((i+1)); done\nsleep 0.01\n"


def _script(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def _running(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the program's, not ours)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def test_the_command_runs_in_its_cgroup_on_its_cpu_at_its_priority_from_the_shared_start(
        groups, tmp_path):
    record = tmp_path / "rec"
    # Each record written whole, then renamed: the stop may kill a run mid-write.
    probe = _script(tmp_path, "probe", f"""#!/bin/sh
cat /proc/$$/cgroup > {record}.tmp && mv {record}.tmp {record}.cgroup
grep Cpus_allowed_list /proc/$$/status > {record}.tmp && mv {record}.tmp {record}.cpus
awk '{{print $41}}' /proc/$$/stat > {record}.tmp && mv {record}.tmp {record}.policy
echo run >> {record}.runs
sleep 0.01
""")
    cpu = TOPO.online_cpus[-1]
    spec = CommandSpec(name="filter", path=str(probe), cpu=cpu, priority=3,
                       cgroups=(str(groups.best_effort),))
    with ProcessGroup() as group:
        task = CommandTask.launch(spec, group)
        assert task.ready["family"] == "command" and task.ready["cgroups"] == [
            str(groups.best_effort)]
        time.sleep(0.2)
        assert not Path(f"{record}.runs").exists()  # nothing runs before the shared start
        start_together([task])
        time.sleep(0.3)
        result = task.result()
    assert result.jobs is None and result.summary.stopped and result.summary.rt
    runs = Path(f"{record}.runs").read_text().count("run")
    assert runs >= 2 and result.summary.runs in (runs, runs - 1)  # re-run; the last killed
    assert Path(f"{record}.cgroup").read_text().strip().endswith(
        "/" + groups.best_effort.relative_to(groups.best_effort.parents[1]).as_posix())
    assert Path(f"{record}.cpus").read_text().split()[-1] == str(cpu)
    assert Path(f"{record}.policy").read_text().strip() == "1"  # SCHED_FIFO
    assert not _running(str(probe))
    assert "populated 0" in (groups.best_effort / "cgroup.events").read_text()


@pytest.mark.parametrize("args, needle", [
    (["--", "/nonexistent/filter"], "/nonexistent/filter: No such file or directory"),
    (["--", "/etc"], "/etc: not an executable file"),
    ([], "missing -- PROG"),
    (["--start-at", "soon", "--", "/bin/true"], "--start-at: 'soon' is neither"),
    (["--cgroup", "/nonexistent", "--", "/bin/true"], "is not a cgroup directory"),
    (["--cpu", "100000", "--", "/bin/true"], "--cpu"),
])
def test_ic_corun_refuses_bad_arguments_before_its_ready_line(args, needle):
    done = subprocess.run([str(tool("ic-corun")), *args], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert needle in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_ic_corun_help_lists_its_options():
    done = subprocess.run([str(tool("ic-corun")), "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0
    for option in ("--name", "--offset", "--start-at", "--cgroup", "--cpu", "--rt-priority"):
        assert option in done.stdout


def test_a_failing_command_fails_the_run_with_its_message(tmp_path):
    broken = _script(tmp_path, "broken", "#!/bin/sh\necho 'no input file' >&2\nexit 3\n")
    with ProcessGroup() as group:
        task = CommandTask.launch(CommandSpec(name="filter", path=str(broken)), group)
        start_together([task])
        time.sleep(0.2)
        with pytest.raises(NativeError, match="exited with status 3: no input file"):
            task.result()


def test_a_killed_launcher_takes_the_program_with_it(tmp_path):
    sleeper = _script(tmp_path, "sleeper", "#!/bin/sh\nexec sleep 1000\n")
    with ProcessGroup() as group:
        task = launch(CommandSpec(name="filter", path=str(sleeper)), group)
        start_together([task])
        deadline = time.monotonic() + 5
        while not _running("sleep\x001000") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _running("sleep\x001000")
        task.process.proc.kill()
        task.process.proc.wait()
    deadline = time.monotonic() + 2
    while _running("sleep\x001000") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running("sleep\x001000")


def _taskset(directory: Path, command: list[str], noise_cpu: int) -> Path:
    cpu, _ = default_placement(TOPO)
    _script(directory, "bursts", BURSTS)
    path = directory / "filter.yaml"
    path.write_text(
        "name: with-filter\ntasks:\n"
        "  - name: ctl\n    program: [./control_task, --steps-per-job, '50']\n"
        f"    period: 10ms\n    deadline: 5ms\n    offset: 1ms\n    cpu: {cpu}\n"
        "    priority: 10\n    role: critical\n"
        f"  - name: noise\n    command: {json.dumps(command)}\n    cpu: {noise_cpu}\n"
        "    priority: 10\n    role: best-effort\n")
    return path


@pytest.mark.slow
def test_matrix_and_plan_leave_the_commands_direction_unknown(example, tmp_path):
    cpu, _ = default_placement(TOPO)
    taskset = _taskset(example, ["./bursts"], cpu)
    done = _cli("matrix", str(taskset), "--rounds", "1", "--block", "200ms", "--no-canary",
                "--db", str(tmp_path / "m.db"), "-o", str(tmp_path / "m"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["tasks"] == ["ctl", "noise"] and doc["progress_unknown"] == ["noise"]
    # ctl beside the program is measured; the program's own row is None, never a figure.
    assert doc["n"][0][1] >= 10 and doc["directed"][0][1] > 0
    assert doc["directed"][1] == [None, None] and doc["n"][1] == [0, 0]
    assert doc["symmetric"][0][1] == doc["directed"][0][1]
    assert any("progress unknown" in note for note in doc["notes"])
    # Two blocks: ctl alone, and the pair; the program alone has no jobs to end it.
    with Store.open(tmp_path / "m.db") as store:
        inv = max(store.invocations(), key=lambda i: i.id)
        labels = {task for _, task in store.jobs.of_invocation(inv.id)}
    assert labels and all(label.endswith("ctl") for label in labels)
    assert not _running(str(example / "bursts"))

    done = _cli("cgroups", "plan", str(taskset), "-m", str(tmp_path / "m.json"), "-o",
                str(tmp_path / "plan.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    for pair in plan["pairs"]:
        assert (pair["a"], pair["b"]) == ("ctl", "noise") and pair["b_beside_a"] is None
        assert pair["b_misses"] is None


@pytest.mark.slow
def test_experiment_protection_takes_the_command_as_the_noise(example, tmp_path,
                                                              real_cgroups, test_root):
    cpu, _ = default_placement(TOPO)
    taskset = _taskset(example, ["./bursts"], cpu)
    out, db = tmp_path / "out", tmp_path / "x.db"
    done = _cli("experiment", "protection", "--taskset", str(taskset), "--jobs", str(JOBS),
                "--root", test_root, "--db", str(db), "-o", str(out), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["placements"]["taskset"]
    for scenario in ("solo", "interference", "protected"):
        assert run[scenario]["n"] == JOBS and run[scenario]["noise_progress"] is None
    assert run["matrix"]["progress_unknown"] == ["noise"]
    assert run["matrix"]["directed"][1] == [None, None]
    assert any("progress is unknown" in note for note in run["notes"])
    if any(g["monitor"] == "freeze" for g in run["plan"]["groups"]):
        assert run["monitor"]["releases"] == JOBS
    with Store.open(db) as store:
        jobs = store.jobs.of_invocation(json.loads(done.stdout)["invocation_id"])
    assert not any(task.endswith("/noise") for _, task in jobs)
    assert not any(label.endswith("noise-alone") for label, _ in jobs)
    assert not real_cgroups.roots_named(test_root)
    assert not _running(str(example / "bursts"))


def test_the_monitor_freezes_the_commands_group_at_the_programs_releases(
        example, tmp_path, real_cgroups, test_root):
    _, others = default_placement(TOPO)
    ts = load(_taskset(example, ["./bursts"], others[0]))
    # The matrix is given: what is under test is the command as the frozen noise.
    matrix = InterferenceMatrix(tasks=("ctl", "noise"), statistic="max",
                                directed=((None, 3.0), (None, None)), n=((0, 20), (0, 0)),
                                progress_unknown=("noise",), provenance={"measured_by": "test"})
    plan = algorithm1.plan(ts, matrix, 1.5, matrix_source="test")
    assert plan.pairs[0].b_beside_a is None and plan.pairs[0].interference == 3.0
    cfg = experiment.Config(jobs=JOBS, policy="event", root_name=test_root, out_dir=tmp_path)
    log = tmp_path / "monitor.jsonl"
    results, stats = experiment._protected(ts, plan, cfg, {"ctl": JOBS, "noise": 1},
                                           others[0], log, [])
    noise = results["noise"]
    assert noise.jobs is None and noise.summary.runs >= 1 and noise.summary.stopped
    assert any(d.endswith("/noise") for d in noise.ready["cgroups"])
    assert results["ctl"].summary.jobs == JOBS and stats.releases == JOBS
    freezes = [e for e in read_log(log) if e.action == "freeze" and e.job is not None]
    assert freezes
    assert not real_cgroups.roots_named(test_root)
    assert not _running(str(example / "bursts"))


@pytest.mark.slow
def test_gang_runs_the_command_as_its_best_effort_work(example, tmp_path, real_cgroups):
    _, others = default_placement(TOPO)
    taskset = _taskset(example, ["./bursts"], others[0])
    before = set(real_cgroups.roots_named("intercore-gang-"))
    done = _cli("gang", "--taskset", str(taskset), "--jobs", str(JOBS), "-o",
                str(tmp_path / "g"), "--db", str(tmp_path / "g.db"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # The critical task's jobs are summarised; the command, which has none, is not.
    assert list(doc["scenarios"]["rt-gang"]) == ["ctl"]
    assert doc["scenarios"]["rt-gang"]["ctl"]["n"] == JOBS
    assert doc["scheduler"] and doc["scheduler"][0]["gangs"]
    assert set(real_cgroups.roots_named("intercore-gang-")) == before
    assert not _running(str(example / "bursts"))


@pytest.mark.slow
def test_ctrl_c_stops_a_run_with_a_command_within_a_second(example, tmp_path):
    cpu, _ = default_placement(TOPO)
    _script(example, "sleeper", "#!/bin/sh\nexec sleep 1234\n")
    taskset = _taskset(example, ["./sleeper"], cpu)
    proc = subprocess.Popen([sys.executable, "-m", "intercore", "measure", "matrix", str(taskset),
                             "--rounds", "3", "--block", "5s", "--no-canary", "--db",
                             str(tmp_path / "m.db"), "-o", str(tmp_path / "m")],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not _running("sleep\x001234") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running("sleep\x001234"), "the command never started"
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    proc.wait(timeout=10)
    assert time.monotonic() - t0 < 1.0 and proc.returncode == 130
    assert not _running("sleep\x001234")


@pytest.mark.slow
def test_the_plan_says_progress_unknown_for_the_commands_direction(tmp_path):
    _script(tmp_path, "filter", "#!/bin/sh\nexit 0\n")
    (tmp_path / "ts.yaml").write_text(
        "name: t\ntasks:\n  - name: ctl\n    workload: matrix1\n    period: 100ms\n"
        "    deadline: 30ms\n    cpu: 0\n    priority: 10\n    role: critical\n"
        "  - name: noise\n    command: [./filter]\n    cpu: 0\n    role: best-effort\n")
    InterferenceMatrix(tasks=("ctl", "noise"), statistic="max",
                       directed=((None, 3.0), (None, None)), n=((0, 20), (0, 0)),
                       misses=((0, 5), (0, 0)), alone_ns=(1e7, None),
                       alone_misses=((0, 20), (0, 0)),
                       progress_unknown=("noise",)).save_json(tmp_path / "m.json")
    done = _cli("cgroups", "plan", "ts.yaml", "-m", "m.json", "-o", "p.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "3.000" in line)
    assert "progress unknown" in row and "5/20 beside" in row
    (pair,) = json.loads((tmp_path / "p.json").read_text())["pairs"]
    assert (pair["b_beside_a"], pair["b_misses"], pair["interference"]) == (None, None, 3.0)
