"""ic-monitor on the real cgroup v2 filesystem: freezing really stops a busy process, the
policies freeze and thaw real groups, and a killed or hung monitor leaves nothing frozen.
Groups live only under <v2 mount>/intercore-test-<random>/ and are removed by the fixture
(tests/mitigate/conftest.py checks the whole session left none)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from intercore.measure.periodic.runner import PeriodicSpec, PeriodicTask, start_together
from intercore.base.procs import ProcessGroup, shm_path
from intercore.mitigate.freezer.drill import busy
from intercore.mitigate.freezer.monitor import Monitor, MonitorSpec, read_log
from intercore.base.native import tool

MS = 1_000_000
# The monitor gets a housekeeping CPU; the workloads are left unpinned, because the shared
# test host's other users pin their own work and would starve ours on one CPU.
HOUSEKEEPING = min(os.sched_getaffinity(0))


def cpu_ns(pid: int) -> int:
    """Time on CPU so far, exact to the ns (/proc/PID/schedstat)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def freeze_requested(group: Path) -> bool:
    return (group / "cgroup.freeze").read_text().strip() == "1"


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.0005)


def grows(pid: int, timeout: float = 5.0) -> bool:
    """The process gets CPU time within `timeout` (the host is shared: it may wait)."""
    start = cpu_ns(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if cpu_ns(pid) > start:
            return True
    return False


def frozen_still(group: Path, pid: int, seconds: float = 0.2) -> bool:
    """Once every task has reached the freezer (a runnable task needs the CPU once more to
    get there, so "frozen 1" can lag the write), the process gets no CPU time at all."""
    wait_until(lambda: "frozen 1" in (group / "cgroup.events").read_text(), 10, "frozen 1")
    start = cpu_ns(pid)
    time.sleep(seconds)
    return cpu_ns(pid) == start


def test_freezing_stops_a_busy_process_and_thawing_resumes_it(groups):
    with ProcessGroup() as owner:
        spinner = busy(groups.best_effort, owner)
        assert grows(spinner.pid)
        (groups.best_effort / "cgroup.freeze").write_text("1")
        assert frozen_still(groups.best_effort, spinner.pid, 0.3)
        (groups.best_effort / "cgroup.freeze").write_text("0")
        assert grows(spinner.pid)


def poll_spec(groups, **extra) -> MonitorSpec:
    """A busy critical group counts as active for as long as its usage moved in the last
    200 ms: on a shared host it can wait that long for a CPU."""
    return MonitorSpec(policy="poll", critical=(str(groups.critical),),
                       best_effort=(str(groups.best_effort),), interval_ns=5 * MS,
                       threshold_pct=10, idle_after_ns=200 * MS, cpu=HOUSEKEEPING,
                       priority=50, **extra)


def test_poll_policy_freezes_a_busy_group_while_critical_work_runs(groups, tmp_path):
    log = tmp_path / "log.jsonl"
    with ProcessGroup() as owner:
        critical = busy(groups.critical, owner)
        noise = busy(groups.best_effort, owner)
        monitor = Monitor.start(poll_spec(groups, log=str(log)), owner)
        wait_until(lambda: freeze_requested(groups.best_effort), 10, "the freeze")
        assert frozen_still(groups.best_effort, noise.pid)
        critical.kill()  # critical work ends: its usage stops moving
        wait_until(lambda: not freeze_requested(groups.best_effort), 10, "the thaw")
        assert grows(noise.pid)
        stats = monitor.stop()
    entries = [e for e in read_log(log) if e.reason not in ("startup", "signal")]
    assert [(e.action, e.reason) for e in entries[:2]] == [("freeze", "usage"), ("thaw", "idle")]
    assert stats.write_errors == 0 and stats.freezes >= 1
    assert not freeze_requested(groups.best_effort)


def test_event_policy_freezes_during_each_critical_job(groups, tmp_path):
    log, notify = tmp_path / "log.jsonl", shm_path(f"test-{os.urandom(4).hex()}")
    spec = PeriodicSpec(name="critical", binary="victim", kind="matmul",
                        params=(("n", "64"), ("k", "4096"), ("m", "9")), period_ns=50 * MS,
                        deadline_ns=50 * MS, jobs=10, priority=10,
                        cgroups=(str(groups.critical),))
    try:
        with ProcessGroup() as owner:
            busy(groups.best_effort, owner)
            task = PeriodicTask.launch(spec, owner, notify=notify)
            monitor = Monitor.start(MonitorSpec(
                policy="event", best_effort=(str(groups.best_effort),), notify=str(notify),
                cpu=HOUSEKEEPING, priority=50, log=str(log), exit_with_runner=True), owner)
            notify.unlink()  # both sides have it mapped
            assert task.ready["cgroups"] == [str(groups.critical)]
            assert (groups.critical / "cgroup.procs").read_text().split() == [str(task.pid)]
            start_together([task])
            result = task.result()
            stats = monitor.wait()
    finally:
        notify.unlink(missing_ok=True)
    entries = read_log(log)
    freezes = {e.job: e for e in entries if e.action == "freeze"}
    thaws = {e.job: e for e in entries if e.action == "thaw" and e.reason == "complete"}
    assert stats.releases == 10 and len(freezes) + stats.late_releases == 10
    assert len(freezes) >= 1 and stats.write_errors == 0
    for job in result.jobs:
        if job.job in freezes:
            assert freezes[job.job].t_ns >= job.release_ns
            assert thaws[job.job].t_ns >= job.end_ns
    assert not freeze_requested(groups.best_effort)


@pytest.mark.parametrize("repeat", range(5))
def test_sigkilled_monitor_is_thawed_by_its_watchdog_within_100ms(groups, tmp_path, repeat):
    log = tmp_path / "log.jsonl"
    with ProcessGroup() as owner:
        busy(groups.critical, owner)
        noise = busy(groups.best_effort, owner)
        monitor = Monitor.start(poll_spec(groups, log=str(log)), owner)
        wait_until(lambda: freeze_requested(groups.best_effort), 10, "the freeze")
        killed_ns = time.monotonic_ns()
        os.kill(monitor.pid, signal.SIGKILL)
        wait_until(lambda: not freeze_requested(groups.best_effort), 5, "the watchdog's thaw")
        seen_ns = time.monotonic_ns()
        assert grows(noise.pid)
        monitor.process.kill()
        wait_until(lambda: not Path(f"/proc/{monitor.watchdog_pid}/exe").exists(), 5,
                   "the watchdog to exit")
    thaw = [e for e in read_log(log) if e.by == "watchdog"]
    assert [(e.action, e.reason, e.group) for e in thaw] == [
        ("thaw", "monitor-died", str(groups.critical)),
        ("thaw", "monitor-died", str(groups.best_effort))]
    # The watchdog's own clock, and ours (which includes our polling delay).
    assert thaw[1].t_ns - killed_ns < 100 * MS
    assert seen_ns - killed_ns < 100 * MS


def test_hung_monitor_loses_its_lease(groups):
    with ProcessGroup() as owner:
        busy(groups.critical, owner)
        busy(groups.best_effort, owner)
        monitor = Monitor.start(poll_spec(groups, lease_ns=100 * MS), owner)
        wait_until(lambda: freeze_requested(groups.best_effort), 10, "the freeze")
        os.kill(monitor.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: not freeze_requested(groups.best_effort), 5, "the lease to expire")
        finally:
            os.kill(monitor.pid, signal.SIGCONT)
        stats = monitor.stop()
    assert stats.lease_expiries == 1 and not stats.watchdog_lost
    assert not freeze_requested(groups.best_effort)


def test_startup_thaws_a_group_left_frozen(groups):
    (groups.best_effort / "cgroup.freeze").write_text("1")
    with ProcessGroup() as owner:
        monitor = Monitor.start(poll_spec(groups), owner)
        assert not freeze_requested(groups.best_effort)
        monitor.stop()


def test_monitor_refuses_to_freeze_its_own_group(groups):
    def join() -> None:
        (groups.best_effort / "cgroup.procs").write_text(str(os.getpid()))

    result = subprocess.run([str(tool("ic-monitor")), *poll_spec(groups).argv()],
                            capture_output=True, text=True, timeout=30, preexec_fn=join,
                            check=False)
    assert result.returncode == 2
    assert "holds the monitor itself" in result.stderr
