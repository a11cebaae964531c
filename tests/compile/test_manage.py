"""The run-time manager on a real pthread program: the planted cache-hungry thread is the
first it favours, every decision carries its inputs, the program's status comes back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.compile.manager import why_it_cannot_help

PLANTED = Path(__file__).parent / "data" / "planted.c"


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    out = tmp_path_factory.mktemp("planted") / "planted"
    subprocess.run([cc, "-O2", "-pthread", str(PLANTED), "-o", str(out)], check=True)
    return out


def decisions(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.slow
def test_planted_cache_hungry_thread_is_favoured_first(planted, tmp_path) -> None:
    """Without a PMU (this host's case) the heatmap's predicted sensitivity says which
    thread is cache-hungry; with one, its cache misses do (native/tests/test_manage_rank.c
    covers that ranking with planted counts)."""
    heat = tmp_path / "heat.json"
    heat.write_text(json.dumps({"format": "intercore.heatmap/1", "regions": [
        {"region": "hungry", "delta": 4.0, "weight": 0.4}]}))
    log = tmp_path / "decisions.jsonl"
    done = subprocess.run([sys.executable, "-m", "intercore", "compile", "manage", "--interval",
                           "100",
                           "--heatmap", str(heat), "--log", str(log), "--", str(planted)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    lines = decisions(log)
    first = [d for d in lines if d["event"] == "decision"]
    assert first, lines
    top = first[0]
    assert top["rank"] == 1 and top["name"] == "hungry", first[:3]
    assert top["action"]["favoured"] is True
    assert set(top["inputs"]) == {"pmu", "misses_per_s", "nivcsw_per_s", "cpu_share",
                                  "sensitivity"}
    names = {d["name"] for d in first[:3]}
    assert {"hungry", "spin-a", "spin-b"} <= names | {"planted"}
    assert lines[-1] == {"event": "exit", "status": 0}


@pytest.mark.slow
def test_json_names_each_change_of_the_favoured_thread(planted, tmp_path) -> None:
    """Without --log the decisions still reach the summary, and no file is left behind."""
    done = subprocess.run([sys.executable, "-m", "intercore", "compile", "manage", "--interval",
                           "100",
                           "--sensitivity", "hungry=4", "--json", "--", str(planted)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    app, _, doc = done.stdout.rpartition("done\n")
    got = json.loads(doc)
    assert got["status"] == 0 and got["log"] is None and got["pmu"] in (True, False)
    assert got["rankings"] == len(got["favoured"]) >= 1
    assert got["favoured"][0]["name"] == "hungry"
    assert [f["t"] for f in got["favoured"]] == sorted(f["t"] for f in got["favoured"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_bad_option_and_missing_privilege(planted) -> None:
    bad = subprocess.run([sys.executable, "-m", "intercore", "compile", "manage", "--sensitivity",
                          "x",
                          "--", str(planted)], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--sensitivity" in bad.stderr
    import os
    if os.geteuid() == 0:
        pytest.skip("root may use SCHED_FIFO: the exit-3 path needs an unprivileged user")
    done = subprocess.run([sys.executable, "-m", "intercore", "compile", "manage", "--rt-priority",
                           "10", "--sensitivity", "hungry=4",
                           "--", str(planted)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 3 and "SCHED_FIFO" in done.stderr


def test_with_one_cpu_to_hand_out_it_turns_itself_off_before_the_program_starts(planted):
    one = subprocess.run([sys.executable, "-m", "intercore", "compile", "manage", "--cpus", "0",
                          "--sensitivity", "hungry=4", "--", str(planted)],
                         capture_output=True, text=True, timeout=60)
    assert one.returncode == 3, one.stderr
    assert "turns itself off" in one.stderr and "two or more" in one.stderr
    assert one.stdout == ""  # the program never ran


def test_cpu_share_alone_is_no_signal_for_cache_hunger():
    """Without a cache-miss counter the manager needs a predicted sensitivity; with either it
    runs; the counter's reason is quoted in the refusal."""
    no_pmu = "not supported by this CPU or hypervisor (no PMU)"
    refused = why_it_cannot_help((0, 1), predicted=False, misses=no_pmu)
    assert refused is not None and no_pmu in refused and "--heatmap" in refused
    assert why_it_cannot_help((0, 1), predicted=True, misses=no_pmu) is None
    assert why_it_cannot_help((0, 1), predicted=False, misses=None) is None
    assert "two or more" in (why_it_cannot_help((3,), predicted=True, misses=None) or "")
