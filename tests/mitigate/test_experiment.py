"""`intercore experiment protection` end to end on this host (real job runners, real cgroups,
the real monitor), in quick mode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from intercore.store import Store


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "intercore", "experiment", "protection", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_same_core_protection_quick(tmp_path, real_cgroups, test_root):
    db = tmp_path / "x.db"
    proc = _run("--quick", "--placement", "same-core", "--root", test_root, "--db", str(db),
                "-o", str(tmp_path / "out"), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    same = doc["placements"]["same-core"]
    for scenario in ("solo", "interference", "protected"):
        assert same[scenario]["n"] == 20
        assert set(same[scenario]) >= {"misses", "miss_ratio", "p50_ms", "p99_ms", "max_ms",
                                       "noise_progress"}
    # On one CPU at equal SCHED_FIFO priority the victim waits for the 40 ms noise job: a
    # scheduling fact, not a noisy measurement, so it must show.
    assert same["interference"]["misses"] >= 5
    assert same["solo"]["misses"] == 0
    # The plan separated the pair and the monitor froze the noise at every release.
    assert any(g["monitor"] == "freeze" for g in same["plan"]["groups"])
    assert same["monitor"]["freezes"] >= 15
    assert same["protected"]["misses"] == 0
    assert same["protected"]["noise_progress"] > 0.5
    for figure in same["figures"]:
        assert (tmp_path / "out" / figure.rsplit("/", 1)[1]).stat().st_size > 1000
    with Store.open(db) as store:
        jobs = store.jobs.of_invocation(doc["invocation_id"])
    assert len(jobs[("same-core/protected", "same-core/victim")]) == 20
    assert len(jobs[("same-core/solo", "same-core/victim")]) == 20
    assert ("same-core/noise-alone", "same-core/noise") in jobs
    assert not any(p.name == test_root for p in real_cgroups.roots_named(test_root))


@pytest.mark.parametrize("args, field", [
    (["--theta", "1"], "--theta"),
    (["--placement", "sideways"], "--placement"),
    (["--policy", "sometimes"], "--policy"),
    (["--jobs", "1"], "--jobs"),
])
def test_bad_options_exit_2_before_anything_runs(tmp_path, args, field, real_cgroups, test_root):
    proc = _run(*args, "--root", test_root, "--db", str(tmp_path / "x.db"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert field in proc.stderr
    assert not (tmp_path / "x.db").exists()
    assert not real_cgroups.roots_named(test_root)
