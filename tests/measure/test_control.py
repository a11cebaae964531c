"""intercore.measure.aggressors.control against a real ic-aggr process and its control block."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import time

import pytest

from intercore.base.errors import NativeError
from intercore.measure.aggressors.control import MAGIC, SIZE, Cmd, ControlBlock, Snapshot, State
from intercore.base.native import tool


@pytest.fixture
def aggressor(tmp_path):
    """(process, ControlBlock, ready line) of a bw aggressor with default options, pinned to
    the last usable CPU; killed at teardown if the test left it running, which fails it."""
    path = tmp_path / "ctl"
    cpu = max(os.sched_getaffinity(0))
    proc = subprocess.Popen([str(tool("ic-aggr")), "bw", "--cpu", str(cpu), "--control",
                             str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready"
        with ControlBlock(path) as ctl:
            yield proc, ctl, ready
        left_running = proc.poll() is None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert not left_running, f"test left aggressor {proc.pid} running"


def wait_running(ctl: ControlBlock) -> None:
    deadline = time.monotonic() + 2
    while ctl.state != State.RUNNING:
        assert time.monotonic() < deadline, "aggressor never reached state RUNNING"
        time.sleep(0.001)


def test_block_starts_with_the_magic_in_the_file(aggressor):
    proc, ctl, _ready = aggressor
    raw = ctl.path.read_bytes()
    assert len(raw) == SIZE
    assert raw[:4] == b"ITC1" == struct.pack("<I", MAGIC)
    assert struct.unpack_from("<i", raw, 40)[0] == proc.pid
    ctl.stop()
    proc.communicate(timeout=2)


def test_snapshot_reads_live_counters(aggressor):
    proc, ctl, ready = aggressor
    wait_running(ctl)
    a = ctl.snapshot()
    time.sleep(0.05)
    b = ctl.snapshot()
    assert isinstance(a, Snapshot) and a.state == State.RUNNING and a.cmd == Cmd.RUN
    assert (b.pid, b.cpu) == (proc.pid, ready["cpu"])
    assert b.accesses > a.accesses > 0
    assert b.bytes > a.bytes > 0 and b.bytes % ready["line"] == 0
    assert b.heartbeat_ns > a.heartbeat_ns
    assert abs(time.monotonic_ns() - b.heartbeat_ns) < 1_000_000_000
    with pytest.raises(AttributeError):
        b.accesses = 0  # frozen
    ctl.stop()
    proc.communicate(timeout=2)


def test_pause_resume_stop_through_the_block(aggressor):
    proc, ctl, _ready = aggressor
    wait_running(ctl)
    ctl.pause(timeout=1)
    assert ctl.state == State.PAUSED and ctl.cmd == Cmd.PAUSE
    frozen = ctl.accesses
    time.sleep(0.1)
    assert ctl.accesses == frozen

    ctl.resume(timeout=1)
    assert ctl.state == State.RUNNING
    time.sleep(0.05)
    assert ctl.accesses > frozen

    ctl.stop(timeout=1)
    assert ctl.state == State.STOPPED
    out, err = proc.communicate(timeout=2)
    assert proc.returncode == 0, err
    stats = json.loads(out.splitlines()[-1])
    assert stats["event"] == "stats"
    assert stats["accesses"] == ctl.accesses
    assert stats["paused_s"] >= 0.1


def test_a_late_resume_does_not_undo_a_stop(aggressor):
    proc, ctl, _ready = aggressor
    ctl.stop()
    ctl.command(Cmd.RUN)
    proc.send_signal(signal.SIGUSR2)
    proc.communicate(timeout=2)
    assert proc.returncode == 0 and ctl.state == State.STOPPED


def test_timeout_names_the_pid(aggressor):
    proc, ctl, _ready = aggressor
    wait_running(ctl)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(TimeoutError, match=rf"pid {proc.pid}\b.*PAUSED"):
            ctl.pause(timeout=0.2)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    ctl.stop()
    proc.communicate(timeout=2)


def test_rejects_files_that_are_not_control_blocks(tmp_path):
    small = tmp_path / "small"
    small.write_bytes(b"\0" * 100)
    with pytest.raises(NativeError, match="too small"):
        ControlBlock(small)
    blank = tmp_path / "blank"
    blank.write_bytes(b"\0" * SIZE)
    with pytest.raises(NativeError, match="not an initialised control block"):
        ControlBlock(blank)
