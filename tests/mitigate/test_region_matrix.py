"""The region-level matrix and Algorithm 1 from it: hand-made whole-job matrices, heatmaps
and platform models, and paired comparisons computed from simulated samples (a simulated
host: the values are chosen, the code that turns them into cells and a plan is the real one).
"""

import json
from pathlib import Path

import pytest

from intercore.compile.weights import Heatmap
from intercore.base.errors import InputError
from intercore.measure.harness.paired import VictimSpec
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.harness.comparison import comparisons
from intercore.base.sample import Sample
from intercore.measure.periodic.taskset import Task, TaskSet
from intercore.mitigate.plan import algorithm1
from intercore.mitigate.plan.record import CgroupPlan
from intercore.mitigate.plan.region_matrix import RegionMeasurement, build
from intercore.model.loader import loads
from intercore.model.sharing import CpuChannels

DATA = Path(__file__).parent / "data"

# CPU 0 has its own bus and memory; CPUs 1 and 2 share bus1, the L2 and mem1.
ISLANDS = """
format: 1
platform: two-islands
components:
  core0: {kind: initiator, role: core, cpu: 0}
  core1: {kind: initiator, role: core, cpu: 1}
  core2: {kind: initiator, role: core, cpu: 2}
  l1d[0-2]: {kind: target, role: cache, level: 1, private_to: "core[i]"}
  bus0: {kind: transporter}
  bus1: {kind: transporter}
  l2: {kind: target, role: cache, level: 2}
  mem0: {kind: target, role: memory}
  mem1: {kind: target, role: memory}
links: [core0>l1d0, core1>l1d1, core2>l1d2, core0>bus0, bus0>mem0, core1>bus1, core2>bus1,
        bus1>l2, bus1>mem1]
apps: {"A[0-2]": "core[i]"}
data: {d0: mem0, d1: mem1, d2: mem1}
transactions:
  t[0-2]_l1: {app: "A[i]", op: load, target: "l1d[i]"}
  t0_mem: {app: A0, op: load, data: d0}
  t1_mem: {app: A1, op: load, data: d1}
  t2_mem: {app: A2, op: load, data: d2}
  t2_l2: {app: A2, op: store, target: l2}
"""


def _channels() -> CpuChannels:
    return CpuChannels(loads(ISLANDS, "islands.yaml"))


def _task(name, role, cpu, priority=0, deadline_ns=10_000_000):
    return Task(name=name, role=role, workload=VictimSpec("matmul"), period_ns=10_000_000,
                deadline_ns=deadline_ns, offset_ns=0, cpu=cpu, priority=priority, weight=100,
                overrun="skip", work=None)


def _taskset(ctl_cpu=1, writer_cpu=2):
    return TaskSet(name="regions", source="regions.yaml",
                   tasks=(_task("ctl", "critical", ctl_cpu),
                          _task("writer", "best-effort", writer_cpu)))


def _job(ctl_beside_writer, writer_beside_ctl=1.0):
    return InterferenceMatrix(tasks=("ctl", "writer"), statistic="max",
                              directed=((None, ctl_beside_writer), (writer_beside_ctl, None)),
                              n=((0, 40), (20, 0)), misses=((0, 2), (0, 0)),
                              alone_misses=((0, 40), (0, 20)),
                              provenance={"source": "hand-made"})


def _heatmap(*regions):
    """regions: (name, Δ̂, safe bound, measured Δ or None)."""
    return Heatmap.model_validate({"format": "intercore.heatmap/1", "regions": [
        {"region": name, "delta": d, "interval": [d, safe], "weight": 0.5,
         **({"measured": {"delta": m, "n": 30}} if m is not None else {})}
        for name, d, safe, m in regions]})


# ---- old files ---------------------------------------------------------------------------------

def test_old_matrix_and_plan_files_load_unchanged():
    """Files written by the code before region cells existed (tests/mitigate/data, made with
    the previous release): the matrix reads as it was written and plans as it did."""
    written = json.loads((DATA / "old-matrix.json").read_text())
    matrix = InterferenceMatrix.load_json(DATA / "old-matrix.json")
    assert matrix.regions == () and matrix.by_round == ()
    # Every field it wrote, as written; the fields added since are empty.
    assert {k: v for k, v in matrix.to_dict().items()
            if k not in ("regions", "by_round")} == written
    old_plan = CgroupPlan.load(DATA / "old-plan.json")
    written_plan = json.loads((DATA / "old-plan.json").read_text())
    ts = TaskSet(name="old", source="old.yaml",
                 tasks=(_task("ctl", "critical", 1, priority=10, deadline_ns=5_000_000),
                        _task("writer", "best-effort", 1, deadline_ns=5_000_000),
                        _task("logger", "best-effort", 0, deadline_ns=5_000_000)))
    again = algorithm1.plan(ts, matrix, 1.5, matrix_source="old-matrix.json").to_dict()
    assert _old_keys(again, written_plan) == written_plan
    assert old_plan.free == () and old_plan.channels == ()


def _old_keys(new, old):
    """`new` restricted to the keys the old file has (new fields default when absent)."""
    if isinstance(old, dict):
        return {k: _old_keys(new[k], v) for k, v in old.items()}
    if isinstance(old, list):
        return [_old_keys(n, o) for n, o in zip(new, old)]
    return new


def test_a_region_matrix_without_regions_is_the_whole_job_matrix():
    job = _job(1.8)
    region = build(_taskset(), job)
    assert region.directed == job.directed and region.n == job.n
    [cell] = region.regions
    assert (cell.region, cell.provenance, cell.value, cell.n, cell.misses) == \
        (None, "measured", 1.8, 40, 2)
    assert algorithm1.plan(_taskset(), region, 1.5).groups == \
        algorithm1.plan(_taskset(), job, 1.5).groups


# ---- predicted cells ---------------------------------------------------------------------------

def test_a_prediction_decides_by_its_safe_bound_and_never_below_a_measurement():
    heat = _heatmap(("lut", 1.1, 1.3, 1.4), ("filter", 1.2, 1.9, None), ("io", 1.0, 1.05, None))
    m = build(_taskset(), _job(1.3), heatmaps={"ctl": ("ctl.heatmap.json", heat)})
    cells = {c.region: c for c in m.cells("ctl", "writer")}
    assert (cells["lut"].value, cells["lut"].bound) == (1.4, 1.4)  # raised to its measurement
    assert (cells["filter"].value, cells["filter"].bound) == (1.2, 1.9)
    assert cells[None].provenance == "measured" and cells[None].value == 1.3
    # The whole-job scalar is the worst region, by the prediction's safe bound.
    assert m.degradation("ctl", "writer") == 1.9 and m.n[0][1] == 40
    assert m.cells("ctl", "writer")[0].region == "filter"
    assert any("predicted" in n and "ctl/writer" in n for n in m.notes)


def test_a_pair_with_only_predictions_has_a_value_but_no_measured_jobs():
    job = InterferenceMatrix(tasks=("ctl", "writer"), statistic="max",
                             directed=((None, None), (1.0, None)), n=((0, 0), (20, 0)))
    m = build(_taskset(), job, heatmaps={"ctl": ("h.json", _heatmap(("lut", 1.2, 1.6, None)))})
    assert m.degradation("ctl", "writer") == 1.6 and m.n[0][1] == 0
    p = algorithm1.plan(_taskset(), m, 1.5)
    assert [(x.provenance, x.region, x.windows) for x in p.pairs] == \
        [("predicted", "lut", ("lut",))]


# ---- measured region cells ---------------------------------------------------------------------

def _samples(slowdown_by_regime: dict[str, float], n: int = 12):
    """Paired iso/int samples of region 1 ("filter") and region 0, alternating regimes."""
    out, regimes = [], list(slowdown_by_regime)
    for pair in range(n):
        regime = regimes[pair % len(regimes)]
        for region, name in ((0, "total"), (1, "filter")):
            iso = 1_000_000 + 1_000 * pair
            for cond, time in (("iso", iso), ("int", int(iso * slowdown_by_regime[regime]))):
                out.append(Sample(0, 2 * pair + (cond == "int"), pair, cond,
                                  "writer" if cond == "int" else "", region, name, time, time,
                                  0, 1, regime=regime))
    return out


def test_a_measured_region_takes_its_worst_regime_and_replaces_the_prediction():
    filt = next(c for c in comparisons(_samples({"shared": 1.7, "not-shared": 1.1}))
                if c.region_name == "filter")
    heat = _heatmap(("filter", 1.2, 1.3, None), ("lut", 1.0, 1.1, None))
    m = build(_taskset(), _job(1.25), heatmaps={"ctl": ("h.json", heat)},
              measured=[RegionMeasurement("ctl", "writer", filt, "store invocation 7")])
    cells = {c.region: c for c in m.cells("ctl", "writer")}
    measured = cells["filter"]
    assert measured.provenance == "measured" and measured.regime == "shared"
    assert measured.value == pytest.approx(1.7, rel=1e-3) and measured.n == 6
    assert measured.ci[0] <= measured.value <= measured.ci[1] == measured.bound
    assert cells["lut"].provenance == "predicted"
    assert m.degradation("ctl", "writer") == measured.value
    p = algorithm1.plan(_taskset(), m, 1.5)
    assert p.group("ctl").windows == ("filter",)
    assert "measured filter" in p.pairs[0].why(1.5)


def test_windows_fall_back_to_whole_jobs_when_no_named_region_exceeds_theta():
    heat = _heatmap(("lut", 1.1, 1.2, None))
    m = build(_taskset(), _job(1.8), heatmaps={"ctl": ("h.json", heat)})
    p = algorithm1.plan(_taskset(), m, 1.5)
    assert p.pairs[0].windows == () and p.group("ctl").windows == ()
    assert [(c.channel, c.mitigation) for c in
            algorithm1.plan(_taskset(), build(_taskset(), _job(1.8), channels=_channels()),
                            1.5).channels][:1] == [("bus1.load", "freeze (whole job)")]


@pytest.mark.parametrize("ctl_cpu, writer_cpu, ctl_priority, windowed", [
    (1, 2, 0, True),       # two CPUs: the writer never holds the control task's
    (1, 1, 10, True),      # one CPU, the control task preempts the writer (FIFO above OTHER)
    (1, 1, 0, False),      # one CPU, equal priority: a job released behind the writer waits
    (1, None, 0, False),   # the writer may run anywhere, its own CPU included
])
def test_windows_only_where_the_critical_task_can_reach_them(ctl_cpu, writer_cpu, ctl_priority,
                                                             windowed):
    ts = TaskSet(name="regions", source="regions.yaml",
                 tasks=(_task("ctl", "critical", ctl_cpu, priority=ctl_priority),
                        _task("writer", "best-effort", writer_cpu)))
    heat = _heatmap(("lut", 1.9, 2.2, None), ("pid", 1.0, 1.1, None))
    p = algorithm1.plan(ts, build(ts, _job(1.8), heatmaps={"ctl": ("h.json", heat)}), 1.5)
    assert p.group("ctl").windows == (("lut",) if windowed else ())
    warned = [w for w in p.warnings if w.code == "whole-jobs"]
    assert bool(warned) != windowed
    if warned:
        assert warned[0].tasks == ("ctl", "writer")
        assert "ctl's regions above θ (lut) are protected as whole jobs" in warned[0].message


# ---- model-free pairs --------------------------------------------------------------------------

def test_a_pair_the_model_declares_free_needs_no_separation_once_a_measurement_checks_it():
    ts = _taskset(ctl_cpu=0, writer_cpu=1)
    job = _job(1.02, 1.01)
    # Without the model, θ = 1.01 separates the pair on its 1.02 ...
    assert algorithm1.plan(ts, job, 1.01).pairs
    m = build(ts, job, channels=_channels())
    [cell] = m.cells("ctl", "writer")
    assert (cell.provenance, cell.channels, cell.check.value, cell.check.n) == \
        ("model-free", (), 1.02, 40)
    # ... with it, the model's claim, checked, leaves the pair together.
    p = algorithm1.plan(ts, m, 1.01)
    assert p.pairs == () and [(f.a, f.b, f.check) for f in p.free] == [("ctl", "writer", 1.02)]


def test_a_measurement_that_contradicts_the_model_is_kept_and_named():
    ts = _taskset(ctl_cpu=0, writer_cpu=1)
    m = build(ts, _job(1.6), channels=_channels())
    [cell] = m.cells("ctl", "writer")
    assert cell.provenance == "measured"
    assert any("contradicted" in n and "1.6" in n for n in m.notes)
    assert [(x.a, x.b) for x in algorithm1.plan(ts, m, 1.5).pairs] == [("ctl", "writer")]


def test_an_unchecked_free_claim_is_not_acted_on():
    ts = _taskset(ctl_cpu=0, writer_cpu=1)
    job = InterferenceMatrix(tasks=("ctl", "writer"), statistic="max",
                             directed=((None, None), (1.0, None)), n=((0, 0), (20, 0)))
    m = build(ts, job, channels=_channels(),
              heatmaps={"ctl": ("h.json", _heatmap(("lut", 1.2, 1.6, None)))})
    assert [c.provenance for c in m.cells("ctl", "writer")] == ["predicted"]
    assert any("not declared free" in n for n in m.notes)


def test_channels_say_what_covers_them_or_why_nothing_does():
    heat = _heatmap(("filter", 1.2, 1.9, None))
    m = build(_taskset(), _job(1.3), channels=_channels(), heatmaps={"ctl": ("h", heat)})
    cover = {c.channel: c for c in algorithm1.plan(_taskset(), m, 1.5).channels}
    assert set(cover) == {"bus1.load", "bus1.store", "mem1.load"}
    assert {c.mitigation for c in cover.values()} == {"freeze windows"}
    low = build(_taskset(), _job(1.4999996), channels=_channels())
    p = algorithm1.plan(_taskset(), low, 1.5)
    assert {c.mitigation for c in p.channels} == {"unmitigated"}
    assert "I = 1.4999996 is at most θ = 1.5" in p.channels[0].reason
    [warning] = [w for w in p.warnings if w.code == "unprotected"]
    assert "1.4999996 (measured, whole job) beside writer" in warning.message


# ---- bad input ---------------------------------------------------------------------------------

def test_a_region_matrix_whose_job_value_is_not_its_worst_region_is_refused(tmp_path):
    m = build(_taskset(), _job(1.3), heatmaps={"ctl": ("h", _heatmap(("lut", 1.2, 1.9, None)))})
    doc = m.to_dict()
    doc["directed"][0][1] = 1.3
    doc["symmetric"][0][1] = doc["symmetric"][1][0] = 1.3
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(InputError, match="worst of its region cells is 1.9") as info:
        InterferenceMatrix.load_json(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("change, words", [
    ({"provenance": "model-free"}, "model-free cell needs"),
    ({"provenance": "predicted", "bound": None}, "safe bound"),
    ({"n": 0}, "n must be at least 1"),
    ({"task": "nobody"}, "not in the matrix"),
])
def test_invalid_region_cells_are_refused_naming_the_field(tmp_path, change, words):
    doc = build(_taskset(), _job(1.3)).to_dict()
    doc["regions"][0].update(change)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(InputError, match=words) as info:
        InterferenceMatrix.load_json(path)
    assert str(info.value).startswith(f"{path}:")


# ---- the model's channels between two CPUs ---------------------------------------------------

def test_the_model_names_the_channels_between_two_cpus_or_why_it_cannot():
    c = _channels()
    assert c.between(0, 1).free
    assert c.between(1, 2).channels == ("bus1.load", "bus1.store", "mem1.load")
    assert c.between(1, 1).channels[0] == "cpu1 time"  # one CPU: its time is shared too
    unpinned, unmodelled = c.between(0, None), c.between(0, 5)
    assert not unpinned.free and "not pinned" in unpinned.unknown
    assert not unmodelled.free and "host CPU 5" in unmodelled.unknown
    # No model, or an unpinned task: no claim either way, and no channels on the cells.
    m = build(_taskset(ctl_cpu=None), _job(1.02), channels=c)
    assert [(x.provenance, x.channels) for x in m.cells("ctl", "writer")] == \
        [("measured", None)]


def test_safe_bounds_wider_than_the_whole_job_allows_are_named_not_acted_on():
    # lut is a third of the work: beside a job measured at 1.05 it can be at most
    # 1 + 0.05 / (1/3) = 1.15, so a bound of 2.2 is named; pid's 1.05 fits (at most 1.075).
    heat = _heatmap(("lut", 1.1, 2.2, None), ("pid", 1.0, 1.05, None))
    heat = heat.model_copy(update={"regions": (
        heat.regions[0].model_copy(update={"weight": 1.0}),
        heat.regions[1].model_copy(update={"weight": 2.0}))})
    m = build(_taskset(), _job(1.05), heatmaps={"ctl": ("h.json", heat)})
    [note] = [n for n in m.notes if "disagree" in n]
    assert note.startswith("ctl beside writer: the heatmap's safe bounds exceed what the whole "
                           "job's measured 1.050 allows") and "(lut 2.20 > 1.15)" in note
    assert algorithm1.plan(_taskset(), m, 1.5).group("ctl").windows == ("lut",)
    assert not [n for n in build(_taskset(), _job(1.9), heatmaps={"ctl": ("h.json", heat)}
                                 ).notes if "disagree" in n]
