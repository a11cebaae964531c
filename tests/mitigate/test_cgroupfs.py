"""The cgroup boundary: on this host's real hierarchies (root needed), and on a fake pure-v2
host for the controller path a hybrid machine does not have."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_cgroup2 import FakeCgroup2

from intercore.base.errors import HostUnsupported, InputError
from intercore.host.cgroups import CgroupInfo
from intercore.host.topology import read_topology
from intercore.mitigate.cgroupfs import (OWNER_XATTR, PERSISTENT, TOKEN_XATTR, Cgroups,
                                         OutsideRoot, _Guard, detect, layout_from, owner_alive,
                                         weight_to_shares)
from intercore.mitigate.plan.record import ROOT_GROUP, CgroupPlan, Group, PlanTask

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _group(name, monitor="freeze", cpus=None, weight=100, realtime=False, separated=True):
    return Group(name=name, tasks=(name,) if separated else ("t1", "t2"), separated=separated,
                 freezer=separated, monitor=monitor if separated else "none", cpus=cpus,
                 weight=weight, realtime=realtime)


def _plan(*groups: Group) -> CgroupPlan:
    tasks = tuple(PlanTask(name=t, role="critical" if g.monitor == "protect" else
                           "best-effort", group=g.name, cpu=None, priority=0, weight=g.weight)
                  for g in groups for t in g.tasks)
    return CgroupPlan(taskset={"name": "test", "source": None}, matrix={}, theta=1.5,
                      tasks=tasks, groups=groups)


def _three_groups(cpus: tuple[int, ...], realtime=True) -> CgroupPlan:
    return _plan(_group("victim", "protect", cpus=(cpus[-1],), weight=1000, realtime=realtime),
                 _group("noise", cpus=(cpus[0],), weight=50),
                 _group(ROOT_GROUP, separated=False, weight=300))


# ---- helpers for real processes ----------------------------------------------------------------

def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime + stime


def _cgroup_paths(pid: int) -> dict[str, str]:
    """controller list ("" for v2) -> path, from /proc/PID/cgroup."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        out[controllers] = path
    return out


def _wait_for(predicate, timeout=5.0, step=0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


@pytest.fixture
def busy():
    """A CPU-bound process, killed after the test whatever happens."""
    procs = []

    def start(fifo: int = 0):
        preexec = (lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(fifo))) \
            if fifo else None
        code = "import time\nwhile True: pass" if not fifo else "import time\ntime.sleep(60)"
        proc = subprocess.Popen([sys.executable, "-c", code], preexec_fn=preexec)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.fixture
def applied(real_cgroups, test_root):
    """Apply a plan under a fresh test root; always torn down."""
    holder = {}

    def make(plan: CgroupPlan) -> CgroupPlan:
        holder["plan"] = real_cgroups.apply(plan, test_root)
        return holder["plan"]

    yield make
    if "plan" in holder and holder["plan"].applied is not None:
        real_cgroups.teardown(holder["plan"])


# ---- the real host -----------------------------------------------------------------------------

def test_apply_writes_the_plan_and_teardown_removes_it(real_cgroups, test_root, applied, busy):
    cpus = read_topology().online_cpus
    plan = applied(_three_groups(cpus))
    record = plan.applied
    assert record.root_name == test_root
    assert [h.label for h in record.hierarchies] == \
        [h.label for h in real_cgroups.layout.hierarchies]
    for h in record.hierarchies:
        root = Path(h.root)
        assert root == Path(h.mount) / test_root and root.is_dir()
        for name in ("victim", "noise", ROOT_GROUP):
            assert (root / name).is_dir()
        if "cpuset" in h.roles:
            assert (root / "victim/cpuset.cpus").read_text().strip() == str(cpus[-1])
            assert (root / "noise/cpuset.cpus").read_text().strip() == str(cpus[0])
            # the root group of the plan has no pinned task: it keeps every CPU of the parent
            assert (root / ROOT_GROUP / "cpuset.cpus").read_text() == \
                (Path(h.mount) / "cpuset.cpus").read_text()
            if h.version == 1:
                assert (root / "victim/cpuset.mems").read_text() == \
                    (Path(h.mount) / "cpuset.mems").read_text()
        if "cpu" in h.roles:
            if h.version == 1:
                shares = {n: int((root / n / "cpu.shares").read_text()) for n in
                          ("victim", "noise", ROOT_GROUP)}
                assert shares == {"victim": weight_to_shares(1000), "noise": weight_to_shares(50),
                                  ROOT_GROUP: weight_to_shares(300)}
            else:
                assert (root / "victim/cpu.weight").read_text().strip() == "1000"
            if real_cgroups.layout.rt_group_sched:
                budget = int((root / "victim/cpu.rt_runtime_us").read_text())
                assert budget > 0 and record.group("victim").rt_runtime_us == budget
                assert int((root / "noise/cpu.rt_runtime_us").read_text()) == 0
                assert int((root / "cpu.rt_runtime_us").read_text()) == record.rt_runtime_us

    directories = plan.directories_of("victim")
    assert sorted(directories) == sorted(record.group("victim").paths.values())
    cpu = real_cgroups.layout.for_role("cpu")
    if cpu is not None:  # the move most likely refused comes first
        assert Path(directories[0]).is_relative_to(cpu.mount)

    # A SCHED_FIFO process joins the realtime group in every hierarchy.
    proc = busy(fifo=1)
    real_cgroups.attach(plan, "victim", proc.pid)
    paths = _cgroup_paths(proc.pid)
    for h in record.hierarchies:
        key = "" if h.version == 2 else h.label
        assert paths[key] == f"/{test_root}/victim", (h.label, paths)
    status = {s.name: s for s in real_cgroups.status(record)}
    assert status["victim"].pids == (proc.pid,) and status["victim"].consistent
    assert status["noise"].pids == () and status["noise"].frozen is False

    torn = real_cgroups.teardown(plan)
    assert torn.applied is None
    for h in record.hierarchies:
        assert not Path(h.root).exists()
    # the process went back to the root's parent (here the hierarchy root) and lives on
    assert all(p == "/" for k, p in _cgroup_paths(proc.pid).items()
               if k == "" or k in {h.label for h in record.hierarchies})
    assert proc.poll() is None


def test_freezing_a_group_stops_a_busy_process_and_thawing_resumes_it(real_cgroups, applied,
                                                                      busy):
    plan = applied(_plan(_group("victim", "protect"), _group("noise")))
    proc = busy()
    real_cgroups.attach(plan, "noise", proc.pid)
    start = _cpu_seconds(proc.pid)
    assert _wait_for(lambda: _cpu_seconds(proc.pid) > start), "the busy process never ran"

    real_cgroups.freeze(plan, "noise")
    assert _wait_for(lambda: real_cgroups.frozen(plan, "noise")), "the group never froze"
    before = _cpu_seconds(proc.pid)
    time.sleep(0.5)  # about 50 ticks at HZ=100: a running process would have gained several
    assert _cpu_seconds(proc.pid) == before
    noise = {s.name: s for s in real_cgroups.status(plan.applied)}["noise"]
    assert (noise.freeze_requested, noise.frozen, noise.pids) == (True, True, (proc.pid,))

    real_cgroups.thaw(plan, "noise")
    assert _wait_for(lambda: _cpu_seconds(proc.pid) > before), "thawing did not resume it"
    assert real_cgroups.frozen(plan, "noise") is False


def test_protected_group_cannot_be_frozen(real_cgroups, applied):
    plan = applied(_plan(_group("victim", "protect"), _group(ROOT_GROUP, separated=False)))
    with pytest.raises(InputError, match="not freezer-enabled"):
        real_cgroups.freeze(plan, ROOT_GROUP)
    with pytest.raises(InputError, match="no group or task 'ghost'"):
        real_cgroups.freeze(plan, "ghost")


def test_teardown_thaws_a_frozen_group_and_releases_its_process(real_cgroups, applied, busy):
    plan = applied(_plan(_group("victim", "protect"), _group("noise")))
    proc = busy()
    real_cgroups.attach(plan, "noise", proc.pid)
    real_cgroups.freeze(plan, "noise")
    assert _wait_for(lambda: real_cgroups.frozen(plan, "noise"))
    real_cgroups.teardown(plan)
    before = _cpu_seconds(proc.pid)
    assert _wait_for(lambda: _cpu_seconds(proc.pid) > before), "left frozen after teardown"
    assert not any(Path(h.root).exists() for h in plan.applied.hierarchies)
    real_cgroups.teardown(plan)  # a second teardown of the same record is harmless


def test_failure_midway_leaves_nothing(real_cgroups, test_root):
    if real_cgroups.layout.for_role("cpuset") is None:
        pytest.skip("no cpuset controller")
    cpus = read_topology().online_cpus
    # the second group asks for a CPU the kernel does not have: its cpuset write fails after
    # the root and the first group were created in every hierarchy
    plan = _plan(_group("ok", cpus=(cpus[0],)), _group("bad", cpus=(4095,)))
    with pytest.raises(HostUnsupported, match="nothing was left behind"):
        real_cgroups.apply(plan, test_root)
    assert not [p for p in real_cgroups.roots_named(test_root)]


def test_existing_root_is_refused_before_anything_is_created(real_cgroups, test_root):
    last = real_cgroups.layout.hierarchies[-1]
    mine = last.mount / test_root
    os.mkdir(mine)
    try:
        with pytest.raises(InputError, match="already exists"):
            real_cgroups.apply(_plan(_group("a"), _group("b")), test_root)
        assert real_cgroups.roots_named(test_root) == [mine]  # only the one made here
    finally:
        os.rmdir(mine)


def test_the_holders_of_the_rt_budget_are_named_when_none_is_left(real_cgroups, test_root):
    cpu = next((h for h in real_cgroups.layout.hierarchies if "cpu" in h.roles), None)
    if cpu is None or cpu.version != 1 or not real_cgroups.layout.rt_group_sched:
        pytest.skip("no v1 cpu hierarchy with RT group scheduling here")
    runtime = int((cpu.mount / "cpu.rt_runtime_us").read_text())
    taken = sum(max(0, int((c / "cpu.rt_runtime_us").read_text()))
                for c in cpu.mount.iterdir() if (c / "cpu.rt_runtime_us").is_file())
    if runtime - taken <= 0:
        pytest.skip("another cgroup holds the whole RT budget already")
    holder = cpu.mount / f"{test_root}-holder"  # what a killed run leaves: a root with budget
    holder.mkdir()
    try:
        (holder / "cpu.rt_runtime_us").write_text(str(runtime - taken))
        with pytest.raises(HostUnsupported, match=rf"held by: (.*, )?{holder.name} "
                                                  rf"{runtime - taken}\b.*teardown --stale"):
            real_cgroups.apply(_three_groups(read_topology().online_cpus), test_root)
        assert not [p for p in real_cgroups.roots_named(test_root) if p != holder]
    finally:
        holder.rmdir()


def test_a_new_session_removes_the_roots_of_a_killed_one(real_cgroups, dead_sessions_cleanup):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    name = f"intercore-test-{gone.stdout.strip()}x0d0d0d-1"  # a session that died mid-test
    # No realtime group: what is checked is the removal, and the RT budget may be another
    # session's at this moment.
    real_cgroups.apply(_three_groups(read_topology().online_cpus, realtime=False), name)
    try:
        assert name in dead_sessions_cleanup(real_cgroups)
        assert not real_cgroups.roots_named(name)
    finally:
        left = real_cgroups.discover(name)
        if left is not None:
            real_cgroups.remove(left)


def test_discover_and_remove_after_a_lost_plan(real_cgroups, test_root, busy):
    plan = real_cgroups.apply(_plan(_group("victim", "protect"), _group("noise")), test_root)
    proc = busy()
    real_cgroups.attach(plan, "noise", proc.pid)
    real_cgroups.freeze(plan, "noise")
    found = real_cgroups.discover(test_root)
    assert {g.name for g in found.groups} == {"victim", "noise"}
    noise = {s.name: s for s in real_cgroups.status(found)}["noise"]
    assert (noise.freeze_requested, noise.pids) == (True, (proc.pid,))
    real_cgroups.remove(found)
    assert real_cgroups.roots_named(test_root) == []
    before = _cpu_seconds(proc.pid)
    assert _wait_for(lambda: _cpu_seconds(proc.pid) > before)


# ---- a fake pure-v2 host -----------------------------------------------------------------------

@pytest.fixture
def v2(tmp_path) -> tuple[Cgroups, FakeCgroup2]:
    kernel = FakeCgroup2(tmp_path)
    return Cgroups(detect(tmp_path), kernel, fs_root=tmp_path), kernel


def test_v2_layout_puts_everything_on_the_one_hierarchy(tmp_path):
    FakeCgroup2(tmp_path)
    layout = detect(tmp_path)
    assert layout.mode == "v2" and not layout.rt_group_sched
    (h,) = layout.hierarchies
    assert (h.label, h.version, h.mount) == ("v2", 2, tmp_path / "sys/fs/cgroup")
    assert h.roles == ("freeze", "usage", "cpuset", "cpu")
    assert h.controllers == ("cpuset", "cpu")


def test_v2_apply_attach_freeze_teardown(v2):
    cg, kernel = v2
    plan = cg.apply(_three_groups((0, 1, 2, 3)), "intercore")
    root = kernel.mount / "intercore"
    assert (root / "cgroup.subtree_control").read_text() == "cpuset cpu"
    assert (root / "victim/cpu.weight").read_text() == "1000"
    assert (root / "noise/cpu.weight").read_text() == "50"
    assert (root / "victim/cpuset.cpus").read_text() == "3"
    assert (root / ROOT_GROUP / "cpuset.cpus").read_text() == ""  # v2: the parent's CPUs
    group = plan.applied.group("noise")
    assert (group.freeze_kind, group.freeze_file, group.usage_file) == \
        ("v2", str(root / "noise/cgroup.freeze"), str(root / "noise/cpu.stat"))
    assert plan.applied.rt_runtime_us is None  # v2 has no RT budgets

    cg.attach(plan, "noise", 4242)
    cg.attach(plan, "t1", 4243)  # a task name finds its group
    assert kernel.pids_of(root / "noise") == [4242]
    assert kernel.pids_of(root / ROOT_GROUP) == [4243]
    assert kernel.pids_of(kernel.mount) == [1]
    cg.freeze(plan, "noise")
    assert cg.frozen(plan, "noise")
    status = {s.name: s for s in cg.status(plan.applied)}
    assert (status["noise"].pids, status["noise"].frozen, status["noise"].weight) == \
        ((4242,), True, "50")
    assert status["victim"].cpus == "3"

    cg.teardown(plan)
    assert not root.exists()
    assert sorted(kernel.pids_of(kernel.mount)) == [1, 4242, 4243]


def test_v2_refused_move_is_reported_with_the_directory(v2):
    cg, kernel = v2
    plan = cg.apply(_plan(_group("a")), "intercore")
    with pytest.raises(HostUnsupported, match=r"cannot move pid 999 into .*/intercore/a: No such"):
        cg.attach(plan, "a", 999)  # no such process
    cg.teardown(plan)


def test_v2_parent_must_delegate_the_controllers(tmp_path):
    kernel = FakeCgroup2(tmp_path, delegated=("cpuset",))
    cg = Cgroups(detect(tmp_path), kernel, fs_root=tmp_path)
    with pytest.raises(HostUnsupported, match=r"does not delegate cpu.*\+cpu"):
        cg.apply(_three_groups((0, 1)), "intercore")
    assert not (kernel.mount / "intercore").exists()


def test_v2_failure_midway_removes_what_was_created(v2):
    cg, kernel = v2
    plan = _plan(_group("ok", cpus=(1,)), _group("bad", cpus=(9,)))  # the fake has CPUs 0-3
    with pytest.raises(HostUnsupported, match="cpuset.cpus.*nothing was left behind"):
        cg.apply(plan, "intercore")
    assert [p.name for p in kernel.mount.iterdir() if p.is_dir()] == []


def test_v2_nested_root_under_a_delegated_parent(v2):
    cg, kernel = v2
    kernel.mkdir(kernel.mount / "app.slice")
    kernel.write(kernel.mount / "app.slice/cgroup.subtree_control", "+cpuset +cpu")
    plan = cg.apply(_plan(_group("a", weight=7), _group("b")), "app.slice/intercore")
    assert (kernel.mount / "app.slice/intercore/a/cpu.weight").read_text() == "7"
    cg.teardown(plan)
    assert (kernel.mount / "app.slice").is_dir()
    assert not (kernel.mount / "app.slice/intercore").exists()


@pytest.mark.parametrize("root", ["", "../etc", "a/../b", "/", "with space", "-x"])
def test_bad_root_names_are_refused(v2, root):
    cg, _ = v2
    with pytest.raises(InputError, match="not a cgroup path"):
        cg.apply(_plan(_group("a")), root)


def test_plan_applied_twice_is_refused(v2):
    cg, _ = v2
    plan = cg.apply(_plan(_group("a")), "intercore")
    with pytest.raises(InputError, match="already applied"):
        cg.apply(plan, "other")


def test_a_plan_edited_to_point_outside_its_root_is_refused_before_any_write(v2, tmp_path):
    cg, kernel = v2
    plan = cg.apply(_plan(_group("a"), _group("b")), "intercore")
    outside = kernel.mount / "system.slice"
    kernel.mkdir(outside)
    groups = tuple(g.model_copy(update={"paths": {"v2": str(outside)}}) if g.name == "a" else g
                   for g in plan.applied.groups)
    edited = plan.model_copy(update={"applied": plan.applied.model_copy(
        update={"groups": groups})})
    with pytest.raises(InputError, match="not directly under"):
        cg.teardown(edited)
    with pytest.raises(InputError, match="not directly under"):
        cg.freeze(edited, "b")
    # a root moved up to the hierarchy's top would make every cgroup "inside" it
    hierarchies = tuple(h.model_copy(update={"root": h.mount}) for h in plan.applied.hierarchies)
    moved = plan.model_copy(update={"applied": plan.applied.model_copy(
        update={"hierarchies": hierarchies})})
    with pytest.raises(InputError, match="is not intercore under"):
        cg.attach(moved, "a", 4242)
    assert (outside / "cgroup.freeze").read_text() == "0"
    assert kernel.pids_of(kernel.mount) == [1, 4242, 4243]
    assert outside.is_dir() and (kernel.mount / "intercore/a").is_dir()
    cg.teardown(plan)


class _Recorder:
    """An Owner that notes what it is told, and whether the root existed then."""

    def __init__(self) -> None:
        self.told: list[tuple[Path, str, bool]] = []

    def own(self, root: Path, token: str) -> None:
        self.told.append((root, token, root.exists()))


def test_apply_marks_what_it_creates_and_tells_the_owner_first(v2):
    cg, kernel = v2
    owner = _Recorder()
    plan = cg.apply(_plan(_group("a"), _group("b")), "intercore", owner=owner)
    root = kernel.mount / "intercore"
    token = kernel.mark(root, TOKEN_XATTR)
    assert token and owner.told == [(root, token, False)]  # told before it existed
    assert all(kernel.mark(root / g, TOKEN_XATTR) == token for g in ("a", "b"))
    assert kernel.mark(root, OWNER_XATTR) == f"pid={os.getpid()} start=" \
        f"{Path(f'/proc/{os.getpid()}/stat').read_text().rsplit(')', 1)[1].split()[19]}"
    assert owner_alive(kernel.mark(root, OWNER_XATTR)) and cg.stale_roots() == []
    persistent = cg.apply(_plan(_group("c")), "kept")
    assert kernel.mark(kernel.mount / "kept", OWNER_XATTR) == PERSISTENT
    cg.teardown(plan)
    cg.teardown(persistent)


def test_only_directories_intercore_created_are_touched(v2):
    cg, kernel = v2
    kernel.mkdir(kernel.mount / "system.slice")  # somebody else's
    kernel.mkdir(kernel.mount / "system.slice" / "a")
    found = cg.discover("system.slice")
    with pytest.raises(InputError, match="not created by intercore"):
        cg.remove(found)
    assert (kernel.mount / "system.slice" / "a").is_dir()
    # A group that another apply made (another token) under our root is not ours either.
    plan = cg.apply(_plan(_group("a"), _group("b")), "intercore")
    kernel.set_mark(kernel.mount / "intercore" / "b", TOKEN_XATTR, "another-apply")
    with pytest.raises(InputError, match="mark differs"):
        cg.freeze(plan, "a")
    assert (kernel.mount / "intercore/a/cgroup.freeze").read_text() == "0"
    kernel.set_mark(kernel.mount / "intercore" / "b", TOKEN_XATTR,
                    kernel.mark(kernel.mount / "intercore", TOKEN_XATTR))
    cg.teardown(plan)


def test_a_group_holding_this_process_is_never_frozen(v2, tmp_path):
    cg, kernel = v2
    plan = cg.apply(_plan(_group("a"), _group("b")), "intercore")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/intercore/a/sub\n")
    with pytest.raises(InputError, match="holds this process"):
        cg.freeze(plan, "a")
    (tmp_path / "proc/self/cgroup").write_text("0::/intercore\n")
    cg.freeze(plan, "a")  # our cgroup is above it, not in it
    assert (kernel.mount / "intercore/a/cgroup.freeze").read_text() == "1"
    cg.teardown(plan)


def test_stale_roots_are_those_whose_owner_died(v2):
    cg, kernel = v2
    owned = cg.apply(_plan(_group("a")), "mine", owner=_Recorder())
    dead = cg.apply(_plan(_group("a")), "dead", owner=_Recorder())
    kept = cg.apply(_plan(_group("a")), "kept")
    kernel.set_mark(kernel.mount / "dead", OWNER_XATTR, "pid=999999 start=1")
    assert cg.stale_roots() == ["dead"]
    for plan in (owned, dead, kept):
        cg.teardown(plan)


def test_guard_refuses_paths_outside_the_roots(tmp_path):
    root = tmp_path / "cg/intercore"
    guard = _Guard(FakeCgroup2(tmp_path), [root], [root.parent])
    for path in (tmp_path / "cg/other/cgroup.freeze", root / "../x", tmp_path / "cg/intercorex",
                 root.parent / "cgroup.freeze"):
        with pytest.raises(OutsideRoot):
            guard.write(path, "1")
    with pytest.raises(OutsideRoot):
        guard.mkdir(tmp_path / "cg/elsewhere")
    with pytest.raises(OutsideRoot):
        guard.rmdir(root.parent)


def test_pure_v1_layout_uses_the_v1_freezer_and_cpuacct(tmp_path):
    info = CgroupInfo(mode="v1", v1_mounts={"cpu": "/sys/fs/cgroup/cpu,cpuacct",
                                            "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
                                            "cpuset": "/sys/fs/cgroup/cpuset",
                                            "freezer": "/sys/fs/cgroup/freezer"},
                      v2_mount=None, v2_controllers=(), freezer="v1", kill=False)
    layout = layout_from(info, tmp_path)
    assert [(h.label, h.roles) for h in layout.hierarchies] == [
        ("freezer", ("freeze",)), ("cpu,cpuacct", ("usage", "cpu")), ("cpuset", ("cpuset",))]
    assert all(h.version == 1 and not h.controllers for h in layout.hierarchies)


def test_weight_to_shares():
    assert [weight_to_shares(w) for w in (1, 100, 1000, 10000)] == [10, 1024, 10240, 102400]
