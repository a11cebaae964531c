"""Gang scheduling: task-set fields, the interval arithmetic the checks rest on, and real runs
on the freezer: two gangs of one partition never run together (from the jobs and the
scheduler's log), and a virtual gang's members run together."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from intercore.base.errors import InputError
from intercore.host.topology import read_topology
from intercore.measure.periodic.runner import JobResult
from intercore.measure.periodic.taskset import load
from intercore.mitigate.bandwidth import gang as g

TOPO = read_topology()

TASKSET = """\
name: gang-test
tasks:
  - {name: hi, workload: matmul, params: {n: 32, k: 2048, m: 9}, period: 40ms, offset: 3ms,
     cpu: %(a)d, priority: 20, role: critical, gang: hi, partition: p0}
  - {name: lo, workload: matmul, params: {n: 512, k: 4096, m: 9}, period: 40ms,
     cpu: %(b)d, priority: 10, role: critical, partition: p0}
  - {name: va, workload: matmul, params: {n: 16, k: 1024, m: 9}, period: 40ms, offset: 2ms,
     cpu: %(a)d, priority: 30, role: critical, gang: vg, partition: p1}
  - {name: vb, workload: matmul, params: {n: 16, k: 1024, m: 9}, period: 40ms, offset: 2ms,
     cpu: %(b)d, priority: 30, role: critical, gang: vg, partition: p1}
  - {name: noise, workload: bw, params: {op: write, size: 4M}, period: 20ms, work: "time:15ms",
     role: best-effort}
"""


def taskset(tmp_path: Path, text: str = TASKSET):
    path = tmp_path / "ts.yaml"
    cpus = TOPO.online_cpus
    path.write_text(text % {"a": cpus[0], "b": cpus[-1]})
    return load(path, TOPO)


def test_gangs_from_the_task_set(tmp_path):
    ts = taskset(tmp_path)
    gangs = {x.name: x for x in g.gangs_of(ts)}
    assert set(gangs) == {"hi", "lo", "vg"}
    assert gangs["vg"].members == ("va", "vb") and gangs["vg"].priority == 30
    assert gangs["lo"].members == ("lo",) and gangs["lo"].partition == "p0"
    plan = g.gang_plan(ts)
    assert [grp.name for grp in plan.groups] == ["hi", "lo", "vg", g.BE_GROUP]
    assert plan.group_of("noise").name == g.BE_GROUP


@pytest.mark.parametrize("edit, field", [
    (("period: 40ms, offset: 2ms,\n     cpu: %(b)d", "period: 20ms, offset: 2ms,\n     cpu: %(b)d"),
     "tasks[3].period"),
    (("role: best-effort}", "role: best-effort, gang: hi}"), "tasks[4].gang"),
    (("gang: hi, partition: p0", "gang: 'bad/name', partition: p0"), "tasks[0].gang"),
])
def test_gang_fields_are_checked_with_file_and_line(tmp_path, edit, field):
    with pytest.raises(InputError) as exc:
        taskset(tmp_path, TASKSET.replace(*edit))
    assert exc.value.field == field and exc.value.line is not None


def job(i: int, start: int, end: int) -> JobResult:
    return JobResult(i, start, start, end, end - start, end - start, False, 0)


def test_interval_arithmetic():
    log = [g.LogEntry(10, "freeze", "lo", "preempted"), g.LogEntry(20, "thaw", "lo", "grant"),
           g.LogEntry(50, "freeze", "lo", "idle")]
    frozen = g.frozen_intervals(log, "lo", 100)
    assert frozen == [(10, 20), (50, 100)]
    ran = g.executed([job(0, 0, 30), job(1, 40, 60)], frozen)
    assert ran == [(0, 10), (20, 30), (40, 50)]
    assert g.overlap_ns(ran, [(10, 20)]) == 0
    assert g.overlap_ns(ran, [(5, 25)]) == 10


@pytest.mark.slow
@pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="needs two CPUs")
def test_gangs_of_one_partition_never_run_together(real_cgroups, test_root, tmp_path):
    ts = taskset(tmp_path)
    jobs = {"hi": 15, "lo": 15, "va": 15, "vb": 15, "noise": 30}
    run = g.run_scenario(ts, "rt-gang", jobs, cpu=None, priority=90, lead_ns=0,
                         log_path=tmp_path / "gang.jsonl", root_name=test_root)
    assert all(len(run.results[t].jobs) == n for t, n in jobs.items())
    check = g.check_gangs(ts, run)
    (pair,) = check["same_partition"]
    assert (pair["a"], pair["b"]) == ("hi", "lo") and pair["overlap_ns"] == 0
    stats = {x.name: x for x in run.stats.gangs}
    # hi is released 3 ms into lo's longer job: lo is preempted, and both still finish.
    assert stats["lo"].preemptions >= 1
    assert stats["hi"].grants == 15 and run.stats.write_errors == 0
    # A virtual gang is thawed as one: its members start each job together (the rare job a
    # busy host delays on one CPU is what `max` reports; the typical one is what the
    # scheduler does).
    spread = check["virtual_gang_start_spread_ns"]
    assert spread["n"] == 15 and spread["median"] < 1_000_000
    # Best-effort work is frozen while gangs run, and thawed at the end.
    actions = [(e.group.endswith(g.BE_GROUP), e.action) for e in run.log]
    assert (True, "freeze") in actions and actions[-1] != (True, "freeze")


@pytest.mark.slow
def test_cli_refuses_a_task_set_without_critical_tasks(tmp_path):
    path = tmp_path / "ts.yaml"
    path.write_text("name: x\ntasks:\n  - {name: n, workload: bw, params: {op: read, size: 1M},"
                    " period: 20ms, work: 'time:5ms', role: best-effort}\n")
    got = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "gang", "--taskset",
                          str(path),
                          "--db", str(tmp_path / "r.db"), "-o", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 and "no critical task" in got.stderr
    assert not (tmp_path / "r.db").exists()


@pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="needs two CPUs")
def test_best_effort_is_regulated_only_while_a_gang_runs(real_cgroups, test_root, tmp_path):
    """--throttle regulate: ic-gang publishes the running-gang count, ic-regulate enforces the
    best-effort budget only while it is not 0 (RT-Gang's throttling), and freezes nothing
    else."""
    from intercore.mitigate.bandwidth.regulator import CPU_CLOCK_EVENT, RegulatorSpec

    ts = taskset(tmp_path)
    jobs = {"hi": 10, "lo": 10, "va": 10, "vb": 10, "noise": 20}

    def regulate(directory: str, gate: str) -> RegulatorSpec:
        return RegulatorSpec(best_effort=(directory,), event=CPU_CLOCK_EVENT, budget=200_000,
                             period_ns=1_000_000, gate=gate)

    run = g.run_scenario(ts, "rt-gang", jobs, cpu=None, priority=90, lead_ns=0,
                         log_path=tmp_path / "gang.jsonl", root_name=test_root,
                         regulate=regulate)
    reg = run.regulator
    assert reg is not None and reg.periods > 0
    # Gangs run a few ms of every 40 ms: most periods are gated, some regulated.
    assert 0 < reg.gated_periods < reg.periods, reg
    assert not [e for e in run.log if e.group.endswith(g.BE_GROUP)]  # never frozen by ic-gang
    assert g.check_gangs(ts, run)["same_partition"][0]["overlap_ns"] == 0
