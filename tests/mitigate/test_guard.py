import pytest

from intercore.base.errors import InputError
from intercore.mitigate.freezer.guard import monitor_entry, monitor_spec, roles
from intercore.mitigate.plan.record import AppliedGroup, CgroupPlan, Group, PlanTask


def _applied_group(name, freeze_dir, usage_dir, kind="v2"):
    return AppliedGroup(name=name, paths={"unified": freeze_dir},
                        freeze_kind=kind, freeze_file=f"{freeze_dir}/cgroup.freeze",
                        events_file=f"{freeze_dir}/cgroup.events", usage_kind=kind,
                        usage_file=f"{usage_dir}/cpu.stat")


def test_entry_is_the_directory_when_freeze_and_usage_share_it():
    assert monitor_entry(_applied_group("n", "/cg/x/n", "/cg/x/n")) == "/cg/x/n"


def test_entry_names_both_directories_when_usage_lives_elsewhere():
    assert monitor_entry(_applied_group("n", "/f/x/n", "/u/x/n")) == "/f/x/n+/u/x/n"


def test_entry_refuses_a_group_without_freezer():
    g = AppliedGroup(name="n", paths={}, freeze_kind=None, freeze_file=None, events_file=None,
                     usage_kind=None, usage_file=None)
    with pytest.raises(InputError, match="no freezer"):
        monitor_entry(g)


def _plan(separated: bool) -> CgroupPlan:
    def group(name, monitor):
        return Group(name=name, tasks=(name,), separated=separated, freezer=separated,
                     monitor=monitor if separated else "none", cpus=None, weight=100,
                     realtime=False)
    groups = (group("victim", "protect"), group("noise", "freeze")) if separated else \
        (Group(name="root", tasks=("victim", "noise"), separated=False, freezer=False,
               monitor="none", cpus=None, weight=100, realtime=False),)
    tasks = tuple(PlanTask(name=n, role=r, group=n if separated else "root", cpu=None,
                           priority=0, weight=100)
                  for n, r in (("victim", "critical"), ("noise", "best-effort")))
    return CgroupPlan(taskset={"name": "t"}, matrix={}, theta=1.5, tasks=tasks, groups=groups)


def test_roles_follow_the_plan():
    assert roles(_plan(True)) == (("victim",), ("noise",))
    assert roles(_plan(False)) == ((), ())


def test_an_unapplied_plan_is_refused():
    with pytest.raises(InputError, match="not been applied"):
        monitor_spec(_plan(True), policy="poll")


def test_the_protected_cpus_are_the_protect_groups_cpusets_or_the_default():
    """What the regulator and the monitor check their own CPU against for core sharing."""
    plan = _plan(True)
    assert plan.protected_cpus(3) == (3,)  # the victim's group keeps its parent's cpuset
    pinned = plan.model_copy(update={"groups": tuple(
        g.model_copy(update={"cpus": (1, 2)} if g.monitor == "protect" else {"cpus": (0,)})
        for g in plan.groups)})
    assert pinned.protected_cpus(3) == (1, 2)
    assert _plan(False).protected_cpus(3) == ()  # nothing protected, nothing to warn about
