"""Algorithm 1 on hand-made matrices (values chosen by hand, not measured)."""

import itertools

import pytest

from intercore.base.errors import InputError
from intercore.measure.harness.paired import VictimSpec
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.periodic.taskset import Task, TaskSet
from intercore.mitigate.plan.algorithm1 import decisive, plan
from intercore.mitigate.plan.record import ROOT_GROUP, CgroupPlan


def _task(name, role="best-effort", cpu=1, priority=0, weight=100):
    return Task(name=name, role=role, workload=VictimSpec("matmul"), period_ns=100_000_000,
                deadline_ns=100_000_000, offset_ns=0, cpu=cpu, priority=priority,
                weight=weight, overrun="skip", work=None)


def _taskset(*tasks):
    return TaskSet(name="hand-made", source="test", tasks=tuple(tasks))


def _matrix(names, values, alone_ns=None):
    """`values[(a, b)]`: degradation of a beside b; unlisted pairs are 1.0 (no degradation);
    `alone_ns`, if given, each task's response time alone."""
    directed = tuple(tuple(None if a == b else values.get((a, b), 1.0) for b in names)
                     for a in names)
    n = tuple(tuple(0 if a == b else 20 for b in names) for a in names)
    return InterferenceMatrix(tasks=tuple(names), statistic="max", directed=directed, n=n,
                              alone_ns=alone_ns, provenance={"source": "hand-made"})


def _separated(p: CgroupPlan) -> set[str]:
    return {g.name for g in p.groups if g.separated}


def test_paper_pair_is_separated_and_the_best_effort_group_is_freezable():
    ts = _taskset(_task("victim", "critical", priority=10, weight=1000), _task("noise"))
    p = plan(ts, _matrix(ts.names, {("victim", "noise"): 2.0}))
    victim, noise = p.group("victim"), p.group("noise")
    assert (victim.tasks, noise.tasks) == (("victim",), ("noise",))
    assert victim.freezer and noise.freezer
    assert (victim.monitor, noise.monitor) == ("protect", "freeze")
    assert victim.freeze_while_active == ("noise",) and noise.freeze_while_active == ()
    assert (victim.cpus, victim.weight, victim.realtime) == ((1,), 1000, True)
    assert (noise.weight, noise.realtime) == (100, False)
    assert [(x.a, x.b, x.interference, x.a_beside_b, x.b_beside_a) for x in p.pairs] == \
        [("victim", "noise", 2.0, 2.0, 1.0)]
    assert p.evidence("noise") == p.pairs
    assert p.warnings == ()
    assert [g.name for g in p.groups] == ["victim", "noise"]  # no empty root group


@pytest.mark.parametrize("value, separated", [
    (1.5, False),          # θ exactly: not "> θ"
    (1.5 + 1e-9, True),    # just above
    (1.5 - 1e-9, False),   # just below
])
def test_threshold_is_strict(value, separated):
    ts = _taskset(_task("a", "critical"), _task("b"))
    p = plan(ts, _matrix(ts.names, {("a", "b"): value}), theta=1.5)
    assert (_separated(p) == {"a", "b"}) is separated
    if not separated:
        assert [g.name for g in p.groups] == [ROOT_GROUP]
        assert p.group(ROOT_GROUP).tasks == ("a", "b") and not p.group(ROOT_GROUP).freezer


def test_theta_moves_across_the_entries():
    ts = _taskset(*map(_task, "abc"))
    m = _matrix(ts.names, {("a", "b"): 3.0, ("b", "c"): 2.0, ("c", "a"): 1.6})
    separated = {theta: _separated(plan(ts, m, theta)) for theta in (1.2, 1.6, 2.0, 3.0)}
    assert separated == {1.2: {"a", "b", "c"}, 1.6: {"a", "b", "c"}, 2.0: {"a", "b"},
                         3.0: set()}


def test_asymmetric_input_uses_the_worse_direction():
    ts = _taskset(_task("a", "critical"), _task("b"), _task("c"))
    # Only c suffers beside a; a does not mind c. The pair is still high-contention.
    m = _matrix(ts.names, {("c", "a"): 1.9, ("a", "c"): 1.01, ("a", "b"): 1.2})
    p = plan(ts, m)
    assert _separated(p) == {"a", "c"}
    assert [(x.a, x.b, x.interference, x.a_beside_b, x.b_beside_a) for x in p.pairs] == \
        [("a", "c", 1.9, 1.01, 1.9)]
    assert p.group(ROOT_GROUP).tasks == ("b",)


def test_cluster_of_mutually_interfering_tasks_gets_one_group_each():
    names = ["nav", "logger", "video", "telemetry"]
    ts = _taskset(_task("nav", "critical", priority=20, weight=2000), _task("logger", cpu=0),
                  _task("video", cpu=0, weight=200), _task("telemetry", "critical", weight=50))
    cluster = {(a, b): 2.2 for a, b in itertools.permutations(["nav", "logger", "video"], 2)}
    p = plan(ts, _matrix(names, cluster))
    assert _separated(p) == {"nav", "logger", "video"}
    groups = {t: p.group_of(t).name for t in names}
    # every pair of the cluster is in different groups
    assert len({groups["nav"], groups["logger"], groups["video"]}) == 3
    assert groups["telemetry"] == ROOT_GROUP
    assert p.group("nav").freeze_while_active == ("logger", "video")
    assert set(p.group("logger").separated_from) == {"nav", "video"}
    assert len(p.pairs) == 3
    assert [(w.code, w.tasks) for w in p.warnings] == [
        ("unprotected", ("telemetry",)), ("best-effort-pair", ("logger", "video"))]
    root = p.group(ROOT_GROUP)
    assert (root.monitor, root.freezer, root.weight, root.cpus) == ("none", False, 50, (1,))


def test_two_critical_tasks_in_a_pair_are_flagged():
    ts = _taskset(_task("a", "critical"), _task("b", "critical"))
    p = plan(ts, _matrix(ts.names, {("a", "b"): 1.8}))
    assert _separated(p) == {"a", "b"}
    assert [w.code for w in p.warnings] == ["critical-pair"]
    assert "cannot protect one critical task from another" in p.warnings[0].message
    assert p.group("a").freeze_while_active == ()  # nothing it may freeze


def test_tasks_without_a_high_pair_share_the_root_group_with_summed_weight_and_cpus():
    ts = _taskset(_task("a", "critical"), _task("b"), _task("c", cpu=0, weight=300),
                  _task("d", cpu=1, weight=9900))
    p = plan(ts, _matrix(ts.names, {("a", "b"): 4.0}))
    root = p.group(ROOT_GROUP)
    assert root.tasks == ("c", "d")
    assert root.cpus == (0, 1)
    assert root.weight == 10000  # capped at the cpu.weight maximum
    assert [t.group for t in p.tasks] == ["a", "b", ROOT_GROUP, ROOT_GROUP]


def test_unpinned_task_gives_its_group_every_cpu():
    ts = _taskset(_task("a", "critical"), _task("b", cpu=None), _task("c", cpu=None))
    p = plan(ts, _matrix(ts.names, {("a", "b"): 4.0}))
    assert p.group("b").cpus is None and p.group(ROOT_GROUP).cpus is None


def test_unmeasured_pair_is_an_error():
    ts = _taskset(_task("a"), _task("b"))
    m = InterferenceMatrix(tasks=("a", "b"), statistic="p99", directed=((None, 1.2),
                                                                        (None, None)),
                           n=((0, 5), (0, 0)))
    with pytest.raises(InputError, match="no value for a/b"):
        plan(ts, m)


@pytest.mark.parametrize("theta", [1.0, 0.5, float("nan"), float("inf")])
def test_theta_must_be_a_finite_ratio_above_one(theta):
    ts = _taskset(_task("a"), _task("b"))
    with pytest.raises(InputError, match="θ"):
        plan(ts, _matrix(ts.names, {}), theta)


def test_matrix_and_task_set_must_name_the_same_tasks():
    ts = _taskset(_task("a"), _task("b"))
    with pytest.raises(InputError, match="not in the matrix: b; not in the task set: c"):
        plan(ts, _matrix(["a", "c"], {}))


def test_matrix_order_does_not_matter():
    ts = _taskset(_task("a", "critical"), _task("b"), _task("c"))
    values = {("a", "c"): 2.0}
    assert plan(ts, _matrix(["c", "b", "a"], values)).groups == \
        plan(ts, _matrix(["a", "b", "c"], values)).groups


def test_plan_round_trips_through_json(tmp_path):
    ts = _taskset(_task("a", "critical", priority=5), _task("b"), _task("c"))
    p = plan(ts, _matrix(ts.names, {("a", "b"): 2.0}), matrix_source="m.json")
    path = tmp_path / "plan.json"
    p.save(path)
    assert CgroupPlan.load(path) == p
    text = path.read_text().replace('"theta": 1.5', '"theta": "high"')
    path.write_text(text)
    with pytest.raises(InputError) as info:
        CgroupPlan.load(path)
    assert info.value.field == "theta" and info.value.line is not None


# The deadline rule: the tasks' deadline is 100 ms (_task); 80 ms alone affords 1.25.
@pytest.mark.parametrize("degradation, separated", [
    (1.25, False),         # the worst case lands on the deadline: met
    (1.25 + 1e-9, True),   # just past it, far below θ = 1.5
    (1.2, False),
])
def test_a_critical_task_is_separated_when_the_pair_breaks_its_deadline(degradation,
                                                                       separated):
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"))
    p = plan(ts, _matrix(ts.names, {("victim", "noise"): degradation},
                         alone_ns=(80e6, 50e6)))
    assert (_separated(p) == {"victim", "noise"}) is separated
    if separated:
        (pair,) = p.pairs
        assert (pair.reason, pair.deadline_task, pair.affordable) == ("deadline", "victim", 1.25)
        assert p.group("victim").freeze_while_active == ("noise",)


def test_the_deadline_rule_needs_the_time_alone_and_a_critical_task():
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"))
    assert not _separated(plan(ts, _matrix(ts.names, {("victim", "noise"): 1.4})))
    # A best-effort task has no deadline to keep: only θ separates it.
    be = _taskset(_task("a"), _task("b"))
    assert not _separated(plan(be, _matrix(be.names, {("a", "b"): 1.4},
                                           alone_ns=(95e6, 95e6))))


@pytest.mark.parametrize("alone_ms, breaks", [(50, None), (90, "victim")])
def test_theta_decides_first_and_a_broken_deadline_is_still_named(alone_ms, breaks):
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"))
    (pair,) = plan(ts, _matrix(ts.names, {("victim", "noise"): 2.0},
                               alone_ns=(alone_ms * 1e6, 50e6))).pairs
    assert (pair.reason, pair.deadline_task) == ("theta", breaks)


def test_a_task_past_its_deadline_alone_is_warned_about():
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"))
    p = plan(ts, _matrix(ts.names, {}, alone_ns=(120e6, 50e6)))
    assert [(w.code, w.tasks) for w in p.warnings] == [("deadline-alone", ("victim",))]
    assert "120.000 ms alone" in p.warnings[0].message


def test_alone_times_must_match_the_tasks():
    with pytest.raises(ValueError, match="alone_ns must hold 2 values"):
        _matrix(("a", "b"), {}, alone_ns=(1e6,))
    with pytest.raises(ValueError, match="positive finite"):
        _matrix(("a", "b"), {}, alone_ns=(1e6, 0.0))


def test_a_critical_task_left_unprotected_is_warned_about_with_its_deciding_values():
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"), _task("log"))
    p = plan(ts, _matrix(ts.names, {("victim", "noise"): 1.49996, ("victim", "log"): 1.2},
                         alone_ns=(60e6, 1e6, 1e6)))
    (w,) = p.warnings
    assert (w.code, w.tasks) == ("unprotected", ("victim",))
    # 1.49996 to four decimals would read as θ itself: it takes the digits that tell them apart.
    assert "1.49996 beside noise" in w.message and "1.6667 its deadline affords" in w.message
    unchecked = plan(ts, _matrix(ts.names, {("victim", "noise"): 1.1})).warnings[0].message
    assert "deadline was not checked" in unchecked


@pytest.mark.parametrize("value, against, text", [
    (1.2, 1.5, "1.2000"), (1.49996, 1.5, "1.49996"), (1.5000001, 1.5, "1.5000001"),
    (1.5, 1.5, "1.5000"),
])
def test_decisive_digits_tell_a_value_from_its_threshold(value, against, text):
    assert decisive(value, against) == text


def test_pairs_and_warnings_carry_the_deadline_misses_beside_the_ratios():
    ts = _taskset(_task("victim", "critical", priority=10), _task("noise"), _task("log"))
    base = _matrix(ts.names, {("victim", "noise"): 2.0, ("victim", "log"): 1.1})
    m = InterferenceMatrix(**{**base.model_dump(),
                              "misses": ((0, 12, 3), (0, 0, 0), (2, 0, 0)),
                              "alone_misses": ((1, 40), (0, 20), (0, 20))})
    p = plan(ts, m)
    (pair,) = p.pairs
    assert (pair.a, pair.b) == ("victim", "noise")
    assert str(pair.a_misses) == "1/40 alone, 12/20 beside"
    assert str(pair.b_misses) == "0/20 alone, 0/20 beside"
    assert p.warnings == ()  # victim is protected
    assert plan(_taskset(_task("a"), _task("b")),
                _matrix(("a", "b"), {("a", "b"): 2.0})).pairs[0].a_misses is None
    # Left unprotected, the critical task's warning says what its deadline saw.
    left = InterferenceMatrix(**{**_matrix(ts.names, {("victim", "log"): 1.1}).model_dump(),
                                 "misses": ((0, 0, 3), (0, 0, 0), (0, 0, 0)),
                                 "alone_misses": ((1, 40), (0, 20), (0, 20))})
    (w,) = plan(ts, left).warnings
    assert w.code == "unprotected" and "(deadline misses: 1/40 alone, 3/20 beside log)" in w.message


def test_misses_are_checked_against_the_jobs_they_count():
    with pytest.raises(ValueError, match="between 0 and n"):
        InterferenceMatrix(tasks=("a", "b"), statistic="max", directed=((None, 1.0), (1.0, None)),
                           n=((0, 5), (5, 0)), misses=((0, 6), (0, 0)))
    with pytest.raises(ValueError, match="alone_misses must hold 2"):
        InterferenceMatrix(tasks=("a", "b"), statistic="max", directed=((None, 1.0), (1.0, None)),
                           n=((0, 5), (5, 0)), alone_misses=((3, 2), (0, 1)))
