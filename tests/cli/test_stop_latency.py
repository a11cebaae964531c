"""Every long command stops on the first Ctrl-C or SIGTERM within a second, exits 130 / 143
with one `stopped by` line and no traceback, and leaves nothing behind: no native process,
no /dev/shm block, no cgroup, no half-written output.

Each command is started as a user would (`python -m intercore`), and the signal lands at a
random moment from the instant the process catches it (/proc/PID/status SigCgt: what the
entry point does first, before importing the command line) to a few seconds into its work,
so start-up, imports, input checks and the work itself are all hit.

Under load, and why this test does not fail because of it. The host is a shared 2-vCPU VM;
a hog of our own runs beside every command (a busy loop on each CPU), and the command runs
at nice -10 (its children with it), so against one nice-0 hog per CPU each of its threads
gets at least 9548 / (9548 + 1024) = 90 % of a CPU. What nice cannot hold off is another
tenant's real-time work (the other suites here run SCHED_FIFO victims and aggressors, which
take a CPU from any SCHED_OTHER process for up to 0.95 s at a time), and that is transient;
a stop the command itself makes slow is slow at its moment every time (each one this test
found was: profile writing out every sample, 2.1-2.7 s; a job runner finishing its job,
2.05 s in 2 of 3 tries at one moment of matrix; a stop dropped in a finalizer, 5.5 s). So
a stop over the bound is tried again at the same moment, up to TRIES times, and the test
fails only on a moment that is slow every time. Measured after those fixes, beside the hog
and the other tenants' suites: 42 of 42 stops under 1 s at the first try, the slowest
0.18 s (learn train). Taking the transient rate p at the 95 % bound that 0 in 42 allows
(3/42 = 0.07), one moment fails falsely with p^6 = 1e-7, and the 42 moments of a run with
5e-6: below the 1 in 10 000 runs the developers' guide allows.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.host.topology import read_topology

from _campaigns import write_campaign
from _procs import native_processes, wait_no_native_processes

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                 reason="the commands need two online CPUs"),
              pytest.mark.skipif(os.geteuid() != 0, reason="runs the commands at nice -10")]

ROOT = Path(__file__).resolve().parents[2]
RUNS = 3  # per command and signal: 3 x 2 x 7 commands = 42 stops, about 4 minutes
TRIES = 6
HORIZON_S = 8.0  # after the handlers are in place: start-up (3-5 s beside the hog), then work
BOUND_S = 1.0
SCHED = {"measure": lambda tmp: [
             "measure", "run", "ptrchase:size=256K", "-a", "BwWrite(LLC)", "--runs", "500",
             "--no-canary", "--db", str(tmp / "r.db")],
         "matrix": lambda tmp: [
             "measure", "matrix", str(ROOT / "examples/tasksets/paper-000.yaml"), "--rounds", "20",
             "--block", "1s", "--no-canary", "-o", str(tmp / "m")],
         "campaign run": lambda tmp: [
             "measure", "campaign", "run", str(write_campaign(tmp / "c.yaml", reps=200)),
             "--no-canary", "--db", str(tmp / "c.db")],
         "gang": lambda tmp: [
             "mitigate", "gang", "--taskset", str(ROOT / "examples/tasksets/rt-gang.yaml"),
             "--jobs", "5000"],
         "profile": lambda tmp: ["measure", "profile", "run", "--victim", "susan", "-o",
                                 str(tmp / "p")],
         # The transformer: the default learner (linear-l2) trains in 5 s, which ends before
         # most of the moments drawn; the transformer's jitted steps are the stop to test.
         "learn train": lambda tmp: [
             "learn", "train", "--learner", "transformer", "-o", str(tmp / "model"),
             "--budget", "60"],
         "learn evaluate": lambda tmp: [
             "learn", "evaluate", "--folds", "2", "--learners", "transformer", "--budget",
             "60", "--figures", str(tmp / "figs")]}


def catches_stops(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(status.split("SigCgt:")[1].split()[0], 16)
    return all(caught >> (s - 1) & 1 for s in (signal.SIGINT, signal.SIGTERM))


# Left by design, not by the stop: a lock file stays where the lock is taken, and gang's
# and profile's output directories are made before they run (outputs are issue 18 item 2's).
KEPT = ("c.db.campaign.lock", "intercore-gang", "p")


def cgroups_of(pid: int) -> list[Path]:
    """intercore's groups named after the process `pid` (gang's intercore-gang-PID, ...);
    other tenants' groups come and go beside them."""
    return [p for p in Path("/sys/fs/cgroup").glob("*/intercore*")
            if re.search(rf"-{pid}(-|$)", p.name)]


@pytest.fixture
def hog():
    """A busy loop on every CPU, at the default priority, for the whole test."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 2)]
    yield
    for p in procs:
        p.kill()
        p.wait()


def stop_once(argv: list[str], sig: int, delay: float, cwd: Path
              ) -> tuple[int, float, int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "intercore", *argv], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.nice(-10))
    try:
        deadline = time.monotonic() + 30
        while not catches_stops(proc.pid):
            assert proc.poll() is None, f"ended before it caught a stop: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "never installed its stop handlers"
            time.sleep(0.001)
        time.sleep(delay)
        assert proc.poll() is None, f"ended before it was stopped: {proc.stderr.read()}"
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=30)
        latency = time.monotonic() - sent
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.pid, latency, proc.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", list(SCHED))
def test_a_long_command_stops_within_a_second_beside_a_hog(command, sig, tmp_path, hog):
    draw = random.Random(f"{command}/{int(sig)}")  # the same moments every run of the suite
    for i in range(RUNS):
        moment = draw.uniform(0, HORIZON_S)
        latencies = []
        while len(latencies) < TRIES and (not latencies or latencies[-1] >= BOUND_S):
            tmp = tmp_path / f"{i}-{len(latencies)}"
            tmp.mkdir()
            pid, latency, status, err = stop_once(SCHED[command](tmp), sig, moment, tmp)
            latencies.append(latency)
            lines = err.splitlines()
            assert status == 128 + sig, err
            assert "Traceback" not in err and "Exception ignored" not in err, err
            assert lines[-1].startswith("stopped by ") and \
                sum(line.startswith("stopped by") for line in lines) == 1, err
            assert wait_no_native_processes() == []
            assert not list(Path("/dev/shm").glob(f"intercore-{pid}-*"))
            assert cgroups_of(pid) == []
            # Nothing of the stopped run is left as output: every output is written at the end.
            assert not [p for p in tmp.iterdir() if p.suffix != ".db"
                        and p.name not in KEPT + ("c.yaml",)]
        print(f"stop latency {command} {signal.Signals(sig).name} at {moment:.2f} s: "
              + ", ".join(f"{t:.3f}" for t in latencies))
        assert min(latencies) < BOUND_S, \
            f"stopped {min(latencies):.3f} s after the signal at best of {TRIES} tries"


@pytest.mark.parametrize("gap_s", [0.0, 0.01, 0.05, 0.3])
def test_a_second_ctrl_c_does_not_turn_into_another_error(tmp_path, gap_s):
    """People press Ctrl-C twice. The second one lands in the first one's cleanup (stopping
    the aggressors, parking them): the command still ends as stopped, 130, one line (it was
    exit 1, 'pid N did not stop within 2.0 s (state Z)'), leaving no process behind."""
    proc = subprocess.Popen([sys.executable, "-m", "intercore", *SCHED["measure"](tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(name == "ic-victim" for _, name in native_processes()):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the victim never started"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        time.sleep(gap_s)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "stopped by Ctrl-C (SIGINT)", err
    assert "error:" not in err and "Traceback" not in err, err
    assert wait_no_native_processes() == []
