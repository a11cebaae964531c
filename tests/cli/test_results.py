import csv
import io
import json
from datetime import datetime, timedelta, timezone

import sys

import pytest
from typer.testing import CliRunner

from intercore.cli.main import app as main_app
from intercore.base.sample import Sample
from intercore.store import InvocationRecord, Store, WorkloadRecord

runner = CliRunner()
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def app():
    return main_app


def _run(app, *args):
    # wide enough that rich neither wraps messages nor squeezes table cells
    return runner.invoke(app, ["results", *args], env={"COLUMNS": "250"})


def _seed(path, n, sets, victim="matmul", command="measure"):
    """n pairs: iso wall 1000+10p ns; per aggressor set k, int = iso * (1.5 + k)."""
    with Store.open(path) as store:
        host = store.ensure_host("fp", "board", "6.18", "Test CPU", 2, {})
        workloads = [WorkloadRecord("victim", victim, victim, {"n": 64}, cpu=1),
                     WorkloadRecord("aggressor", "bw", "bw", {"op": "write"}, cpu=0)]
        samples = []
        for p in range(n):
            iso = 1000 + 10 * p
            samples.append(Sample(0, p, p, "iso", "", 0, "total", iso, iso // 2, 0, 1))
            for k, agg in enumerate(sets):
                wall = int(iso * (1.5 + k))
                samples.append(Sample(0, p, p, "int", agg, 0, "total", wall, wall // 2,
                                            3, 1 + p % 2))
        inv = InvocationRecord(host, command, ("measure", victim), T0, T0 + timedelta(seconds=2),
                               "0.1.0", params={"victim": victim})
        return store.record(inv, workloads, samples)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "intercore.db"
    first = _seed(path, 12, ["BwWrite(LLC)", "PLL(DRAM)"])
    second = _seed(path, 3, ["BwRead(L2)"], victim="qsort", command="demo")
    return path, first, second


def test_list_json(app, db):
    path, first, second = db
    result = _run(app, "list", "--db", str(path), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == [second, first]
    assert rows[1] == {"id": first, "started_at": T0.isoformat(), "command": "measure",
                       "victims": ["matmul"], "aggressor_sets": ["BwWrite(LLC)", "PLL(DRAM)"],
                       "n": 12, "status": "complete"}
    limited = json.loads(_run(app, "list", "--db", str(path), "--json", "--limit", "1").stdout)
    assert [r["id"] for r in limited] == [second]


def test_list_table(app, db):
    path, _, _ = db
    result = _run(app, "list", "--db", str(path))
    assert result.exit_code == 0, result.output
    for text in ("measure", "demo", "matmul", "qsort", "PLL(DRAM)", "complete"):
        assert text in result.stdout
    assert "not shown" not in result.stdout
    limited = _run(app, "list", "--db", str(path), "--limit", "1")
    assert "1 older not shown (of 2): --limit 2 shows them all" in limited.stdout


@pytest.mark.parametrize("command", [["list"], ["show", "1"], ["export", "--csv", "-"]])
def test_missing_store_is_exit_2(app, tmp_path, command):
    path = tmp_path / "nowhere.db"
    result = _run(app, *command, "--db", str(path))
    assert result.exit_code == 2
    assert f"no results store at {path}" in result.stderr
    assert "intercore measure" in result.stderr
    assert not path.exists()


def test_show_json_recomputes_from_samples(app, db):
    path, first, _ = db
    result = _run(app, "show", str(first), "--db", str(path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["invocation"]["id"] == first and doc["invocation"]["params"] == {"victim": "matmul"}
    assert doc["host"]["hostname"] == "board" and doc["host"]["ncpus"] == 2
    assert [w["role"] for w in doc["workloads"]] == ["victim", "aggressor"]
    llc, dram = doc["comparisons"]
    assert (llc["victim"], llc["aggressor_set"], llc["name"]) == (
        "matmul", "BwWrite(LLC)", "total")
    assert llc["n"] == 12
    assert llc["delta"] == pytest.approx(1.5, rel=1e-3)
    assert dram["delta"] == pytest.approx(2.5, rel=1e-3)
    assert llc["delta_ci"][0] <= llc["delta"] <= llc["delta_ci"][1]
    # Δ compares thread CPU time; wall time is reported beside it
    assert llc["metric"] == "thread CPU time"
    assert llc["iso"]["median"] == 527.5 and llc["iso"]["p90"] is not None
    assert llc["iso"]["p99"] is None
    assert llc["wall"]["iso"]["median"] == 1055
    assert llc["max_nivcsw"] == {"iso": 0, "int": 3}
    assert llc["cpus"] == {"iso": [1], "int": [1, 2]}


def test_show_table(app, db):
    path, first, second = db
    result = _run(app, "show", str(first), "--db", str(path))
    assert result.exit_code == 0, result.output
    for text in ("invocation", "Test CPU", "BwWrite(LLC)", "PLL(DRAM)", "1.500", "2.500",
                 "insufficient n"):
        assert text in result.stdout
    # Parameters as the command line spells them, not a cell of raw JSON.
    assert "params: victim=matmul" in result.stdout and "op=write" in result.stdout
    assert '{"' not in result.stdout
    small = _run(app, "show", str(second), "--db", str(path))
    assert "qsort" in small.stdout and small.exit_code == 0


def test_show_unknown_id_is_exit_2_naming_it(app, db):
    path, _, second = db
    result = _run(app, "show", str(second + 40), "--db", str(path))
    assert result.exit_code == 2
    assert f"no invocation with id {second + 40}" in result.stderr


def test_export_csv_to_stdout_selected_ids(app, db):
    path, _, second = db
    result = _run(app, "export", "--csv", "-", "--db", str(path), str(second))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 6
    assert {r["victim_name"] for r in rows} == {"qsort"}
    assert "wrote 6 samples to stdout" in result.stderr


def test_export_csv_to_file_all(app, db, tmp_path):
    path, _, _ = db
    out = tmp_path / "out.csv"
    result = _run(app, "export", "--csv", str(out), "--db", str(path))
    assert result.exit_code == 0, result.output
    assert len(list(csv.DictReader(out.open()))) == 12 * 3 + 6


@pytest.mark.parametrize("args", [[], ["--csv", "-", "--parquet", "x.parquet"]])
def test_export_needs_exactly_one_format(app, db, args):
    path, _, _ = db
    result = _run(app, "export", "--db", str(path), *args)
    assert result.exit_code == 2
    assert "exactly one of --csv" in result.stderr


def test_export_unknown_id_is_exit_2(app, db):
    path, _, second = db
    result = _run(app, "export", "--csv", "-", "--db", str(path), str(second + 9))
    assert result.exit_code == 2 and f"no invocation with id {second + 9}" in result.stderr


def test_export_parquet_without_pyarrow_fails_clearly(app, db, tmp_path, monkeypatch):
    # None in sys.modules makes `import pyarrow` fail exactly as on a host without it.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path, _, _ = db
    result = _run(app, "export", "--parquet", str(tmp_path / "x.parquet"), "--db", str(path))
    assert result.exit_code == 3
    assert "pip install pyarrow" in result.stderr and "'parquet' extra" in result.stderr


def test_export_json_reports_count_and_path(app, db, tmp_path):
    path, _, _ = db
    out = tmp_path / "x.csv"
    result = _run(app, "export", "--csv", str(out), "--db", str(path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == {"samples": len(out.read_text().splitlines()) - 1, "path": str(out),
                   "format": "csv"}
    clash = _run(app, "export", "--csv", "-", "--db", str(path), "--json")
    assert clash.exit_code == 2 and "--json" in clash.stderr
