"""Task sets: the file's shape, and the host-dependent checks on a synthetic machine."""

from pathlib import Path

import pytest

from intercore.base import yamlfile
from intercore.base.errors import InputError
from intercore.host.topology import Topology
from intercore.measure.harness.paired import VictimSpec
from intercore.measure.aggressors.presets import AggressorSpec
from intercore.measure.periodic.taskset import resolve
from intercore.base.units import parse_duration_ns

from _board import KIB, MIB, board as _board

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasksets"


def _load(text: str, topo: Topology | None = None):
    return resolve(yamlfile.parse(text, "set.yaml"), topo or _board())


def _error(text: str, topo: Topology | None = None) -> InputError:
    with pytest.raises(InputError) as info:
        _load(text, topo)
    return info.value


VICTIM = """\
name: t
tasks:
  - name: v
    workload: matrix1
    period: 100ms
    deadline: 30ms
    cpu: 1
    priority: 10
    role: critical
"""


@pytest.mark.parametrize("text, ns", [
    ("100ms", 100_000_000), ("1.5s", 1_500_000_000), ("250us", 250_000), ("2m", 120 * 10**9),
    ("0.001ms", 1_000), ("1h", 3600 * 10**9),
])
def test_durations(text, ns):
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize("text", ["100", "ms", "1.5", "-1ms", "1e3ms", "0.0001us", "10 sec"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration_ns(text)


@pytest.mark.parametrize("name", ["paper-000", "cross-core", "cluster-4"])
def test_examples_are_valid(name):
    ts = resolve(yamlfile.read(EXAMPLES / f"{name}.yaml"), _board())
    assert ts.name == name
    assert {t.role for t in ts.tasks} >= {"critical", "best-effort"}


def test_paper_example_resolves_the_papers_tasks():
    ts = resolve(yamlfile.read(EXAMPLES / "paper-000.yaml"), _board())
    victim, noise = ts.task("victim"), ts.task("noise")
    assert victim.workload == VictimSpec("matmul", (("n", "256"), ("k", "4096"), ("m", "9")),
                                         "matrix1")
    assert (victim.period_ns, victim.deadline_ns, victim.cpu) == (100_000_000, 30_000_000, 1)
    assert isinstance(noise.workload, AggressorSpec)
    assert noise.params == (("op", "write"), ("size", str(8 * MIB)))  # 2xLLC of the board
    assert (noise.period_ns, noise.deadline_ns, noise.work) == (200_000_000, 200_000_000,
                                                                "time:40ms")
    spec = noise.periodic_spec(jobs=50)
    assert (spec.binary, spec.kind, spec.jobs, spec.cpu, spec.priority, spec.work) == \
        ("aggr", "bw", 50, 1, 10, "time:40ms")
    vspec = victim.periodic_spec(jobs=100, cgroups=("/cg/v2/intercore/victim",))
    assert (vspec.binary, vspec.kind, vspec.deadline_ns, vspec.offset_ns, vspec.work) == \
        ("victim", "matmul", 30_000_000, 5_000_000, None)
    assert vspec.cgroups == ("/cg/v2/intercore/victim",)
    with pytest.raises(InputError, match="jobs"):
        victim.periodic_spec(jobs=0)


@pytest.mark.parametrize("size, expected", [
    ("LLC", 4 * MIB), ("0.5xLLC", 2 * MIB), ("2 x llc", 8 * MIB), ("PRIVATE", 512 * KIB),
    ("4xPRIVATE", 2 * MIB), ("1M", 1 * MIB), ("0.00001xLLC", 64),
])
def test_sizes_relative_to_the_detected_caches(size, expected):
    ts = _load(VICTIM.replace("matrix1", "ptrchase").replace("    deadline: 30ms\n", "") +
               f"    params:\n      size: {size}\n")
    assert dict(ts.tasks[0].params)["size"] == str(expected)


def test_aggressor_kinds_presets_and_defaults():
    ts = _load("""\
name: t
tasks:
  - name: a
    workload: pll
    params: {op: write, size: 0.5xLLC, mlp: 6}
    period: 10ms
    work: passes:3
    role: best-effort
  - name: b
    workload: BkPLLRead(LLC)
    period: 20ms
    work: time:5ms
    cpu: 2
    role: best-effort
    overrun: late
""")
    a, b = ts.tasks
    assert a.params == (("op", "write"), ("size", str(2 * MIB)), ("mlp", "6"))
    assert (a.cpu, a.priority, a.weight, a.overrun, a.deadline_ns) == (None, 0, 100, "skip",
                                                                       10_000_000)
    assert b.kind == "bankpll" and dict(b.params)["bank-mask"].startswith("0x")
    assert (b.cpu, b.overrun) == (2, "late")


def test_arbitrary_deadline_must_be_asked_for():
    text = VICTIM.replace("deadline: 30ms", "deadline: 150ms")
    err = _error(text)
    assert (err.line, err.field) == (6, "tasks[0].deadline")
    assert "arbitrary_deadline" in err.message
    ts = _load(text + "    arbitrary_deadline: true\n")
    assert ts.tasks[0].deadline_ns == 150_000_000


TWO = VICTIM + """\
  - name: n
    workload: bw
    params: {op: write, size: 2xLLC}
    period: 200ms
    work: time:40ms
    cpu: 1
    role: best-effort
"""


@pytest.mark.parametrize("old, new, line, field, words", [
    ("period: 100ms", "period: 100", 5, "tasks[0].period", "give a unit"),
    ("period: 200ms", "period: fast", 13, "tasks[1].period", "not a duration"),
    ("period: 200ms", "period: 0ms", 13, "tasks[1].period", "must be positive"),
    ("deadline: 30ms", "deadline: 0ms", 6, "tasks[0].deadline", "must be positive"),
    ("name: n", "name: v", 10, "tasks[1].name", "used twice"),
    ("name: n", "name: root", 10, "tasks[1].name", "reserved"),
    ("name: n", "name: no/slash", 10, "tasks[1].name", "names a cgroup"),
    ("role: critical", "role: vital", 9, "tasks[0].role", "critical"),
    ("priority: 10", "priority: 100", 8, "tasks[0].priority", "99"),
    ("work: time:40ms", "work: time:300ms", 14, "tasks[1].work", "longer than its deadline"),
    ("work: time:40ms", "work: forever", 14, "tasks[1].work", "passes:N or time:DURATION"),
    ("work: time:40ms", "work: passes:0", 14, "tasks[1].work", ">= 1"),
    ("    work: time:40ms\n", "", 10, "tasks[1].work", "needs `work`"),
    ("workload: matrix1", "workload: matmull", 4, "tasks[0].workload", "unknown victim"),
    ("size: 2xLLC}", "size: 2xLLC, colour: red}", 12, "tasks[1].params", "colour"),
    ("op: write", "op: erase", 12, "tasks[1].params", "op="),
    ("workload: bw", "workload: BwWrite(LLC)", 12, "tasks[1].params", "takes no params"),
    ("workload: bw", "workload: 'cmd:stress-ng --cpu 1'", 11, "tasks[1].workload",
     "external commands"),
    ("    cpu: 1\n    priority", "    cpu: 7\n    priority", 7, "tasks[0].cpu",
     "does not exist"),
    ("role: best-effort", "role: best-effort\n    weight: 0", 17, "tasks[1].weight", "1"),
])
def test_errors_point_at_the_line_and_field(old, new, line, field, words):
    assert old in TWO
    err = _error(TWO.replace(old, new, 1))
    assert (err.source, err.line, err.field) == ("set.yaml", line, field), str(err)
    assert words in err.message, str(err)


def test_offline_cpu_is_refused():
    err = _error(VICTIM, _board(offline=(1,)))
    assert (err.line, err.field) == (7, "tasks[0].cpu") and "offline" in err.message


def test_victim_params_are_checked_against_the_native_option_table():
    err = _error(VICTIM + "    params: {n: 64, reps: 3}\n")
    assert err.field == "tasks[0].params" and "no parameter 'reps'" in err.message


def test_victim_with_work_is_refused():
    err = _error(VICTIM + "    work: passes:2\n")
    assert err.field == "tasks[0].work" and "for aggressor tasks" in err.message


def test_boolean_param_must_be_quoted():
    err = _error(VICTIM.replace("matrix1", "susan") + "    params: {mode: yes}\n")
    assert err.field == "tasks[0].params.mode" and "quote it" in err.message


def test_unknown_key_and_empty_task_list():
    assert _error(VICTIM + "    colour: red\n").field == "tasks[0].colour"
    assert _error("name: t\ntasks: []\n").field == "tasks"


# ---- any program as a best-effort co-runner (`command`) ----------------------------------------

CRITICAL = VICTIM


def _command(exe: Path, role: str = "best-effort", extra: str = "") -> str:
    return (CRITICAL + f"  - name: filter\n    command: [{exe}, --in, x.pgm, '2']\n"
            f"    cpu: 1\n    role: {role}\n" + extra)


@pytest.fixture
def filter_exe(tmp_path) -> Path:
    exe = tmp_path / "filter"
    exe.write_text("#!/bin/sh\nexit 0\n")  # no markers, no runtime: any program will do
    exe.chmod(0o755)
    return exe


def test_a_best_effort_task_may_be_any_program_as_it_is(filter_exe):
    task = _load(_command(filter_exe)).task("filter")
    assert (task.binary, task.kind, task.args) == ("command", str(filter_exe),
                                                   ("--in", "x.pgm", "2"))
    assert not task.reports_jobs and task.period_ns is None and task.deadline_ns is None
    spec = task.periodic_spec(jobs=7, cgroups=("/sys/fs/cgroup/x",))
    assert spec.argv()[-5:] == ["--", str(filter_exe), "--in", "x.pgm", "2"]
    assert ["--cpu", "1"] == spec.argv()[spec.argv().index("--cpu"):][:2]
    assert task.to_dict()["args"] == ["--in", "x.pgm", "2"]
    assert _load(CRITICAL).task("v").reports_jobs


@pytest.mark.parametrize("role, extra, line, field, words", [
    ("critical", "", 11, "tasks[1].command", "only a best-effort task may be a command"),
    ("best-effort", "    period: 10ms\n", 14, "tasks[1].period", "no period"),
    ("best-effort", "    deadline: 5ms\n", 14, "tasks[1].deadline", "no deadline"),
    ("best-effort", "    overrun: late\n", 14, "tasks[1].overrun", "no overrun"),
    ("best-effort", "    work: time:2ms\n", 14, "tasks[1].work", "`work` is an aggressor's"),
    ("best-effort", "    params: {op: write}\n", 14, "tasks[1].params", "own arguments"),
    ("best-effort", "    workload: bw\n", 10, "tasks[1]", "not workload and command"),
])
def test_a_command_is_refused_where_it_cannot_run_as_asked(filter_exe, role, extra, line,
                                                           field, words):
    err = _error(_command(filter_exe, role, extra))
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message, str(err)


def test_a_command_must_be_an_executable_file(filter_exe, tmp_path):
    filter_exe.chmod(0o644)
    err = _error(_command(filter_exe))
    assert (err.line, err.field) == (11, "tasks[1].command") and "not an executable" in str(err)
    err = _error(_command(tmp_path / "missing"))
    assert err.field == "tasks[1].command" and "no such file" in err.message
    err = _error(_command(tmp_path))
    assert err.field == "tasks[1].command" and "is a directory" in err.message
    err = _error(CRITICAL + "  - name: f\n    command: []\n    role: best-effort\n")
    assert err.field == "tasks[1].command" and "at least 1 item" in err.message
    err = _error(CRITICAL + "  - name: f\n    role: best-effort\n")
    assert err.field == "tasks[1]" and "not none" in err.message


def test_a_workload_or_program_still_needs_its_period():
    err = _error(VICTIM.replace("    period: 100ms\n", ""))
    assert err.field == "tasks[0]" and "`period` is required" in err.message
