"""Region windows (--window-region) on the real cgroup v2 freezer: the event monitor freezes
the best-effort group only while the critical job executes a window region (entries and
exits published by the runner's markers through the notification block), never outside
one; a runner whose work has no markers is followed from its releases, as without windows,
and the monitor says so once. The times set against each other are the monitor's log (when
each write returned) and the runner's "window" lines (when each marker ran), one clock."""

from __future__ import annotations

import os

import pytest

from intercore.base.errors import InputError
from intercore.measure.periodic.runner import PeriodicSpec, PeriodicTask, start_together
from intercore.base.procs import ProcessGroup, shm_path
from intercore.mitigate.freezer.drill import busy
from intercore.mitigate.freezer.monitor import Monitor, MonitorSpec, read_log

from test_monitor_cgroups import HOUSEKEEPING, MS, freeze_requested

# compute 3 ms, stream 32 MiB (a few ms, long beside the monitor's ~0.1 ms reaction even on a
# loaded host), compute 3 ms.
PHASES = (("size", "32M"), ("compute", "3ms"))
STREAM = "phases.stream"


def run(groups, tmp_path, spec: PeriodicSpec, windows: tuple[str, ...], **policy):
    log, notify = tmp_path / "log.jsonl", shm_path(f"test-{os.urandom(4).hex()}")
    try:
        with ProcessGroup() as owner:
            busy(groups.best_effort, owner)
            task = PeriodicTask.launch(spec, owner, notify=notify)
            monitor = Monitor.start(MonitorSpec(**{
                "policy": "event", "best_effort": (str(groups.best_effort),),
                "notify": str(notify), "cpu": HOUSEKEEPING, "priority": 50, "log": str(log),
                "exit_with_runner": True, "window_regions": windows, "max_freeze": "none",
                **policy}), owner)
            notify.unlink()  # both sides have it mapped
            start_together([task])
            result = task.result()
            stats = monitor.wait()
            stderr = monitor.process.proc.stderr.read().decode()
    finally:
        notify.unlink(missing_ok=True)
    actions = [e for e in read_log(log) if e.by == "monitor" and e.job is not None]
    return result, stats, actions, stderr


def critical(kind: str, params, jobs: int = 12, work: str | None = None) -> PeriodicSpec:
    return PeriodicSpec(name="critical", binary="victim" if kind == "phases" else "aggr",
                        kind=kind, params=params, period_ns=40 * MS, deadline_ns=40 * MS,
                        jobs=jobs, priority=10, work=work)


def test_freezes_lie_inside_the_window_regions_and_nowhere_else(groups, tmp_path):
    result, stats, actions, _ = run(groups, tmp_path, critical("phases", PHASES), (STREAM,))
    assert result.summary.windows_lost == 0 and result.summary.jobs == 12
    # One execution of the stream region per job, each published and recorded.
    assert sorted(w.job for w in result.windows) == list(range(12))
    assert {w.region for w in result.windows} == {STREAM}
    window = {w.job: w for w in result.windows}
    freezes = [e for e in actions if e.action == "freeze"]
    thaws = [e for e in actions if e.action == "thaw"]
    assert not stats.window_fallback and stats.latency_from == "region-entry"
    assert stats.write_errors == 0 and stats.rearms == 0
    assert stats.windows + stats.missed_windows == 12 and stats.windows >= 1
    assert len(freezes) == stats.windows
    for e in freezes:
        w = window[e.job]
        assert (e.reason, e.region) == ("region", STREAM)
        assert w.enter_ns <= e.t_ns <= w.exit_ns, (e, w)
        assert e.latency_ns == e.t_ns - w.enter_ns
    # Each freeze ends with its region (or the job it was in), after the region's exit.
    for e in thaws:
        assert e.reason in ("region-exit", "complete")
        assert e.t_ns >= window[e.job].exit_ns
    assert [e.job for e in thaws] == [e.job for e in freezes]
    # Frozen time is the windows' time only: nothing frozen from a release or past a job.
    jobs = {j.job: j for j in result.jobs}
    for f, t in zip(freezes, thaws):
        assert jobs[f.job].start_ns <= f.t_ns and t.t_ns >= jobs[f.job].release_ns
    assert not freeze_requested(groups.best_effort)


def test_the_poll_policy_applies_its_threshold_inside_the_windows_only(groups, tmp_path):
    # A busy best-effort group is above the threshold (its usage averaged over 20 ms, as
    # cpu.stat moves in ticks): it is frozen at the first round after a window's entry
    # (1 ms rounds) and thawed at the first round after its exit, never outside.
    result, stats, actions, _ = run(groups, tmp_path, critical("phases", PHASES), (STREAM,),
                                    policy="poll", interval_ns=1 * MS, window_ns=20 * MS,
                                    threshold_pct=5)
    window = {w.job: w for w in result.windows}
    assert sorted(window) == list(range(12)) and not stats.window_fallback
    assert stats.latency_from == "region-entry" and stats.write_errors == 0
    assert any(e.action == "freeze" for e in actions)
    for e, after in zip(actions, actions[1:] + [None]):
        if e.action != "freeze":
            continue
        w = window[e.job]
        assert (e.reason, e.region) == ("usage", STREAM)
        assert w.enter_ns <= e.t_ns <= w.exit_ns, (e, w)
        assert e.latency_ns == e.t_ns - w.enter_ns
        # Its thaw, the monitor's next action: at the window's exit (or the job's end).
        assert after is not None and after.action == "thaw" and after.job == e.job
        assert after.reason in ("region-exit", "complete") and after.t_ns >= w.exit_ns
    assert not freeze_requested(groups.best_effort)


def test_without_markers_the_monitor_follows_releases_and_says_so_once(groups, tmp_path):
    # An aggressor's job declares no regions: nothing to follow but its releases. Each job
    # works 10 ms: the monitor wakes at the release, as the runner does, so a job of one pass
    # over 256 KiB (tens of µs) could end before a loaded host let the monitor read the block,
    # and every release would be late (CI saw 6 of 6 once).
    spec = critical("bw", (("size", "256K"),), jobs=6, work="time:10ms")
    result, stats, actions, stderr = run(groups, tmp_path, spec, (STREAM,))
    assert stats.window_fallback and stats.windows == 0
    assert stderr.count("publishes no regions") == 1
    assert result.windows == ()
    freezes = [e for e in actions if e.action == "freeze"]
    assert freezes and {(e.reason, e.region) for e in freezes} == {("release", None)}
    assert stats.releases == 6 and len(freezes) + stats.late_releases == 6
    jobs = {j.job: j for j in result.jobs}
    for e in freezes:
        assert e.t_ns >= jobs[e.job].release_ns
    assert not freeze_requested(groups.best_effort)


@pytest.mark.parametrize("names", [("phases.strem",), (STREAM, "nope")])
def test_a_name_the_running_task_lacks_is_refused_before_anything_is_touched(
        groups, tmp_path, names):
    notify = shm_path(f"test-{os.urandom(4).hex()}")
    (groups.best_effort / "cgroup.freeze").write_text("1")  # the monitor would thaw it
    try:
        with ProcessGroup() as owner:
            PeriodicTask.launch(critical("phases", PHASES), owner, notify=notify)
            spec = MonitorSpec(policy="event", best_effort=(str(groups.best_effort),),
                               notify=str(notify), window_regions=names)
            with pytest.raises(InputError) as raised:
                Monitor.start(spec, owner)
            assert freeze_requested(groups.best_effort)  # untouched: refused before start-up
    finally:
        notify.unlink(missing_ok=True)
        (groups.best_effort / "cgroup.freeze").write_text("0")
    message = str(raised.value)
    assert "--window-region" in message and "has no region" in message
    assert "phases.compute, phases.stream" in message
