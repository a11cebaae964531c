"""ic-monitor against docs/native-contract.md ("Monitor"), on fake cgroup directories: the
freezer and usage files are ordinary files here, so every decision is visible in what the
monitor writes and every usage it reads is the test's own. The same binary against the
real cgroup filesystem is tests/mitigate/test_monitor_cgroups.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from intercore.base.errors import InputError
from intercore.measure.periodic.runner import PeriodicSpec, PeriodicTask, start_together
from intercore.base.procs import ProcessGroup, shm_path
from intercore.mitigate.freezer.monitor import Monitor, MonitorSpec, read_log
from intercore.mitigate.freezer.notify_block import check_window_regions, published_regions
from intercore.base.native import tool

MS = 1_000_000
SMALL_MATMUL = (("n", "16"), ("k", "4096"), ("m", "9"))


def fake_v2(path: Path) -> Path:
    path.mkdir()
    (path / "cgroup.freeze").write_text("0\n")
    set_usage(path, 0)
    return path


def set_usage(group: Path, usec: int) -> None:
    """Fixed width, written in place: the monitor's pread never sees a half-written file."""
    fd = os.open(group / "cpu.stat", os.O_WRONLY | os.O_CREAT)
    try:
        os.pwrite(fd, f"usage_usec {usec:020d}\nuser_usec 0\nsystem_usec 0\n".encode(), 0)
    finally:
        os.close(fd)


def frozen(group: Path) -> str:
    return (group / "cgroup.freeze").read_text().strip()


def run_monitor(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool("ic-monitor")), *args], capture_output=True, text=True,
                          check=False, timeout=timeout)


@pytest.fixture
def notify_path():
    path = shm_path(f"test-monitor-{os.urandom(4).hex()}")
    yield path
    path.unlink(missing_ok=True)


def monitored_run(spec: PeriodicSpec, monitor: MonitorSpec, notify: Path):
    """The task under a monitor that exits once the task's last release is handled."""
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify)
        mon = Monitor.start(monitor, group)
        start_together([task])
        result = task.result()
        stats = mon.wait()
    return result, stats


def test_event_policy_freezes_at_each_release_and_thaws_at_completion(tmp_path, notify_path):
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=30 * MS, deadline_ns=30 * MS, jobs=8, priority=10)
    result, stats = monitored_run(spec, MonitorSpec(
        policy="event", best_effort=(str(be),), notify=str(notify_path), priority=20,
        log=str(log), exit_with_runner=True), notify_path)
    entries = read_log(log)
    assert entries[0].action == "thaw" and entries[0].reason == "startup"
    assert entries[-1].action == "thaw" and entries[-1].reason == "exit"
    freezes = {e.job: e for e in entries if e.action == "freeze"}
    thaws = {e.job: e for e in entries if e.action == "thaw" and e.reason == "complete"}
    # A job the monitor reached only after it ended is counted, not frozen.
    assert stats.releases == 8 and len(freezes) + stats.late_releases == 8
    assert stats.freezes == len(freezes) >= 1 and stats.cap_hits == 0
    for job in result.jobs:
        if job.job not in freezes:
            continue
        f, t = freezes[job.job], thaws[job.job]
        assert f.reason == "release" and f.by == "monitor" and f.error is None
        assert f.latency_ns == f.t_ns - job.release_ns >= 0
        assert t.t_ns >= job.end_ns  # thawed on the completion the runner published
    assert stats.latency.n == len(freezes) and stats.latency_from == "release"
    assert stats.latency.max_ns == max(f.latency_ns for f in freezes.values())
    assert frozen(be) == "0"


def completed_jobs(notify: Path) -> int:
    """The runner's `completed` field (offset 56, docs/native-contract.md)."""
    with open(notify, "rb") as f:
        return int.from_bytes(os.pread(f.fileno(), 8, 56), "little")


def stop(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T",
             "the monitor to stop")


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"waited 10 s for {what}"
        time.sleep(0.001)


def stopped_monitor_run(tmp_path: Path, notify: Path, *, mid_run: bool):
    """A 10-job run whose monitor is SIGSTOPped before the first release, or once it has
    frozen for one, and continued after the whole run, or once the runner has completed three
    more jobs: the block holds only the next release, so the monitor never sees the jobs
    announced and finished in between. Returns the first job those three may include."""
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=20 * MS, deadline_ns=20 * MS, jobs=10, priority=10)
    first_unseen = 0
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify)
        mon = Monitor.start(MonitorSpec(
            policy="event", best_effort=(str(be),), notify=str(notify), priority=20,
            log=str(log), exit_with_runner=True), group)
        if not mid_run:
            stop(mon.pid)
        start_together([task])
        if mid_run:
            wait_for(lambda: any(e.action == "freeze" for e in read_log(log)), "a freeze")
            stop(mon.pid)
            # Job `completed` is unfinished now; the next one is announced only after it.
            first_unseen = completed_jobs(notify) + 1
            wait_for(lambda: completed_jobs(notify) >= first_unseen + 2, "two more jobs")
            os.kill(mon.pid, signal.SIGCONT)
        result = task.result()
        if not mid_run:
            os.kill(mon.pid, signal.SIGCONT)
        stats = mon.wait()
    freezes = {e.job for e in read_log(log) if e.action == "freeze"}
    return result, stats, freezes, first_unseen


def test_releases_the_monitor_never_saw_are_counted_missed(tmp_path, notify_path):
    result, stats, freezes, _ = stopped_monitor_run(tmp_path, notify_path, mid_run=False)
    assert len(result.jobs) == 10 and not freezes
    # It wakes to a finished run: the last announced job is late, the nine before it missed.
    assert (stats.releases, stats.late_releases, stats.missed_releases) == (10, 10, 9)


def test_a_monitor_stopped_mid_run_accounts_for_every_release(tmp_path, notify_path):
    result, stats, freezes, first_unseen = stopped_monitor_run(tmp_path, notify_path,
                                                               mid_run=True)
    assert len(result.jobs) == 10
    assert stats.releases == 10 and len(freezes) + stats.late_releases == 10
    # Job first_unseen was announced and finished while the monitor was stopped; the block
    # may still show the one after it when the monitor resumes.
    assert stats.missed_releases >= 1 and first_unseen not in freezes


def test_max_freeze_ends_long_freezes(tmp_path, notify_path):
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    # Jobs of 25 ms of CPU each; the cap allows 20% of the 60 ms period: 12 ms.
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=60 * MS, jobs=4, work="time:25ms", priority=10)
    result, stats = monitored_run(spec, MonitorSpec(
        policy="event", best_effort=(str(be),), notify=str(notify_path), priority=20,
        max_freeze="20%", log=str(log), exit_with_runner=True), notify_path)
    releases = {j.job: j.release_ns for j in result.jobs}
    caps = [e for e in read_log(log) if e.reason == "cap"]
    assert stats.cap_hits == len(caps) == stats.freezes >= 1
    for e in caps:
        assert e.action == "thaw" and e.t_ns - releases[e.job] >= 12 * MS
    assert frozen(be) == "0"


def test_v1_freezer_directory_gets_v1_commands(tmp_path, notify_path):
    be = tmp_path / "be"
    be.mkdir()
    (be / "freezer.state").write_text("THAWED\n")

    def state() -> str:
        return (be / "freezer.state").read_text().strip()
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=40 * MS, jobs=3, work="time:100ms", priority=10)
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify_path)
        mon = Monitor.start(MonitorSpec(policy="event", best_effort=(str(be),),
                                        notify=str(notify_path), max_freeze="none",
                                        priority=20), group)
        assert mon.ready["groups"][0]["freezer"] == "v1"
        start_together([task])
        deadline = time.monotonic() + 30
        while state() != "FROZEN" and time.monotonic() < deadline:
            time.sleep(0.001)
        assert state() == "FROZEN"
        task.result()
        stats = mon.stop()
    assert stats.freezes >= 1
    assert state() == "THAWED"


def test_poll_policy_follows_usage(tmp_path):
    """Usage driven by the test: the best-effort group always busy, the critical group busy
    for a while and then idle. Freeze only while the critical group is active."""
    crit, be = fake_v2(tmp_path / "crit"), fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    stop = threading.Event()
    critical_busy = threading.Event()
    critical_busy.set()

    def drive():
        t0, used = time.monotonic_ns(), 0
        while not stop.is_set():
            elapsed = (time.monotonic_ns() - t0) // 1000
            set_usage(be, elapsed)  # 100% of one CPU
            if critical_busy.is_set():
                used = elapsed
                set_usage(crit, used)
            time.sleep(0.001)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        with ProcessGroup() as group:
            mon = Monitor.start(MonitorSpec(policy="poll", critical=(str(crit),),
                                            best_effort=(str(be),), interval_ns=2 * MS,
                                            threshold_pct=30, log=str(log)), group)
            deadline = time.monotonic() + 10
            while frozen(be) != "1" and time.monotonic() < deadline:
                time.sleep(0.001)
            assert frozen(be) == "1"
            critical_busy.clear()
            while frozen(be) != "0" and time.monotonic() < deadline:
                time.sleep(0.001)
            assert frozen(be) == "0"
            stats = mon.stop()
    finally:
        stop.set()
        driver.join()
    entries = [e for e in read_log(log) if e.reason not in ("startup", "signal")]
    assert [(e.action, e.reason) for e in entries[:2]] == [("freeze", "usage"), ("thaw", "idle")]
    assert entries[0].latency_ns >= 0 and entries[0].job is None
    assert stats.polls > 0 and stats.latency_from == "activity-onset"
    assert stats.freezes >= 1 and stats.latency.n == stats.freezes


def test_poll_policy_leaves_a_light_best_effort_group_alone(tmp_path):
    crit, be = fake_v2(tmp_path / "crit"), fake_v2(tmp_path / "be")
    stop = threading.Event()

    def drive():
        # The best-effort usage never grows faster than 10% of the time that really passed,
        # even across a stall of this thread (no catching up in a burst).
        last, be_used = time.monotonic_ns(), 0
        while not stop.is_set():
            now = time.monotonic_ns()
            be_used += (now - last) // 10_000
            last = now
            set_usage(crit, now // 1000)
            set_usage(be, be_used)  # 10%, under the 30% threshold
            time.sleep(0.001)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        with ProcessGroup() as group:
            mon = Monitor.start(MonitorSpec(policy="poll", critical=(str(crit),),
                                            best_effort=(str(be),), interval_ns=2 * MS,
                                            window_ns=50 * MS, duration_ns=500 * MS), group)
            stats = mon.wait()
    finally:
        stop.set()
        driver.join()
    assert stats.freezes == 0 and stats.polls > 10


def test_watchdog_thaws_when_the_monitor_is_killed(tmp_path, notify_path):
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=10_000 * MS, jobs=1, work="time:30s")
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify_path)
        mon = Monitor.start(MonitorSpec(policy="event", best_effort=(str(be),),
                                        notify=str(notify_path), max_freeze="none",
                                        priority=20, log=str(log)), group)
        start_together([task])
        deadline = time.monotonic() + 30
        while frozen(be) != "1" and time.monotonic() < deadline:
            time.sleep(0.001)
        assert frozen(be) == "1"
        killed_ns = time.monotonic_ns()
        os.kill(mon.pid, signal.SIGKILL)
        while frozen(be) != "0" and time.monotonic_ns() - killed_ns < 5_000_000_000:
            time.sleep(0.0005)
        assert frozen(be) == "0"
        mon.process.kill()
        task.stop()
        os.kill(task.pid, signal.SIGKILL)  # its 30 s job would outlast the test
        task.process.kill()
    watchdog = [e for e in read_log(log) if e.by == "watchdog"]
    assert [(e.action, e.reason) for e in watchdog] == [("thaw", "monitor-died")]
    # Timed by the watchdog's own clock: the thaw write returned within 100 ms of the kill.
    assert 0 < watchdog[0].t_ns - killed_ns < 100 * MS


def test_runner_killed_mid_job_does_not_hold_the_freeze(tmp_path, notify_path):
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=10_000 * MS, jobs=1, work="time:30s")
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify_path)
        mon = Monitor.start(MonitorSpec(policy="event", best_effort=(str(be),),
                                        notify=str(notify_path), max_freeze="none",
                                        priority=20, log=str(log)), group)
        start_together([task])
        deadline = time.monotonic() + 30
        while frozen(be) != "1" and time.monotonic() < deadline:
            time.sleep(0.001)
        os.kill(task.pid, signal.SIGKILL)
        task.process.kill()  # reaped: the pid is gone
        while frozen(be) != "0" and time.monotonic() < deadline:
            time.sleep(0.001)
        assert frozen(be) == "0"
        mon.stop()
    assert [e.reason for e in read_log(log) if e.action == "thaw"][1] == "runner-gone"


def test_release_announced_but_never_reached_is_not_frozen(tmp_path, notify_path):
    be = fake_v2(tmp_path / "be")
    log = tmp_path / "log.jsonl"
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=500 * MS, jobs=100, priority=10)
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group, notify=notify_path)
        mon = Monitor.start(MonitorSpec(policy="event", best_effort=(str(be),),
                                        notify=str(notify_path), priority=20, log=str(log),
                                        exit_with_runner=True), group)
        start = start_together([task])
        time.sleep(max(0.0, (start + 100 * MS - time.monotonic_ns()) / 1e9))
        task.stop()  # asleep until release 1, which is announced
        result = task.result()
        stats = mon.wait()  # exits by itself, without waiting for release 1
    assert result.summary.jobs == 1 and stats.releases == 1
    assert {e.job for e in read_log(log) if e.action == "freeze"} <= {0}


@pytest.mark.parametrize("args, message", [
    (["--policy", "poll", "--critical", "{crit}"], "--best-effort"),
    (["--policy", "event", "--best-effort", "{be}"], "--notify"),
    (["--policy", "poll", "--best-effort", "{be}"], "--critical"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{plain}"],
     "not a cgroup directory"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{crit},,{be}"], "empty item"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{usage_only}"], "no freezer"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{be}", "--interval", "500us"],
     "--interval"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{be}", "--max-freeze", "50%"],
     "needs --notify"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{be}", "--max-freeze", "0"],
     "--max-freeze"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{be}", "--lease", "1ms"],
     "--lease"),
    (["--policy", "sometimes", "--best-effort", "{be}"], "--policy"),
    (["--policy", "poll", "--critical", "{crit}", "--best-effort", "{be}", "--window-region",
      "x"], "needs --notify"),
    (["--policy", "event", "--notify", "{notify}", "--best-effort", "{be}", "--window-region",
      "a,,b"], "empty item"),
    (["--policy", "event", "--notify", "{notify}", "--best-effort", "{be}", "--window-region",
      "r" * 48], "longer than a region name"),
])
def test_bad_input_is_a_usage_error(tmp_path, args, message):
    paths = {"crit": fake_v2(tmp_path / "crit"), "be": fake_v2(tmp_path / "be"),
             "plain": tmp_path / "plain", "usage_only": tmp_path / "usage_only",
             "notify": tmp_path / "notify"}
    paths["plain"].mkdir()
    paths["usage_only"].mkdir()
    set_usage(paths["usage_only"], 0)
    result = run_monitor(*(a.format(**paths) for a in args))
    assert result.returncode == 2, result
    assert message in result.stderr and result.stderr.startswith("ic-monitor: ")
    assert result.stdout == ""  # refused before any ready line, nothing touched
    assert frozen(paths["be"]) == "0"


def test_startup_thaws_and_repeated_options_collect(tmp_path):
    crit, a, b = (fake_v2(tmp_path / n) for n in ("crit", "a", "b"))
    (a / "cgroup.freeze").write_text("1\n")  # left frozen by a dead controller
    (b / "cgroup.freeze").write_text("1\n")
    result = run_monitor("--policy", "poll", "--critical", str(crit), "--best-effort", str(a),
                         "--best-effort", str(b), "--duration", "50ms")
    assert result.returncode == 0, result.stderr
    assert frozen(a) == frozen(b) == "0"
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and '"event":"ready"' in lines[0] and '"event":"stats"' in lines[1]
    groups = json.loads(lines[0])["groups"]
    assert [(g["path"], g["role"]) for g in groups] == [
        (str(crit), "critical"), (str(a), "best-effort"), (str(b), "best-effort")]


def test_a_window_region_the_running_task_lacks_is_refused_before_anything_is_touched(
        tmp_path, notify_path):
    """The runner has published its regions: a name that is not one of them is a usage error
    naming them, before the monitor thaws (touches) any group."""
    be = fake_v2(tmp_path / "be")
    (be / "cgroup.freeze").write_text("1\n")
    spec = PeriodicSpec(name="v", binary="victim", kind="phases",
                        params=(("size", "64K"), ("compute", "1ms")), period_ns=30 * MS,
                        jobs=1)
    with ProcessGroup() as group:
        PeriodicTask.launch(spec, group, notify=notify_path)
        result = run_monitor("--policy", "event", "--notify", str(notify_path),
                             "--best-effort", str(be), "--window-region", "phases.stream,fir")
        published = published_regions(notify_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "--window-region" in result.stderr and "no region 'fir'" in result.stderr
    assert "(its regions: phases.compute, phases.stream)" in result.stderr
    assert frozen(be) == "1"
    # What the CLI checks before starting anything: the same names, by id.
    assert published == ("", "phases.compute", "phases.stream")
    with pytest.raises(InputError, match="no region 'fir'"):
        check_window_regions(notify_path, ("phases.stream", "fir"))
    assert check_window_regions(notify_path, ("phases.stream",))


def test_spec_validation():
    with pytest.raises(InputError, match="notification block"):
        MonitorSpec(policy="poll", critical=("/c",), best_effort=("/x",),
                    window_regions=("r",))
    with pytest.raises(InputError, match="region name"):
        MonitorSpec(policy="event", best_effort=("/x",), notify="/n", window_regions=("a,b",))
    argv = MonitorSpec(policy="event", best_effort=("/x",), notify="/n",
                       window_regions=("a", "b")).argv()
    assert argv[argv.index("--window-region") + 1] == "a,b"
    with pytest.raises(InputError, match="notification block"):
        MonitorSpec(policy="event", best_effort=("/x",))
    with pytest.raises(InputError, match="1 ms"):
        MonitorSpec(policy="poll", critical=("/c",), best_effort=("/x",), interval_ns=100_000)
    spec = MonitorSpec(policy="poll", critical=("/c",), best_effort=("/x", "/y"),
                       interval_ns=1 * MS, max_freeze="20ms", cpu=0, priority=90)
    argv = spec.argv()
    assert argv[argv.index("--best-effort") + 1] == "/x,/y"
    assert argv[argv.index("--interval") + 1] == "0.001000000"
    assert argv[argv.index("--max-freeze") + 1] == "20ms"
    assert argv[argv.index("--rt-priority") + 1] == "90"
