"""Bad option values, for every command that measures or acts: refused before anything runs.

Each case is a command line with one option out of its range or grammar. The contract is the
corpus's: exit 2, one `error:` line naming the option, no traceback, nothing left behind,
and fast (nothing was measured).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intercore.cli.main import app

EXAMPLES = Path(__file__).parents[2] / "examples"

MEASURE = ("measure", "run", "matmul", "--no-store", "--no-canary")
MATRIX = ("measure", "matrix", "set.yaml", "--db", "s.db")
EXPERIMENT = ("mitigate", "protection", "--quick", "--db", "s.db")
MONITOR = ("mitigate", "monitor", "--plan", "plan.json")
VALIDATE = ("model", "validate", "model.yaml", "--db", "s.db")

CASES = [
    # measure
    (MEASURE + ("--runs", "0"), "--runs"),
    (MEASURE + ("--runs", "-3"), "--runs"),
    (MEASURE + ("--runs", "100000000000"), "--runs"),
    (MEASURE + ("--runs", "ten"), "--runs"),
    (MEASURE + ("--victim-cpu", "99"), "--victim-cpu"),
    (MEASURE + ("--victim-cpu", "-1"), "--victim-cpu"),
    (MEASURE + ("--aggressor-cpus", "0-"), "--aggressor-cpus"),
    (MEASURE + ("--aggressor-cpus", "99"), "--aggressor"),
    (MEASURE + ("--aggressor-cpus", "1-100000000000"), "--aggressor-cpus"),
    (MEASURE + ("--victim-priority", "100"), "--victim-priority"),
    (MEASURE + ("--seed", "-1"), "--seed"),
    (MEASURE + ("--seed", "100000000000000000000000"), "--seed"),
    (MEASURE + ("-a", "bw:size=1T"), "--aggressor"),
    (MEASURE + ("-a", "bw:size=0"), "--aggressor"),
    (MEASURE + ("-a", "bw:size=-4K"), "--aggressor"),
    (MEASURE + ("-a", "bw:op=erase"), "--aggressor"),
    (MEASURE + ("-a", "bw:rate=nan"), "--aggressor"),
    (MEASURE + ("-a", "bw:rate=inf"), "--aggressor"),
    (MEASURE + ("-a", "pll:mlp=0"), "--aggressor"),
    (MEASURE + ("-a", "pll:mlp=1000"), "--aggressor"),
    (MEASURE + ("-a", "BwRead(L9)"), "--aggressor"),
    (MEASURE + ("-a", ""), "--aggressor"),
    (MEASURE + ("-a", "+"), "--aggressor"),
    (MEASURE + ("-a", "bw@99"), "--aggressor"),
    (MEASURE + ("-a", "bw@-1"), "--aggressor"),
    (MEASURE + ("-a", "cmd:"), "--aggressor"),
    (MEASURE + ("-p", "size=1T"), "--param"),
    (MEASURE + ("-p", "size=lots"), "--param"),
    (MEASURE + ("-p", "nokey"), "--param"),
    (("measure", "run", "ptrchase:size=1T", "--no-store"), "--param"),
    (("measure", "run", "nosuchvictim", "--no-store"), "VICTIM"),
    (("measure", "run", "--no-store", "--", "/nonexistent/prog"), "PROGRAM"),
    (("measure", "run", "--no-store", "--", "/"), "PROGRAM"),
    (("measure", "run", "--no-store", "--", "/dev/null"), "PROGRAM"),
    (("measure", "run", "--no-store", "--", "ptrchase", "--size", "4M"), "VICTIM"),
    # matrix
    (MATRIX + ("--rounds", "0"), "--rounds"),
    (MATRIX + ("--rounds", "100000000"), "--rounds"),
    (MATRIX + ("--block", "0s"), "--block"),
    (MATRIX + ("--block", "2"), "--block"),
    (MATRIX + ("--block", "99999999999999999999h"), "--block"),
    (MATRIX + ("--statistic", "mean"), "--statistic"),
    (MATRIX + ("--theta", "nan"), "--theta"),
    (MATRIX + ("--theta", "0.5"), "--theta"),
    (MATRIX + ("--seed", "-1"), "--seed"),
    # experiment protection
    (EXPERIMENT + ("--jobs", "1"), "--jobs"),
    (EXPERIMENT + ("--jobs", "100000000"), "--jobs"),
    (EXPERIMENT + ("--policy", "sometimes"), "--policy"),
    (EXPERIMENT + ("--interval", "0ms"), "--interval"),
    (EXPERIMENT + ("--interval", "1h"), "--interval"),
    (EXPERIMENT + ("--max-freeze", "150%"), "--max-freeze"),
    (EXPERIMENT + ("--max-freeze", "lots"), "--max-freeze"),
    (EXPERIMENT + ("--max-freeze", "0ms"), "--max-freeze"),
    (EXPERIMENT + ("--theta", "1"), "--theta"),
    (EXPERIMENT + ("--placement", "sideways"), "--placement"),
    (EXPERIMENT + ("--root", "../escape"), "--root"),
    (EXPERIMENT + ("--root", ""), "--root"),
    # monitor
    (MONITOR + ("--policy", "sometimes"), "--policy"),
    (MONITOR + ("--interval", "0s"), "--interval"),
    (MONITOR + ("--interval", "1h"), "--interval"),
    (MONITOR + ("--threshold", "0"), "--threshold"),
    (MONITOR + ("--threshold", "1000"), "--threshold"),
    (MONITOR + ("--cpu", "99"), "--cpu"),
    (MONITOR + ("--rt-priority", "200"), "--rt-priority"),
    (MONITOR + ("--max-freeze", "0%"), "--max-freeze"),
    (MONITOR + ("--duration", "-1s"), "--duration"),
    (MONITOR + ("--window-region", "fir"), "--window-region"),
    (MONITOR + ("--policy", "event", "--window-region", "fir,"), "--window-region"),
    # cgroups
    (("mitigate", "plan", "set.yaml", "-m", "matrix.json", "--theta", "0.9"), "--theta"),
    (("mitigate", "plan", "set.yaml", "-m", "matrix.json", "--theta", "inf"), "--theta"),
    (("mitigate", "apply", "plan.json", "--root", "/"), "--root"),
    (("mitigate", "apply", "plan.json", "--root", "a/../../b"), "--root"),
    # model
    (("model", "analyze", "model.yaml", "--k", "1"), "--k"),
    (("model", "analyze", "model.yaml", "--k", "1000"), "--k"),
    (("model", "analyze", "model.yaml", "--enable", "no_such_rule"), "--enable"),
    (VALIDATE + ("--runs", "0"), "--runs"),
    (VALIDATE + ("--runs", "100000000"), "--runs"),
    (VALIDATE + ("--threshold", "0.5"), "--threshold"),
    (VALIDATE + ("--seed", "-1"), "--seed"),
    # results and campaigns
    (("results", "show", "-5", "--db", "s.db"), "ID"),
    (("results", "list", "--limit", "0"), "--limit"),
    (("measure", "campaign", "export", "x", "--csv", "a.csv", "--parquet", "b.parquet"), "--csv"),
    (("doctor", "--canary-pairs", "1"), "--canary-pairs"),
]


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    shutil.copy(EXAMPLES / "tasksets/paper-000.yaml", tmp_path / "set.yaml")
    shutil.copy(EXAMPLES / "platforms/rpi4.yaml", tmp_path / "model.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("argv, option", CASES, ids=[" ".join(c[0][:1] + c[0][-2:])
                                                     for c in CASES])
def test_a_bad_option_is_refused_up_front(workdir, argv, option):
    before = sorted(os.listdir(workdir))
    shm = {p for p in os.listdir("/dev/shm") if p.startswith(f"intercore-{os.getpid()}-")}
    started = time.monotonic()
    result = CliRunner().invoke(app, list(argv))
    seconds = time.monotonic() - started
    where = f"intercore {' '.join(argv)}"
    assert isinstance(result.exception, SystemExit), f"{where}: {result.exception!r}"
    assert result.exit_code == 2, f"{where}: exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output
    assert option in result.stderr, f"{where}: {result.stderr!r}"
    assert seconds < 20, f"{where}: took {seconds:.1f} s, so it measured something"
    assert sorted(os.listdir(workdir)) == before, where
    assert {p for p in os.listdir("/dev/shm")
            if p.startswith(f"intercore-{os.getpid()}-")} <= shm, where
