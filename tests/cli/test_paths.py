"""Output paths are refused before any work starts, naming the option, and leave nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.cli import paths
from intercore.errors import InputError


def _refused(check, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        check(*args, **kwargs)
    return info.value


def test_output_file_accepts_new_and_existing_files_and_leaves_nothing(tmp_path):
    paths.output_file(tmp_path / "new.json", "-o")
    (tmp_path / "old.json").write_text("keep me")
    paths.output_file(tmp_path / "old.json", "-o")
    paths.output_file(None, "-o")
    paths.output_file(Path("-"), "--csv")
    assert [p.name for p in tmp_path.iterdir()] == ["old.json"]
    assert (tmp_path / "old.json").read_text() == "keep me"


def test_output_file_refusals_name_the_option(tmp_path):
    err = _refused(paths.output_file, tmp_path, "-o")
    assert err.field == "-o" and "is a directory" in err.message
    err = _refused(paths.output_file, tmp_path / "missing" / "x.json", "--log")
    assert err.field == "--log" and "does not exist" in err.message
    (tmp_path / "file").write_text("")
    err = _refused(paths.output_file, tmp_path / "file" / "x.json", "--csv", make_parents=True)
    assert err.field == "--csv" and "is not a directory" in err.message
    # Root ignores permission bits; a read-only mount it cannot ignore.
    err = _refused(paths.output_file, Path("/proc/intercore-test.json"), "--out")
    assert err.field == "--out" and "cannot create files in /proc" in err.message


def test_make_parents_accepts_a_missing_directory_it_could_create(tmp_path):
    paths.output_file(tmp_path / "a" / "b" / "x.json", "--out", make_parents=True)
    paths.output_dir(tmp_path / "a" / "b", "--out")
    assert list(tmp_path.iterdir()) == []


def test_output_dir_refuses_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    assert "is not a directory" in _refused(paths.output_dir, tmp_path / "f", "-o").message
    assert "not a directory" in _refused(paths.output_dir, tmp_path / "f" / "sub", "-o").message


def test_a_store_must_be_sqlite_when_it_exists(tmp_path):
    paths.store_file(tmp_path / "new.db")
    (tmp_path / "empty.db").write_bytes(b"")
    paths.store_file(tmp_path / "empty.db")
    (tmp_path / "notes.db").write_text("not a database\n")
    err = _refused(paths.store_file, tmp_path / "notes.db")
    assert err.field == "--db" and "not a results store" in err.message
    err = _refused(paths.open_store, tmp_path / "absent.db", first="intercore measure")
    assert "no results store" in err.message and "intercore measure" in err.message
    assert not (tmp_path / "absent.db").exists()
    assert "is a directory" in _refused(paths.open_store, tmp_path, first="x").message


def intercore(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run the CLI; also returns its pid, which names its /dev/shm blocks."""
    started = time.monotonic()
    with subprocess.Popen([sys.executable, "-m", "intercore", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=cwd) as proc:
        out, err = proc.communicate(timeout=120)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return result, time.monotonic() - started, proc.pid


TASKSET = """\
name: two
tasks:
  - {name: a, workload: matrix1, period: 100ms, deadline: 100ms, role: critical}
  - {name: b, workload: qsort, params: {count: 1K}, period: 100ms, role: best-effort}
"""


@pytest.mark.parametrize("args, option", [
    (["measure", "matmul", "--runs", "3", "--db", "adir"], "--db"),
    (["measure", "matmul", "--runs", "3", "--db", "notes.txt"], "--db"),
    (["matrix", "set.yaml", "--block", "100ms", "-o", "notes.txt/m"], "--out"),
    (["matrix", "set.yaml", "--block", "100ms", "-o", "x"], "--out"),  # x.json is a dir
    (["matrix", "set.yaml", "--block", "100ms", "--db", "adir"], "--db"),
    (["experiment", "protection", "--quick", "--out", "notes.txt"], "--out"),
    (["experiment", "protection", "--quick", "--db", "notes.txt"], "--db"),
    (["cgroups", "plan", "set.yaml", "-m", "m.json", "-o", "adir"], "--output"),
    (["monitor", "--plan", "plan.json", "--log", "adir"], "--log"),
    (["monitor", "--plan", "plan.json", "--policy", "event", "--notify", "gone/n"],
     "--notify"),
    (["results", "list", "--db", "notes.txt"], "--db"),
    (["results", "export", "--db", "adir", "--csv", "x.csv"], "--db"),
    (["campaign", "run", "small.yaml", "--db", "adir"], "--db"),
    (["campaign", "report", "small", "-o", "adir"], "--output"),
    (["campaign", "export", "small", "--csv", "gone/x.csv"], "--csv"),
    (["model", "analyze", "model.yaml", "--html", "adir"], "--html"),
    (["model", "validate", "model.yaml", "--db", "notes.txt"], "--db"),
])
def test_bad_output_paths_exit_2_before_any_work_and_leave_nothing(tmp_path, args, option):
    (tmp_path / "adir").mkdir()
    (tmp_path / "x.json").mkdir()
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "set.yaml").write_text(TASKSET)
    (tmp_path / "small.yaml").write_text(
        Path(__file__).parents[2].joinpath("examples/campaigns/small.yaml").read_text())
    (tmp_path / "model.yaml").write_text(
        Path(__file__).parents[2].joinpath("examples/platforms/rpi4.yaml").read_text())
    before = sorted(os.listdir(tmp_path))
    result, seconds, pid = intercore(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and f"{option}: " in result.stderr
    assert "Traceback" not in result.stderr
    assert seconds < 10  # refused up front: no measurement ran
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / "notes.txt").read_text() == "notes\n"
    assert not [p for p in os.listdir("/dev/shm") if p.startswith(f"intercore-{pid}-")]
