"""`intercore results merge` on stores written by real short runs (a `measure` and a quick
campaign into each of two stores), then `campaign report` of the merged campaigns."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.host.topology import read_topology

pytestmark = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")

CAMPAIGN = """\
name: tiny
repetitions: 3
rounds: 2
seed: 5
guests:
  crit: {kind: critical, tasks: [{name: chase, victim: "ptrchase:size=256K"}]}
  engine: {kind: engine}
generators:
  engine: {sizes: [64KiB], ops: [write]}
"""


def intercore(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def rows(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("merge")
    (tmp / "tiny.yaml").write_text(CAMPAIGN)
    made = []
    for name in ("lab1", "lab2"):
        db = tmp / f"{name}.db"
        measured = intercore("measure", "run", "ptrchase:size=256K", "-a", "bw:op=write,size=256K",
                             "--runs", "3", "--no-canary", "--db", str(db))
        assert measured.returncode == 0, measured.stderr
        ran = intercore("measure", "campaign", "run", str(tmp / "tiny.yaml"), "--quick",
                        "--no-canary",
                        "--db", str(db))
        assert ran.returncode == 0, ran.stderr
        made.append(db)
    return tmp, made


@pytest.mark.slow
def test_merge_twice_adds_each_run_once_and_reports_the_hosts(stores):
    tmp, (a, b) = stores
    out = tmp / "all.db"
    first = intercore("results", "merge", str(a), str(b), "-o", str(out), "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["invocations"] == rows(a, "invocations") + rows(b, "invocations") == 10
    assert [s["renamed"] for s in doc["stores"]] == [{}, {"tiny": "tiny@lab2"}]
    assert rows(out, "samples") == rows(a, "samples") + rows(b, "samples")
    again = intercore("results", "merge", str(a), str(b), "-o", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert [s["invocations"] for s in json.loads(again.stdout)["stores"]] == [0, 0]
    assert (rows(out, "invocations"), rows(out, "campaign_runs")) == (10, 8)

    shown = json.loads(intercore("results", "show", "1", "--db", str(out), "--json").stdout)
    assert shown["origin"]["store"] == str(a.resolve()) and shown["origin"]["id"] == 1

    report = intercore("measure", "campaign", "report", "tiny", "tiny@lab2", "--db", str(out), "-o",
                       str(tmp / "hosts.html"), "--json")
    assert report.returncode == 0, report.stderr
    hosts = json.loads(report.stdout)["hosts"]
    assert [h["campaign"] for h in hosts] == ["tiny", "tiny@lab2"]
    assert all(h["runs"] == 4 for h in hosts)
    page = (tmp / "hosts.html").read_text()
    assert '<section id="hosts-side-by-side">' in page


@pytest.mark.slow
def test_a_bad_store_exits_2_and_changes_nothing(stores, tmp_path):
    _, (a, b) = stores
    out = tmp_path / "all.db"
    assert intercore("results", "merge", str(a), "-o", str(out)).returncode == 0
    before = out.read_bytes()
    bad = tmp_path / "notes.db"
    bad.write_text("not a store\n" * 50)
    refused = intercore("results", "merge", str(b), str(bad), "-o", str(out))
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: {bad}: not a usable results store")
    assert len(refused.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.db", "notes.db"]
    missing = intercore("results", "merge", str(tmp_path / "nope.db"), "-o", str(out))
    assert missing.returncode == 2 and "no results store here" in missing.stderr
