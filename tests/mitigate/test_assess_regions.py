"""The regions step's measurements (assess/regions.py): which critical programs' regions the
harness measures beside their worst co-runner, and why the others are not; then one real
measurement of the example's control_task beside a DRAM writer on the other CPU, its regions
stored and cited. And the search step's targets (assess/search.py): which programs it
searches, on which CPUs, over which candidates. Structure only: the Δs are this host's."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from intercore.assess import regions, search
from intercore.base import yamlfile
from intercore.host.topology import read_topology
from intercore.measure.aggressors.presets import PRESETS
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.taskset import resolve
from intercore.store import Store

from _procs import programs_running

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
     work: time:1ms, cpu: {quiet}, role: best-effort}}
"""


def _taskset(example: Path, ctl: int, writer: int, quiet: int | None = None):
    path = example / "r.taskset.yaml"
    path.write_text(TASKSET.format(ctl=ctl, writer=writer,
                                   quiet=writer if quiet is None else quiet))
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


def test_beside_a_worst_co_runner_it_cannot_run_the_harness_takes_the_worst_it_can(example):
    """The writer, worst, shares ctl's CPU: ctl's regions are measured beside quiet, on the
    other CPU, and the note says which pair is left to the whole-job matrix."""
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[-1], quiet=cpu[0])
    found, notes = regions.targets(ts, _matrix(ts), runs=3)
    [t] = found
    assert (t.task, t.beside) == ("ctl", "quiet")
    assert (t.request.aggressors, t.request.aggressor_cpus) == \
        ((ts.task("quiet").workload.label,), (cpu[0],))
    assert any(n.startswith("ctl's regions beside writer are not measured: both run on CPU")
               and n.endswith("; measured beside quiet instead, the worst co-runner the "
                              "harness can run") for n in notes), notes


def test_the_worst_aggressor_is_searched_for_each_critical_program_on_every_other_cpu(
        example):
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[-1])
    found, notes = search.targets(ts, search.spaces(ts, TOPO, quick=True), TOPO, pairs=2)
    [t] = found
    assert t.task == "ctl" and t.candidates == tuple(search.space(TOPO, cpu[-1], quick=True))
    assert set(t.candidates) <= set(PRESETS) and len(t.candidates) >= 8
    r = t.request
    assert (r.victim_cpu, r.aggressor_cpus, r.runs) == (cpu[-1], tuple(cpu[:-1]), 2)
    assert r.args == regions.targets(_taskset(example, cpu[-1], cpu[0]), _matrix(ts),
                                     runs=2)[0][0].request.args
    [note] = notes
    assert note.startswith("chase is not searched: it is the built-in")
    # The whole space adds footprints, patterns, streams and MLP to the presets.
    assert len(search.space(TOPO, cpu[-1], quick=False)) > 5 * len(t.candidates)


def test_the_worst_aggressor_found_runs_beside_the_task_as_tasks_of_its_own(example):
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[0])
    [preset] = search.aggressor_tasks(ts, "ctl", "PLLWrite(DRAM)", TOPO)
    ctl = ts.task("ctl")
    assert (preset.name, preset.role, preset.cpu, preset.priority) == \
        ("worst-found-0", "best-effort", cpu[0], 0)
    assert (preset.period_ns, preset.offset_ns, preset.work) == (ctl.period_ns, 0, "time:9ms")
    assert preset.workload.label == "PLLWrite(DRAM)" and preset.workload.cpu == cpu[0]
    # A member pinned by the spec keeps its CPU; a name a task already has is not reused.
    named = replace(ts, tasks=(*ts.tasks, replace(ts.task("quiet"), name="worst-found-0")))
    [pinned] = search.aggressor_tasks(named, "ctl", f"bw:op=read,size=64K@{cpu[0]}", TOPO)
    assert (pinned.name, pinned.cpu) == ("worst-found-0'", cpu[0])
    spec = pinned.periodic_spec(5)
    assert (spec.binary, spec.kind, spec.jobs, spec.work) == ("aggr", "bw", 5, "time:9ms")


def test_a_searchs_least_time_follows_successive_halving():
    # 10 candidates x 2 pairs, 5 x 4, then the final 2 x 8: two runs a pair.
    assert search.seconds_at_least(10, 2, 0.5) == (20 + 20 + 16) * 2 * 0.5
    assert search.seconds_at_least(2, 3, 1.0) == 12.0
    assert search.seconds_at_least(0, 3, 1.0) == 0.0


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


FILTER_SET = """name: f
tasks:
  - {{name: ctl, program: [./control_task, --steps-per-job, "50"], period: 10ms,
     deadline: 5ms, cpu: {ctl}, priority: 10, role: critical}}
  - {{name: filter, program: [./image_filter, --width, "1024", --height, "1024",
     --rows-per-job, "256"], period: 20ms, cpu: {filter}, role: best-effort}}
  - {{name: copy, command: [/bin/cat, /dev/null], cpu: {filter}, role: best-effort}}
"""


def _filter_set(example: Path):
    cpu = TOPO.online_cpus
    path = example / "f.taskset.yaml"
    path.write_text(FILTER_SET.format(ctl=cpu[-1], filter=cpu[0]))
    ts = resolve(yamlfile.read(path), TOPO)
    names = ts.names
    worst = {("ctl", "copy"): 1.9, ("ctl", "filter"): 1.4}  # the command worst of all
    # copy reports no jobs: its row is empty by construction
    return ts, InterferenceMatrix(
        tasks=names, statistic="max",
        directed=tuple(tuple(None if a in (b, "copy") else worst.get((a, b), 1.0)
                             for b in names) for a in names),
        n=tuple(tuple(0 if a in (b, "copy") else 10 for b in names) for a in names),
        progress_unknown=("copy",))


def test_a_co_runner_that_is_the_users_program_is_the_harness_aggressor_at_its_period(
        example):
    ts, matrix = _filter_set(example)
    found, notes = regions.targets(ts, matrix, runs=3)
    [t] = found
    assert (t.task, t.beside) == ("ctl", "filter")
    filt = ts.task("filter").workload
    [spelt] = t.request.aggressors
    assert spelt == "cmd:" + shlex.join([filt.path, "--jobs", str(regions.FOREVER_JOBS),
                                         "--period", "0.020000000", "--", *filt.args])
    assert t.request.aggressor_cpus == (TOPO.online_cpus[0],)
    # An unmodified program may end at any time: left to the whole-job matrix, said why.
    [note] = notes
    assert note.startswith("ctl's regions beside copy are not measured: the co-runner is an "
                           "unmodified program") and note.endswith("; measured beside filter "
                                                                   "instead, the worst "
                                                                   "co-runner the harness "
                                                                   "can run")


def test_the_control_tasks_regions_are_measured_beside_the_users_filter_program(
        example, tmp_path):
    """The filter runs at its period on the other CPU, paused between the interference
    halves; the regions are stored and cited, and nothing of the filter is left after."""
    ts, matrix = _filter_set(example)
    found, _ = regions.targets(ts, matrix, runs=3)
    measured, notes = regions.measure_targets(found, db=tmp_path / "s.db", argv=["test"],
                                              topo=TOPO, say=lambda _: None)
    assert notes == []
    assert sorted(m.comparison.region_name for m in measured) == ["fir", "lut", "pid"]
    assert {(m.task, m.beside) for m in measured} == {("ctl", "filter")}
    assert all(m.comparison.result.n == 3 for m in measured)
    assert programs_running(example / "image_filter") == []



def test_the_worst_co_runner_is_the_one_most_rounds_say_not_one_rounds_event(example):
    """quiet's max over every job comes from one round (a host event); the writer is worse
    in the other two: the regions and the protection run take the writer."""
    cpu = TOPO.online_cpus
    ts = _taskset(example, cpu[-1], cpu[0], quiet=cpu[0])
    m, names = _matrix(ts), ts.names

    def ctl_beside(writer: float, quiet: float):
        value = {("ctl", "writer"): writer, ("ctl", "quiet"): quiet}
        return tuple(tuple(value.get((a, b), m.directed[x][y]) for y, b in enumerate(names))
                     for x, a in enumerate(names))

    m = m.model_copy(update={"directed": ctl_beside(1.7, 3.0), "by_round": (
        ctl_beside(1.5, 3.0), ctl_beside(1.6, 1.0), ctl_beside(1.7, 1.1))})
    assert m.degradation("ctl", "quiet") == 3.0 > m.degradation("ctl", "writer")
    assert regions.co_runners(ts, m, "ctl") == ["writer", "quiet"]
    assert regions.worst_co_runner(ts, m, "ctl") == "writer"
