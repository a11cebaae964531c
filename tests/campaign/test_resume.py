"""Kill a real `intercore measure campaign run` mid-run (SIGKILL, SIGTERM), resume it, and
check that the store holds every run exactly once, with nothing from the run that was cut off."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.host.topology import read_topology

from _procs import native_processes

pytestmark = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                reason="needs two online CPUs (victim + engine)")

# 4 setups x 2 rounds; ~0.1-0.3 s a run, so there is time to catch one in flight.
CAMPAIGN = """\
name: killme
repetitions: 10
rounds: 2
seed: 11
guests:
  crit: {kind: critical, tasks: [{name: chase, victim: "ptrchase:size=1M"}]}
  engine: {kind: engine}
generators:
  engine: {sizes: [64KiB, 256KiB, 1MiB], ops: [write]}
"""
TOTAL_RUNS = 8


def intercore(*args: str) -> list[str]:
    return [sys.executable, "-m", "intercore", *args]


def recorded(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM campaign_runs").fetchone()[0]
    except sqlite3.OperationalError:  # the store or its tables do not exist yet
        return 0


def victim_of(pid: int) -> bool:
    """Whether `pid` has an ic-victim child right now: a run is in flight."""
    for child, name in native_processes():
        try:
            status = Path(f"/proc/{child}/status").read_text()
        except OSError:
            continue
        if name == "ic-victim" and f"\nPPid:\t{pid}\n" in status:
            return True
    return False


def start_and_stop(tmp_path: Path, sig: int, after: int) -> tuple[Path, int]:
    """Start the campaign, deliver `sig` while a run is in flight once `after` runs are
    recorded; return the store and the run count at that moment."""
    path, db = tmp_path / "c.yaml", tmp_path / "s.db"
    path.write_text(CAMPAIGN)
    proc = subprocess.Popen(intercore("measure", "campaign", "run", str(path), "--quick",
                                      "--no-canary",
                                      "--db", str(db)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (recorded(db) >= after and victim_of(proc.pid)):
            assert proc.poll() is None, f"finished before it could be stopped: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "no run in flight after 120 s"
            time.sleep(0.005)
        count = recorded(db)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (-sig if sig == signal.SIGKILL else 128 + sig), err
    return db, count


def check_exactly_once(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT round, setup, status, invocation_id FROM campaign_runs"
                            ).fetchall()
        schedule = json.loads(conn.execute("SELECT schedule_json FROM campaigns").fetchone()[0])
        orphans = conn.execute(
            "SELECT COUNT(*) FROM invocations WHERE id NOT IN "
            "(SELECT invocation_id FROM campaign_runs WHERE invocation_id IS NOT NULL)"
        ).fetchone()[0]
        per_run = conn.execute(
            "SELECT COUNT(*) FROM samples WHERE region_name = 'total' GROUP BY invocation_id"
        ).fetchall()
    assert len(rows) == TOTAL_RUNS
    assert sorted((r, s) for r, s, *_ in rows) == sorted(map(tuple, schedule))
    assert all(status == "done" for _, _, status, _ in rows)
    assert orphans == 0  # the killed run left no invocation and no samples behind
    # --quick: 5 repetitions; a solo run measures 2 x ceil(5/2) isolated ones, an
    # interference run 5 pairs.
    assert sorted(n for (n,) in per_run) == [6, 6] + [10] * 6


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.slow
def test_stopped_campaign_resumes_without_losing_or_duplicating_a_run(tmp_path, sig):
    db, count = start_and_stop(tmp_path, sig, after=2)
    assert 2 <= count == recorded(db) < TOTAL_RUNS  # the run in flight was not recorded
    status = subprocess.run(intercore("measure", "campaign", "status", "killme", "--db", str(db),
                                      "--json"), capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["pending"] == TOTAL_RUNS - count

    resumed = subprocess.run(intercore("measure", "campaign", "resume", "killme", "--no-canary",
                                       "--db", str(db), "--json"),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert (out["already"], out["done"], out["complete"]) == (count, TOTAL_RUNS - count, True)
    check_exactly_once(db)
