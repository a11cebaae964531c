"""`intercore measure run` end to end: real victims, real aggressors, real pinning, a real store."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.host.topology import largest_private, llc, read_topology

from _procs import native_processes, wait_no_native_processes

TOPO = read_topology()
pytestmark = pytest.mark.skipif(len(TOPO.online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")


def chase_size() -> int:
    """Between the private and the shared cache, from the detected caches."""
    private = largest_private(TOPO, TOPO.online_cpus[-1]).size
    return min(4 * private, llc(TOPO).size // 4)


def intercore(*args: str, timeout: float = 300, cwd: Path | None = None
              ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def small_aggressor() -> str:
    # A bandwidth writer as large as the private cache x4: quick to initialise, still traffic.
    return f"bw:op=write,size={4 * largest_private(TOPO, TOPO.online_cpus[0]).size}"


@pytest.mark.slow
def test_measure_runs_five_pairs_and_stores_every_raw_sample(tmp_path):
    db = tmp_path / "r.db"
    proc = intercore("measure", "run", f"ptrchase:size={chase_size()}", "-a", small_aggressor(),
                     "-a", "PLLRead(LLC)", "--runs", "5", "--no-canary", "--json",
                     "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"victim", "aggressors", "regime", "regions"}
    assert out["regime"] == "unknown"  # no canary was run, so nothing is claimed
    assert len(out["aggressors"]) == 2
    names = {(r["aggressor_set"], r["name"]) for r in out["regions"]}
    assert names == {(s["label"], region) for s in out["aggressors"]
                     for region in ("total", "ptrchase.walk")}
    for r in out["regions"]:
        assert set(r) >= {"name", "n", "delta", "delta_ci", "paired_median", "paired_max",
                          "iso", "int"}
        assert r["n"] == 5
        lo, hi = r["delta_ci"]
        assert lo <= r["delta"] <= hi
        assert r["iso"]["max"] >= r["iso"]["median"] > 0
        assert r["paired_max"] >= r["paired_median"]
    con = sqlite3.connect(db)
    # 2 sets x 5 pairs x 2 conditions x 2 regions
    assert con.execute("select count(*) from samples").fetchone()[0] == 40
    assert con.execute("select count(*) from samples where condition='iso'").fetchone()[0] == 20
    roles = sorted(r[0] for r in con.execute("select role from workloads"))
    assert roles == ["aggressor", "aggressor", "victim"]
    stats = [json.loads(r[0]) for r in con.execute(
        "select stats_json from workloads where role='aggressor'")]
    assert all(s["bytes"] > 0 for s in stats)


@pytest.mark.slow
def test_measure_with_canary_reports_a_regime(tmp_path):
    proc = intercore("measure", "run", "matmul:n=32,k=512,m=9", "-a", small_aggressor(), "--runs",
                     "3",
                     "--json", "--no-store", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["regime"] in ("shared", "not-shared", "unknown", "mixed")
    assert [c["when"] for c in out["canary"]] == ["before", "after"]
    design = out["design"]
    assert design["interleaved"] and design["block_pairs"]["pairs"] >= 1
    assert sum(design["regime_blocks"].values()) == len(design["blocks"]) >= 1
    assert len(design["probes"]) == len(design["blocks"]) + 1
    # the core probe beside the canary: its own state per block and in the summary
    assert len(design["core_probes"]) == len(design["probes"])
    assert sum(design["core_blocks"].values()) == len(design["blocks"])
    assert {b["core"] for b in design["blocks"]} <= {"same-core", "separate-cores", "unknown"}
    assert all(c["core"] in ("same-core", "separate-cores", "unknown") and c["core_ratios"]
               for c in out["canary"])
    for r in out["regions"]:
        assert sum(v["n"] for v in r["by_regime"].values()) == r["n"] == 3
        assert "witness" in r  # null: three pairs show no two-state mixture
    assert list(tmp_path.iterdir()) == []  # --no-store writes no file


@pytest.mark.slow
def test_measure_stores_and_prints_each_blocks_core_state(tmp_path):
    db = tmp_path / "r.db"
    proc = intercore("measure", "run", "matmul:n=32,k=512,m=9", "-a", small_aggressor(), "--runs",
                     "2",
                     "--block-pairs", "1", "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("core: "))
    assert line.startswith("core: same-core ") and "separate-cores" in line and "(before: " in line
    con = sqlite3.connect(db)
    stored = {r[0] for r in con.execute("select core from samples")}
    assert stored and stored <= {"same-core", "separate-cores", "unknown"}


@pytest.mark.parametrize("args,needle", [
    (["ptrchase", "-a", "BwRead(L9)"], "--aggressor"),
    (["ptrchase", "-a", "bw:size=12XB"], "12XB"),
    (["ptrchase:size=12XB"], "12XB"),
    (["ptrchase", "--victim-cpu", "99"], "--victim-cpu"),
    (["ptrchase", "-a", "BwRead(LLC)@99"], "CPU 99"),
    (["ptrchase", "--runs", "0"], "--runs"),
    (["nosuchvictim"], "VICTIM"),
    (["matmul", "-p", "colour=blue"], "--param"),
])
@pytest.mark.slow
def test_bad_input_exits_2_naming_the_argument(tmp_path, args, needle):
    db = tmp_path / "r.db"
    proc = intercore("measure", "run", *args, "--no-canary", "--db", str(db))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert needle in proc.stderr
    assert not db.exists()


def _wait_for_victim(proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(name == "ic-victim" for _, name in native_processes()):
            time.sleep(1.0)  # let it get well into its repetitions
            return
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    pytest.fail("victim never started")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.slow
def test_killed_mid_run_leaves_no_rows_and_no_processes(tmp_path, sig):
    db = tmp_path / "r.db"
    # A first, complete run so the store exists and has rows to keep.
    ok = intercore("measure", "run", f"ptrchase:size={chase_size()}", "-a", small_aggressor(),
                   "--runs", "2", "--no-canary", "--db", str(db))
    assert ok.returncode == 0, ok.stderr
    before = sqlite3.connect(db).execute("select count(*) from samples").fetchone()[0]
    proc = subprocess.Popen([sys.executable, "-m", "intercore", "measure", "run",
                             f"ptrchase:size={chase_size()}", "-a", small_aggressor(),
                             "--runs", "500", "--no-canary", "--db", str(db)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for_victim(proc)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.returncode in (-sig, 128 + sig)
    assert wait_no_native_processes() == []
    con = sqlite3.connect(db)
    assert con.execute("select count(*) from samples").fetchone()[0] == before
    assert con.execute("select count(*) from invocations").fetchone()[0] == 1
    # Its blocks live in private directories named after it (procs.shm_path); other
    # intercore processes on the host have theirs, which are not this run's to account for.
    assert not list(Path("/dev/shm").glob(f"intercore-{proc.pid}-*"))


def test_a_ci_below_one_is_flagged_in_the_table():
    from intercore.cli.measure import render
    from intercore.cli.output import console
    from intercore.measure.harness.paired import Plan, VictimSpec
    from intercore.base.sample import Sample
    from intercore.measure.harness.comparison import comparisons
    from intercore.measure.harness.session import Result, _warnings

    samples = []
    for pair, r in enumerate((0.8, 0.82, 0.85, 0.81, 0.83)):
        for cond, t in (("iso", 1000), ("int", int(1000 * r))):
            samples.append(Sample(0, 2 * pair + (cond == "int"), pair, cond,
                                  "A" if cond == "int" else "", 0, "total", t, t, 0, 1))
    plan = Plan(VictimSpec("matmul"), (), 5, 1)
    regions = comparisons(samples)
    result = Result(plan, regions, "unknown", [], _warnings(plan, regions, {}))
    with console.capture() as cap:
        render(result)
    text = cap.get()
    assert "0.820 !" in text.replace("\n", " ") or "!" in text.split("0.820")[1][:12]
    assert "CI below 1" in text and "isolated half" in text
