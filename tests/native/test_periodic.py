"""ic-periodic against docs/native-contract.md ("Periodic runner"): real processes, real
clocks, real signals. Times are checked for consistency (grid, ordering, the miss flag
agreeing with the deadline), never against timing goals: the host is shared and noisy."""

from __future__ import annotations

import itertools
import json
import mmap
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from intercore.base.errors import InputError, NativeError
from intercore.measure.periodic.runner import (
    JobResult,
    PeriodicSpec,
    PeriodicTask,
    duration_arg,
    run_periodic,
    start_together,
)
from intercore.base.procs import ProcessGroup, shm_path
from intercore.base.native import tool

MS = 1_000_000
SMALL_MATMUL = (("n", "16"), ("k", "256"), ("m", "9"))


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool("ic-periodic")), *args], capture_output=True, text=True,
                          check=False, timeout=timeout)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def check_grid(jobs: tuple[JobResult, ...], origin_ns: int, period_ns: int) -> None:
    """Releases on the grid origin + k*period, each job after its release and after the
    previous job, response and miss flag consistent."""
    previous_end = 0
    for j in jobs:
        assert (j.release_ns - origin_ns) % period_ns == 0, j
        assert j.start_ns >= j.release_ns and j.start_ns >= previous_end, j
        assert j.end_ns > j.start_ns and j.response_ns == j.end_ns - j.release_ns, j
        assert 0 < j.cpu_ns, j
        previous_end = j.end_ns


def test_victim_jobs_on_a_periodic_grid(cpu):
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=20 * MS, deadline_ns=20 * MS, jobs=6, cpu=cpu, priority=10)
    result = run_periodic([spec])["v"]
    assert [j.job for j in result.jobs] == list(range(6))
    assert result.summary.jobs == result.summary.planned == 6
    assert result.summary.rt is True and result.ready["rt"] is True
    origin = result.summary.start_at_ns
    check_grid(result.jobs, origin, spec.period_ns)
    assert result.jobs[0].release_ns >= origin
    for j in result.jobs:
        assert j.missed == (j.response_ns > spec.deadline_ns)
        assert j.accesses is None  # victims do not count accesses
    assert result.summary.misses == sum(j.missed for j in result.jobs)
    assert result.summary.max_response_ns == max(result.response_ns)
    assert result.summary.checksum is not None


def test_same_seed_same_work():
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=2 * MS, jobs=2)
    first = run_periodic([spec])["v"].summary.checksum
    assert run_periodic([spec])["v"].summary.checksum == first
    other = PeriodicSpec(**{**spec.__dict__, "seed": 2})
    assert run_periodic([other])["v"].summary.checksum != first


def test_aggressor_job_does_whole_passes(caches):
    size = 16 * caches.line * 64
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw",
                        params=(("op", "write"), ("size", str(size))),
                        period_ns=5 * MS, jobs=4, work="passes:3")
    result = run_periodic([spec])["a"]
    assert result.ready["work"] == "passes:3" and result.ready["size"] == size
    per_job = 3 * size // caches.line
    assert [j.accesses for j in result.jobs] == [per_job] * 4
    assert result.summary.accesses == 4 * per_job
    assert result.summary.bytes == 4 * per_job * caches.line


def test_aggressor_job_spends_its_cpu_budget():
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=30 * MS, jobs=3, work="time:5ms")
    result = run_periodic([spec])["a"]
    assert result.ready["work"] == "time:5ms"
    for j in result.jobs:
        assert j.cpu_ns >= 5 * MS and j.accesses > 0


def test_tiny_deadline_marks_every_job_missed():
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=5 * MS, deadline_ns=1_000, jobs=5)
    result = run_periodic([spec])["v"]
    assert all(j.missed for j in result.jobs)
    assert result.summary.misses == 5


@pytest.mark.parametrize("overrun", ["skip", "late"])
def test_overrun_policy_is_applied_and_recorded(overrun):
    # Each job burns 4 ms of CPU against a 1 ms period: every job overruns.
    spec = PeriodicSpec(name="a", binary="aggr", kind="bw", params=(("size", "64K"),),
                        period_ns=1 * MS, deadline_ns=1 * MS, jobs=4, work="time:4ms",
                        overrun=overrun)
    result = run_periodic([spec])["a"]
    jobs = result.jobs
    check_grid(jobs, result.summary.start_at_ns, spec.period_ns)
    assert all(j.missed for j in jobs)
    for before, after in itertools.pairwise(jobs):
        index = (after.release_ns - result.summary.start_at_ns) // spec.period_ns
        previous = (before.release_ns - result.summary.start_at_ns) // spec.period_ns
        if overrun == "late":
            assert index == previous + 1 and after.skipped == 0
            assert after.start_ns - after.release_ns >= 0
        else:
            # The first release not before the previous job's end, the rest counted.
            assert after.release_ns >= before.end_ns
            assert after.release_ns - spec.period_ns < before.end_ns
            assert after.skipped == index - previous - 1 >= 3
    assert result.summary.skipped == sum(j.skipped for j in jobs)


def test_tasks_share_one_time_origin():
    a = PeriodicSpec(name="a", binary="victim", kind="matmul", params=SMALL_MATMUL,
                     period_ns=10 * MS, jobs=3)
    b = PeriodicSpec(name="b", binary="aggr", kind="bw", params=(("size", "64K"),),
                     period_ns=20 * MS, offset_ns=5 * MS, jobs=2)
    with ProcessGroup() as group:
        tasks = [PeriodicTask.launch(s, group) for s in (a, b)]
        assert all(t.ready["start"] == "stdin" for t in tasks)
        start = start_together(tasks)
        results = {t.spec.name: t.result() for t in tasks}
    assert results["a"].summary.start_at_ns == results["b"].summary.start_at_ns == start
    assert results["a"].jobs[0].release_ns == start
    assert results["b"].jobs[0].release_ns == start + 5 * MS
    check_grid(results["b"].jobs, start + 5 * MS, 20 * MS)


def test_sigterm_stops_after_the_current_job_and_still_flushes():
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=10 * MS, jobs=100_000)
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group)
        start_together([task])
        time.sleep(0.3)
        task.stop()
        result = task.result(timeout=30)
    assert task.process.proc.returncode == 0
    assert result.summary.stopped is True
    assert 1 <= result.summary.jobs < spec.jobs
    assert len(result.jobs) == result.summary.jobs
    check_grid(result.jobs, result.summary.start_at_ns, spec.period_ns)


def test_sigterm_before_the_start_line_runs_nothing():
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL)
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group)
        task.stop()
        result = task.result(timeout=30)
    assert result.summary.jobs == 0 and result.jobs == ()


# docs/native-contract.md, "Notification block": offset -> (format, field)
NOTIFY = {"magic": (0, "<I"), "version": (4, "<I"), "seq": (8, "<I"), "waiters": (12, "<I"),
          "state": (16, "<I"), "active": (20, "<I"), "next_release_ns": (24, "<Q"),
          "next_job": (32, "<Q"), "release_ns": (40, "<Q"), "released": (48, "<Q"),
          "completed": (56, "<Q"), "end_ns": (64, "<Q"), "period_ns": (72, "<Q"),
          "deadline_ns": (80, "<Q"), "pid": (88, "<i")}


def read_notify(block: mmap.mmap) -> dict:
    return {name: struct.unpack_from(fmt, block, off)[0] for name, (off, fmt) in NOTIFY.items()}


def test_notification_block_follows_the_jobs():
    path = shm_path("test-notify")
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=40 * MS, deadline_ns=30 * MS, jobs=5, priority=10)
    try:
        with ProcessGroup() as group:
            task = PeriodicTask.launch(spec, group, notify=path)
            with open(path, "rb") as f:
                block = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_READ)
            before = read_notify(block)
            assert before["magic"] == 0x314E4349 and block[:4] == b"ICN1"
            assert before["version"] == 1 and before["state"] == 1  # running, no job yet
            assert before["pid"] == task.pid and before["released"] == 0
            assert (before["period_ns"], before["deadline_ns"]) == (40 * MS, 30 * MS)
            start = start_together([task])
            # The next release is announced before the runner sleeps until it.
            deadline = time.monotonic() + 10
            while read_notify(block)["next_release_ns"] != start and time.monotonic() < deadline:
                time.sleep(0.001)
            assert read_notify(block)["next_release_ns"] == start
            result = task.result()
        after = read_notify(block)
        assert after["state"] == 2  # done; the last announcement stays
        assert after["next_release_ns"] == result.jobs[-1].release_ns and after["next_job"] == 4
        assert after["released"] == after["completed"] == 5 and after["active"] == 0
        last = result.jobs[-1]
        assert after["release_ns"] == last.release_ns and after["end_ns"] == last.end_ns
        # ready, 5 x (next, start, complete), end: every publication moved the futex word
        # by two (the seqlock: odd while publishing, even once done).
        assert after["seq"] - before["seq"] == 2 * (5 * 3 + 1) and after["seq"] % 2 == 0
        block.close()
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("args, message", [
    (["victim", "nosuch"], "unknown victim"),
    (["aggr", "nosuch"], "unknown aggressor"),
    (["matmul"], "expected 'victim' or 'aggr'"),
    (["--jobs", "0", "victim", "matmul"], "--jobs"),
    (["--period", "0", "victim", "matmul"], "--period"),
    (["--work", "passes:2", "victim", "matmul"], "applies to aggressors only"),
    (["--work", "passes:0", "aggr", "bw"], "passes:N"),
    (["--overrun", "never", "victim", "matmul"], "--overrun"),
    (["--start-at", "soon", "victim", "matmul"], "--start-at"),
    (["--cgroup", "/nonexistent-cgroup", "victim", "matmul"], "not a cgroup directory"),
    (["--cgroup", "a,,b", "victim", "matmul"], "empty item"),
    (["victim", "matmul", "--n", "0"], "--n"),
    ([], "missing 'victim KIND'"),
])
def test_bad_input_is_a_usage_error(args, message):
    result = run_cli(*args)
    assert result.returncode == 2, result
    assert message in result.stderr and result.stderr.startswith("ic-periodic: ")
    assert result.stdout == ""


def test_start_time_in_the_past_fails_without_running_a_job():
    result = run_cli("--start-at", "1", "victim", "matmul")
    assert result.returncode == 1 and "in the past" in result.stderr
    assert [e["event"] for e in events(result.stdout)] == ["ready"]


def test_refused_rt_priority_falls_back_with_a_warning():
    setpriv = Path("/usr/bin/setpriv")
    if not setpriv.exists():
        pytest.skip("setpriv is needed to drop CAP_SYS_NICE")
    result = subprocess.run([str(setpriv), "--bounding-set", "-sys_nice", "--",
                             str(tool("ic-periodic")), "--jobs", "2", "--period", "1ms",
                             "--rt-priority", "10", "victim", "matmul", "--n", "8"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = events(result.stdout)
    assert lines[0]["rt"] is False and lines[-1]["rt"] is False
    assert lines[-1]["jobs"] == 2
    assert "--rt-priority 10 refused" in result.stderr


def test_help_lists_both_families_and_the_kind_options():
    general = run_cli("--help")
    assert general.returncode == 0
    assert "victims: matmul" in general.stdout and "aggressors: bw" in general.stdout
    assert "--start-at" in general.stdout and "--notify" in general.stdout
    kind = run_cli("aggr", "bw", "--help")
    assert kind.returncode == 0 and "--op" in kind.stdout and "--size" in kind.stdout


def test_spec_validation_and_argv():
    with pytest.raises(InputError, match="aggressors only"):
        PeriodicSpec(name="v", binary="victim", kind="matmul", work="passes:1")
    with pytest.raises(InputError, match="priority"):
        PeriodicSpec(name="v", binary="victim", kind="matmul", priority=100)
    spec = PeriodicSpec(name="n", binary="aggr", kind="bw", params=(("op", "write"),),
                        period_ns=200 * MS, deadline_ns=50 * MS, cpu=1, priority=5,
                        work="time:20ms", cgroups=("/a", "/b"))
    argv = spec.argv(start_at=123, notify="/dev/shm/x")
    assert argv[argv.index("--period") + 1] == duration_arg(200 * MS) == "0.200000000"
    assert argv[argv.index("--start-at") + 1] == "123"
    assert argv[argv.index("--cgroup") + 1] == "/a,/b"
    assert argv[argv.index("aggr"):] == ["aggr", "bw", "--op", "write"]


def test_runner_that_dies_is_reported():
    spec = PeriodicSpec(name="v", binary="victim", kind="matmul", params=SMALL_MATMUL,
                        period_ns=10 * MS, jobs=1000)
    with ProcessGroup() as group:
        task = PeriodicTask.launch(spec, group)
        start_together([task])
        task.process.proc.send_signal(signal.SIGKILL)
        with pytest.raises(NativeError, match="exited with -9"):
            task.result(timeout=30)
