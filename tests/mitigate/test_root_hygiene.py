"""Root never touches what it did not create (issue 13, §2): a plan edited to point outside
intercore's root, at a group intercore did not make, or at an ancestor of intercore's own
cgroup is refused with exit 2 before anything is written; a symbolic link planted at any
name intercore opens is never followed; `cgroups teardown --stale` removes only the roots
whose owner died; `monitor --duration` ends the monitor by itself."""

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
from intercore.host.cgroups import read_cgroups
from intercore.measure.aggressors.control import ControlBlock
from intercore.base.procs import shm_path
from intercore.mitigate.cgroupfs import OWNER_XATTR, Cgroups
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.base.native import tool

CPU = max(os.sched_getaffinity(0))
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

TASKSET = f"""\
name: hygiene
tasks:
  - name: victim
    workload: matrix1
    period: 100ms
    deadline: 30ms
    cpu: {CPU}
    role: critical
  - name: noise
    workload: bw
    params: {{op: write, size: 1M}}
    period: 200ms
    work: time:20ms
    cpu: {CPU}
    role: best-effort
"""


def intercore(*args: str, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=120, preexec_fn=preexec_fn)


def v2_mount() -> Path:
    info = read_cgroups()
    if info.v2_mount is None or info.freezer != "v2":
        pytest.skip("needs the cgroup v2 freezer")
    return Path(info.v2_mount)


@pytest.fixture
def applied(tmp_path, test_root):
    """A plan applied under test_root; torn down afterwards (by the untouched plan)."""
    taskset, matrix, plan = tmp_path / "set.yaml", tmp_path / "m.json", tmp_path / "plan.json"
    taskset.write_text(TASKSET)
    InterferenceMatrix(tasks=("victim", "noise"), statistic="max",
                       directed=((None, 2.3), (1.1, None)), n=((0, 40), (40, 0))).save_json(matrix)
    assert intercore("mitigate", "plan", str(taskset), "-m", str(matrix), "-o",
                     str(plan)).returncode == 0
    done = intercore("mitigate", "apply", str(plan), "--root", test_root)
    assert done.returncode == 0, done.stderr
    pristine = plan.read_text()
    yield plan
    plan.write_text(pristine)
    if json.loads(pristine)["applied"] is not None:
        intercore("mitigate", "teardown", str(plan))


@pytest.fixture
def decoy(test_root):
    """A cgroup intercore did not create, with a process in it, named like a test root."""
    path = v2_mount() / f"{test_root}-decoy"
    path.mkdir()
    (path / "noise").mkdir()
    sleeper = subprocess.Popen(["sleep", "infinity"])
    (path / "noise" / "cgroup.procs").write_text(str(sleeper.pid))
    yield path
    sleeper.kill()
    sleeper.wait()
    for p in (path / "noise", path):
        deadline = time.monotonic() + 5
        while True:
            try:
                p.rmdir()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)


def _untouched(decoy: Path) -> None:
    assert (decoy / "noise").is_dir()
    assert (decoy / "noise" / "cgroup.freeze").read_text().strip() == "0"
    assert (decoy / "noise" / "cgroup.procs").read_text().split()  # its process stayed


def _edit(plan: Path, old: str, new: str) -> None:
    text = plan.read_text()
    assert old in text
    plan.write_text(text.replace(old, new))


@pytest.mark.slow
@ROOT
def test_plan_pointed_at_a_group_intercore_did_not_create_is_refused(applied, decoy,
                                                                     test_root):
    _edit(applied, f'"{test_root}', f'"{decoy.name}')
    _edit(applied, f"/{test_root}", f"/{decoy.name}")
    for args in (("mitigate", "freeze", str(applied), "noise"),
                 ("mitigate", "thaw", str(applied), "noise"),
                 ("mitigate", "status", str(applied)),
                 ("mitigate", "teardown", str(applied)),
                 ("mitigate", "teardown", "--root", decoy.name),
                 ("mitigate", "monitor", "--plan", str(applied), "--duration", "1s")):
        result = intercore(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "not created by intercore" in result.stderr.replace("\n", " "), result.stderr
        _untouched(decoy)


def _moved(value, old: str, new: str):
    """`value` (a plan's JSON) with every reference to root `old` made one to root `new`."""
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if value == old:
        return new
    if isinstance(value, str) and (f"/{old}/" in value or value.endswith(f"/{old}")):
        return value.replace(f"/{old}", f"/{new}")
    return value


@pytest.fixture
def other_root(applied, test_root):
    """A second root that `cgroups apply` made from the same plan, with a process in its
    noise group: (its plan, its name, the process)."""
    name = f"{test_root}-other"
    plan = applied.parent / "other.json"
    plan.write_text(json.dumps({**json.loads(applied.read_text()), "applied": None}))
    done = intercore("mitigate", "apply", str(plan), "--root", name)
    assert done.returncode == 0, done.stderr
    sleeper = subprocess.Popen(["sleep", "infinity"])
    try:
        (v2_mount() / name / "noise" / "cgroup.procs").write_text(str(sleeper.pid))
        yield plan, name, sleeper
    finally:
        sleeper.kill()
        sleeper.wait()
        gone = intercore("mitigate", "teardown", str(plan))
        assert gone.returncode == 0, gone.stderr


@pytest.mark.slow
@ROOT
def test_plan_pointed_at_another_root_intercore_made_is_refused(applied, other_root,
                                                                test_root, request):
    """Both roots carry intercore's mark; only the token the plan records tells them apart."""
    other_plan, other, sleeper = other_root
    edited = _moved(json.loads(applied.read_text()), test_root, other)
    assert edited["applied"]["root_name"] == other
    applied.write_text(json.dumps(edited))
    text = applied.read_text()
    noise = v2_mount() / other / "noise"
    stray = subprocess.Popen(["sleep", "infinity"])
    request.addfinalizer(lambda: (stray.kill(), stray.wait()))
    for args in (("mitigate", "freeze", str(applied), "noise"),
                 ("mitigate", "thaw", str(applied), "noise"),
                 ("mitigate", "attach", str(applied), "noise", str(stray.pid)),
                 ("mitigate", "status", str(applied)),
                 ("mitigate", "teardown", str(applied)),
                 ("mitigate", "monitor", "--plan", str(applied), "--duration", "1s")):
        result = intercore(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "another apply" in result.stderr.replace("\n", " "), (args, result.stderr)
        assert applied.read_text() == text  # the plan still records what it did
        assert noise.is_dir() and (noise / "cgroup.freeze").read_text().strip() == "0"
        assert (noise / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
    # The other root's own plan still works on it.
    assert intercore("mitigate", "status", str(other_plan)).returncode == 0


@pytest.mark.slow
@ROOT
def test_plan_from_before_the_token_is_refused_until_its_root_is_removed(applied, test_root):
    """An edit could delete the token as easily as change a path, so a plan without one is
    never trusted: its root is removed by the marks on disk, then its record cleared."""
    old = json.loads(applied.read_text())
    del old["applied"]["token"]
    applied.write_text(json.dumps(old))
    noise = v2_mount() / test_root / "noise"
    for args in (("mitigate", "freeze", str(applied), "noise"),
                 ("mitigate", "teardown", str(applied)),
                 ("mitigate", "monitor", "--plan", str(applied), "--duration", "1s")):
        result = intercore(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "records no creation token" in result.stderr.replace("\n", " "), result.stderr
        assert noise.is_dir() and (noise / "cgroup.freeze").read_text().strip() == "0"
        assert json.loads(applied.read_text()) == old
    removed = intercore("mitigate", "teardown", "--root", test_root)
    assert removed.returncode == 0, removed.stderr
    assert not (v2_mount() / test_root).exists()
    cleared = intercore("mitigate", "teardown", str(applied))
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(applied.read_text())["applied"] is None


@pytest.mark.slow
@ROOT
def test_plan_pointed_outside_its_root_or_at_another_file_is_refused(applied, test_root):
    mount = v2_mount()
    plan = json.loads(applied.read_text())
    noise = next(g for g in plan["applied"]["groups"] if g["name"] == "noise")
    directory = str(Path(noise["freeze_file"]).parent)
    edits = [
        ("the hierarchy's top", directory, str(mount)),
        ("a path with ..", directory, f"{mount}/{test_root}/../x"),
        ("another file", noise["freeze_file"], noise["freeze_file"].replace(
            "cgroup.freeze", "cgroup.procs")),
    ]
    pristine = applied.read_text()
    for what, old, new in edits:
        applied.write_text(pristine.replace(f'"{old}"', f'"{new}"'))
        for args in (("mitigate", "freeze", str(applied), "noise"),
                     ("mitigate", "teardown", str(applied))):
            result = intercore(*args)
            assert result.returncode == 2, (what, args, result.stderr)
        assert (mount / test_root / "noise").is_dir(), what
        assert (mount / test_root / "noise" / "cgroup.freeze").read_text().strip() == "0"
    applied.write_text(pristine)


@pytest.mark.slow
@ROOT
def test_a_group_that_holds_intercore_itself_is_never_frozen(applied, test_root):
    noise = v2_mount() / test_root / "noise"

    def join() -> None:
        (noise / "cgroup.procs").write_text(str(os.getpid()))

    for args in (("mitigate", "freeze", str(applied), "noise"),
                 ("mitigate", "monitor", "--plan", str(applied), "--duration", "1s")):
        result = intercore(*args, preexec_fn=join)
        assert result.returncode == 2, (args, result.stderr)
        assert "holds this process" in result.stderr.replace("\n", " ")
        assert (noise / "cgroup.freeze").read_text().strip() == "0"


@pytest.mark.slow
@ROOT
@pytest.mark.parametrize("policy", ["poll", "event"])
def test_monitor_duration_ends_it(applied, tmp_path, policy):
    extra = ["--notify", str(tmp_path / "notify")] if policy == "event" else []
    if extra:  # the critical runner's block, before the monitor (a missing one is refused)
        (tmp_path / "notify").touch(mode=0o600)
    started = time.monotonic()
    result = intercore("mitigate", "monitor", "--plan", str(applied), "--policy", policy,
                       "--duration",
                       "1s", "--json", *extra)
    assert result.returncode == 0, result.stderr
    assert 0.9 < json.loads(result.stdout)["wall_ns"] / 1e9 < 1.5
    assert time.monotonic() - started < 20


@pytest.mark.slow
@ROOT
def test_teardown_stale_removes_only_roots_whose_owner_died(applied, test_root):
    owned = f"{test_root}-owned"
    # A root applied for its own lifetime by a process that then dies without teardown (and
    # without a watchdog): what SIGKILL leaves on a host where the watchdog itself died.
    code = ("import sys\n"
            "from intercore.mitigate.cgroupfs import Cgroups\n"
            "from intercore.mitigate.plan.record import CgroupPlan\n"
            "class Nobody:\n"
            "    def own(self, root, token): pass\n"
            f"Cgroups().apply(CgroupPlan.load(sys.argv[1]), {owned!r}, owner=Nobody())\n")
    pristine = json.loads(applied.read_text())
    unapplied = applied.parent / "unapplied.json"
    unapplied.write_text(json.dumps({**pristine, "applied": None}))
    assert subprocess.run([sys.executable, "-c", code, str(unapplied)]).returncode == 0
    root = v2_mount() / owned
    assert root.is_dir() and os.getxattr(root, OWNER_XATTR).startswith(b"pid=")
    refused = intercore("mitigate", "apply", str(unapplied), "--root", owned)
    assert refused.returncode == 2 and "--stale" in refused.stderr.replace("\n", " ")
    result = intercore("mitigate", "teardown", "--stale", "--json")
    assert result.returncode == 0, result.stderr
    assert owned in json.loads(result.stdout)["removed"]
    assert test_root not in json.loads(result.stdout)["removed"]  # made by `cgroups apply`
    assert not root.exists() and (v2_mount() / test_root).is_dir()
    assert not any(r.name == owned for r in Cgroups().roots_named(owned))


# ---- links planted at every name intercore opens -------------------------------------------------

@pytest.fixture
def planted(tmp_path):
    """(link, target): a link to a file whose contents must survive."""
    target = tmp_path / "precious"
    target.write_text("keep me")
    link = tmp_path / "planted"
    link.symlink_to(target)
    yield link, target
    assert target.read_text() == "keep me"


def test_control_block_link_is_not_followed(planted):
    link, target = planted
    result = subprocess.run([str(tool("ic-aggr")), "bw", "--duration", "100ms", "--control",
                             str(link)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "must be a new file" in result.stderr
    with pytest.raises(NativeError, match="cannot open"):
        ControlBlock(link)


def test_notify_block_link_is_not_followed(planted):
    link, target = planted
    result = subprocess.run([str(tool("ic-periodic")), "--jobs", "1", "--notify", str(link),
                             "victim", "qsort", "--count", "1K"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 1 and "--notify" in result.stderr
    monitor = subprocess.run([str(tool("ic-monitor")), "--policy", "event", "--notify",
                              str(link), "--best-effort", str(target.parent)],
                             capture_output=True, text=True, timeout=30)
    assert monitor.returncode != 0


def test_monitor_log_link_is_not_followed(planted, tmp_path):
    link, target = planted
    group = tmp_path / "be"
    group.mkdir()
    (group / "cgroup.freeze").write_text("0")
    (group / "cpu.stat").write_text("usage_usec 0\n")
    result = subprocess.run([str(tool("ic-monitor")), "--policy", "poll", "--critical",
                             str(group), "--best-effort", str(group), "--log", str(link),
                             "--duration", "50ms"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "--log" in result.stderr


def test_shared_files_live_in_a_private_directory_that_goes_with_them():
    path = shm_path(f"test-{os.urandom(4).hex()}")
    directory = path.parent
    assert directory.stat().st_mode & 0o777 == 0o700 and not path.exists()
    assert directory.name.startswith(f"intercore-{os.getpid()}-")
    assert shm_path(path.name).parent != directory  # a fresh directory each time
    path.write_text("")
    path.unlink()
    assert not directory.exists()


def test_a_killed_process_private_directory_is_removed_by_the_next():
    code = ("import os, signal\n"
            "from intercore.base.procs import shm_path\n"
            "p = shm_path('x'); p.write_text('left'); print(p.parent, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    left = Path(out.stdout.strip())
    assert out.returncode == -signal.SIGKILL and left.is_dir()
    subprocess.run([sys.executable, "-c", "from intercore.base.procs import shm_path\n"
                    "shm_path('y')"], check=True, timeout=60)
    assert not left.exists()
