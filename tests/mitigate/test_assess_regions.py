"""The regions step's measurements (assess/regions.py): which critical programs' regions the
harness measures beside their worst co-runner, and why the others are not; then one real
measurement of the example's control_task beside a DRAM writer on the other CPU, its regions
stored and cited. Structure only: the Δs are this host's and may be anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from intercore.assess import regions
from intercore.base import yamlfile
from intercore.host.topology import read_topology
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.taskset import resolve
from intercore.store import Store

pytestmark = pytest.mark.slow  # the example is built first, as a user builds it (seconds)

TOPO = read_topology()
TASKSET = """name: r
tasks:
  - {{name: ctl, program: [./control_task, --steps-per-job, "50"], period: 10ms,
     deadline: 5ms, cpu: {ctl}, priority: 10, role: critical}}
  - {{name: chase, workload: ptrchase, period: 10ms, cpu: {ctl}, role: critical}}
  - {{name: writer, workload: bw, params: {{op: write, size: 2xLLC}}, period: 20ms,
     work: time:4ms, cpu: {writer}, role: best-effort}}
  - {{name: quiet, workload: bw, params: {{op: read, size: 16K}}, period: 20ms,
     work: time:1ms, cpu: {writer}, role: best-effort}}
"""


def _taskset(example: Path, ctl: int, writer: int):
    path = example / "r.taskset.yaml"
    path.write_text(TASKSET.format(ctl=ctl, writer=writer))
    return resolve(yamlfile.read(path), TOPO)


def _matrix(ts) -> InterferenceMatrix:
    """writer degrades every critical task more than quiet does."""
    names = ts.names
    value = {("ctl", "writer"): 1.8, ("ctl", "quiet"): 1.1, ("chase", "writer"): 1.6,
             ("chase", "quiet"): 1.0}
    directed = tuple(tuple(None if a == b else value.get((a, b), 1.0) for b in names)
                     for a in names)
    n = tuple(tuple(0 if a == b else 10 for b in names) for a in names)
    return InterferenceMatrix(tasks=names, statistic="max", directed=directed, n=n)


def test_the_users_program_is_measured_beside_its_worst_co_runner_on_another_cpu(example):
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[0])
    found, notes = regions.targets(ts, _matrix(ts), runs=4)
    [t] = found
    assert (t.task, t.beside) == ("ctl", "writer")
    r = t.request
    assert r.victim.endswith("control_task") and r.runs == 4
    assert r.args == ("--jobs", str(regions.JOBS_PER_RUN), "--period", "0.010000000", "--",
                      "--steps-per-job", "50")
    assert (r.victim_cpu, r.aggressor_cpus) == (cpu[-1], (cpu[0],))
    assert r.aggressors == (ts.task("writer").workload.label,)
    [note] = notes
    assert note.startswith("chase's regions beside writer are not measured: it is the "
                           "built-in")


def test_on_one_cpu_nothing_is_measured_per_region_and_the_reason_is_given(example):
    cpu = TOPO.online_cpus[-1]
    ts = _taskset(example, cpu, cpu)
    found, notes = regions.targets(ts, _matrix(ts), runs=4)
    assert found == []
    assert any(n.startswith("ctl's regions beside writer are not measured: both run on CPU")
               for n in notes)


def test_the_control_tasks_regions_are_measured_stored_and_cited(example, tmp_path):
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[0])
    found, _ = regions.targets(ts, _matrix(ts), runs=3)
    db = tmp_path / "s.db"
    measured, notes = regions.measure_targets(found, db=db, argv=["test"], topo=TOPO,
                                              say=lambda _: None)
    assert notes == []
    assert sorted(m.comparison.region_name for m in measured) == ["fir", "lut", "pid"]
    assert {(m.task, m.beside) for m in measured} == {("ctl", "writer")}
    [source] = {m.source for m in measured}
    invocation = int(source.removeprefix("store invocation "))
    with Store.open(db) as store:
        assert store.get_invocation(invocation) is not None
    assert all(m.comparison.result.n == 3 for m in measured)
