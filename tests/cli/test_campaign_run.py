"""`intercore measure campaign run | resume | status | report | compare | export` end to end."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from intercore.campaign import runner
from intercore.cli.campaign_run import QUICK_HELP
from intercore.host.topology import read_topology

pytestmark = pytest.mark.slow

needs_two_cpus = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                    reason="needs two online CPUs (victim + engine)")

CAMPAIGN = """\
name: cli
repetitions: 8
rounds: 3
seed: 4
guests:
  crit: {kind: critical, tasks: [{name: chase, victim: "ptrchase:size=256K"}]}
  engine: {kind: engine}
generators:
  engine: {sizes: [64KiB, 1MiB], ops: [write]}
"""


def intercore(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two quick runs of the same file, as campaigns `cli` and `cli-again`."""
    tmp = tmp_path_factory.mktemp("cli")
    path, db = tmp / "cli.yaml", tmp / "s.db"
    path.write_text(CAMPAIGN)
    first = intercore("measure", "campaign", "run", str(path), "--quick", "--no-canary", "--db",
                      str(db),
                      "--json")
    assert first.returncode == 0, first.stderr
    second = intercore("measure", "campaign", "run", str(path), "--quick", "--no-canary", "--db",
                       str(db),
                       "--name", "cli-again")
    assert second.returncode == 0, second.stderr
    return tmp, db, json.loads(first.stdout), second.stdout


@needs_two_cpus
def test_run_prints_what_it_did(store):
    _, _, out, text = store
    # --quick: 2 rounds of solo + 2 interference setups
    assert (out["campaign"], out["total"], out["done"], out["skipped"]) == ("cli", 6, 6, 0)
    assert out["complete"] and out["regime"] == "unknown" and out["wall_s"] > 0
    assert "campaign cli-again" in text and "complete" in text
    assert "intercore measure campaign report cli-again" in text


@needs_two_cpus
def test_status_lists_campaigns_and_details_one(store):
    _, db, _, _ = store
    listing = intercore("measure", "campaign", "status", "--db", str(db), "--json")
    assert listing.returncode == 0, listing.stderr
    assert [c["name"] for c in json.loads(listing.stdout)] == ["cli", "cli-again"]
    one = json.loads(intercore("measure", "campaign", "status", "cli", "--db", str(db),
                               "--json").stdout)
    assert (one["total"], one["done"], one["pending"], one["quick"]) == (6, 6, 0, True)
    assert {s["name"]: s["done"] for s in one["setups"]} == {
        "solo": 2, "interf_write_64KiB": 2, "interf_write_1MiB": 2}
    table = intercore("measure", "campaign", "status", "2", "--db", str(db))
    assert "cli-again" in table.stdout and "interf_write_1MiB" in table.stdout


@needs_two_cpus
def test_report_writes_one_html_file(store):
    tmp, db, _, _ = store
    target = tmp / "out" / "cli.html"
    # Into a directory that does not exist: refused, and none is made (issue 18).
    proc = intercore("measure", "campaign", "report", "cli", "--db", str(db), "-o", str(target))
    assert proc.returncode == 2 and "--output: directory" in proc.stderr, proc.stderr
    assert not target.parent.exists()
    target.parent.mkdir()
    proc = intercore("measure", "campaign", "report", "cli", "--db", str(db), "-o", str(target),
                     "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["report"] == str(target) and target.read_text().startswith("<!DOCTYPE html>")
    totals = {s["setup"]: s for s in out["stats"] if s["region"] == "total"}
    assert set(totals) == {"solo", "interf_write_64KiB", "interf_write_1MiB"}
    assert totals["solo"]["n"] == 12  # 2 rounds x 2 x ceil(5/2) isolated repetitions
    assert totals["interf_write_1MiB"]["n"] == 10 and totals["interf_write_1MiB"]["slowdown"]
    assert any("quick mode" in w for w in out["warnings"])


@needs_two_cpus
def test_compare_two_campaigns(store):
    _, db, _, _ = store
    proc = intercore("measure", "campaign", "compare", "cli", "cli-again", "--db", str(db),
                     "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["a"], out["b"], out["only_a"], out["only_b"]) == ("cli", "cli-again", [], [])
    rows = {r["setup"]: r for r in out["setups"]}
    assert set(rows) == {"solo", "interf_write_64KiB", "interf_write_1MiB"}
    assert all(r["region"] == "total" and r["same_hash"] for r in rows.values())
    assert rows["interf_write_1MiB"]["verdict"] in ("B slower", "B faster",
                                                    "no significant difference")
    table = intercore("measure", "campaign", "compare", "cli", "cli-again", "--db", str(db))
    assert "verdict" in table.stdout and "interf_write_64KiB" in table.stdout


@needs_two_cpus
def test_export_csv_and_parquet_carry_the_setup_of_every_sample(store):
    tmp, db, _, _ = store
    with sqlite3.connect(db) as conn:
        samples = conn.execute(
            "SELECT COUNT(*) FROM samples s JOIN campaign_runs r ON r.invocation_id = "
            "s.invocation_id JOIN campaigns c ON c.id = r.campaign_id WHERE c.name = 'cli'"
        ).fetchone()[0]
    proc = intercore("measure", "campaign", "export", "cli", "--db", str(db), "--csv", "-")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("campaign,setup,setup_hash,round,invocation_id,")
    assert len(lines) == samples + 1 and all(ln.startswith("cli,") for ln in lines[1:])
    pq = pytest.importorskip("pyarrow.parquet")
    proc = intercore("measure", "campaign", "export", "cli", "--db", str(db), "--parquet",
                     str(tmp / "cli.parquet"), "--json")
    assert json.loads(proc.stdout) == {"samples": samples, "path": str(tmp / "cli.parquet"),
                                       "format": "parquet"}
    table = pq.read_table(tmp / "cli.parquet")
    assert table.num_rows == samples
    assert set(table.column("setup").to_pylist()) == {"solo", "interf_write_64KiB",
                                                      "interf_write_1MiB"}
    assert set(table.column("round").to_pylist()) == {1, 2}


def test_a_malformed_campaign_exits_2_with_file_and_line_and_writes_nothing(tmp_path):
    path, db = tmp_path / "bad.yaml", tmp_path / "s.db"
    path.write_text(CAMPAIGN.replace("repetitions: 8", "repetitions: -1"))
    proc = intercore("measure", "campaign", "run", str(path), "--db", str(db))
    assert proc.returncode == 2
    # rich wraps the message at the terminal width: compare without whitespace
    assert f"{path}:2:repetitions:" in "".join(proc.stderr.split())
    assert not db.exists()


@pytest.mark.parametrize("args, needle", [
    (["resume", "nope"], "no results store"),
    (["status", "nope"], "no results store"),
    (["report", "nope"], "no results store"),
])
def test_commands_on_a_missing_store_exit_2(tmp_path, args, needle):
    proc = intercore("measure", "campaign", *args, "--db", str(tmp_path / "missing.db"))
    assert proc.returncode == 2 and needle in proc.stderr
    assert not (tmp_path / "missing.db").exists()


@needs_two_cpus
@pytest.mark.parametrize("args, needle", [
    (["resume", "nope"], "no campaign 'nope'"),
    (["report", "nope"], "no campaign 'nope'"),
    (["export", "cli"], "exactly one of"),
    (["export", "cli", "--csv", "-", "--json"], "both write to stdout"),
])
def test_bad_arguments_exit_2(store, args, needle):
    _, db, _, _ = store
    proc = intercore("measure", "campaign", *args, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr.replace("\n", " ")


def test_help_teaches_with_examples():
    for command in ("run", "resume", "status", "report", "compare", "export"):
        proc = intercore("measure", "campaign", command, "--help")
        assert proc.returncode == 0 and "Examples" in proc.stdout and "--json" in proc.stdout
    assert f"{runner.QUICK_REPETITIONS} repetitions and {runner.QUICK_ROUNDS} rounds" \
        in QUICK_HELP
