"""`learn predict` and `learn heatmap` on a user's own program (examples/user-program, built
against the installed kit as its user builds it): its arguments after --, as for `intercore
measure -- PROG`; its regions named as it declares them; warm-up counted in runs of the
program, the repetition `measure` times; the regime the prediction is for; measured Δ of the
same binary beside the prediction. Tiny inputs: tracing runs under Valgrind."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.host.topology import largest_private, read_topology
from intercore.learn.extract import extract
from intercore.learn.hierarchy import parse

import _jaxwork
from _learnkit import in_child, intercore, needs_tracer
from _procs import native_processes, wait_no_native_processes
from _kit import REGIONS, build_example, need

pytestmark = needs_tracer
HIER = parse("48K:12,1M:16,32M:16")
ARGS = ("--steps", "60", "--map", "32")


@pytest.fixture(scope="module")
def control(tmp_path_factory) -> Path:
    need("gcc")
    return build_example("gcc", tmp_path_factory.mktemp("example"), cflags="-O2 -g") / "control"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("model") / "model"
    in_child(_jaxwork.tiny_model, str(d))
    return d


@pytest.mark.slow
def test_regions_carry_the_names_the_program_declares(control):
    regions, t = extract([str(control), *ARGS], HIER, include_total=False)
    # ic_user.h ids start at 0: region 0 is the program's first stage, not a driver's total
    assert [(r.region, r.name) for r in regions] == list(enumerate(REGIONS))
    assert all(r.entries == 60 for r in regions)
    assert t.declared == dict(enumerate(REGIONS))


@pytest.mark.slow
def test_warm_up_is_counted_in_runs_and_warms_the_caches(control):
    seen = []
    cold, _ = extract([str(control), *ARGS], HIER, runs=1, include_total=False)
    warm, t = extract([str(control), *ARGS], HIER, runs=3, include_total=False,
                      on_run=lambda *a: seen.append(a))
    # One run counted: the same work, every region entered once per step of that run
    assert [(r.name, r.entries, r.insns) for r in warm] == \
        [(r.name, r.entries, r.insns) for r in cold]
    # The map's first touches are served by memory in a cold run, by the caches once warm
    lut_cold, lut_warm = cold[1], warm[1]
    assert lut_cold.served[-1] > 0 and lut_warm.served[-1] < lut_cold.served[-1]
    # Progress: every run announced, with an estimate once a run has been timed
    assert [(run, runs) for run, runs, _ in seen] == [(0, 3), (1, 3), (2, 3)]
    assert seen[0][2] is None and all(left > 0 for _, _, left in seen[1:])


@pytest.mark.slow
def test_predict_takes_the_programs_arguments_after_dashdash_and_says_the_regime(control,
                                                                                 model):
    done = intercore("predict", "--model", str(model), "--json", str(control), "--", *ARGS)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [r["name"] for r in doc["regions"]] == list(REGIONS)
    assert doc["program"] == [str(control), *ARGS] and doc["warmup_runs"] == 1
    assert {k: doc["model"][k] for k in _jaxwork.LABELLED_FOR} == _jaxwork.LABELLED_FOR
    # An option of ours after PROGRAM is ours, as for `intercore measure run`: JSON, not a table
    after = intercore("predict", "--model", str(model), str(control), "--json", "--warmup",
                      "0", "--", *ARGS)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["warmup_runs"] == 0
    table = intercore("predict", "--model", str(model), str(control), "--", *ARGS)
    assert table.returncode == 0, table.stderr
    assert ("predicted by the transformer model for the shared regime of x86_64 test host"
            in " ".join(table.stdout.split()))


@pytest.mark.slow
def test_the_programs_own_options_need_dashdash(control, model, tmp_path):
    done = intercore("predict", "--model", str(model), str(control), "--steps", "60")
    assert done.returncode == 2 and "No such option: --steps" in done.stderr
    missing = intercore("predict", "--model", str(model), str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith("error: PROGRAM:") and "no such file" in \
        missing.stderr


@pytest.mark.slow
def test_a_periodic_task_is_refused_without_its_runners_jobs(control, model, tmp_path):
    # control_task's runner would trace its default 100 jobs of 100 ms under Valgrind.
    task = control.parent / "control_task"
    out = tmp_path / "heat"
    done = intercore("heatmap", "--model", str(model), "-o", str(out), str(task), "--",
                     "--steps-per-job", "20")
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.startswith(f"error: PROGRAM: {task} is a periodic task") and \
        "-- --jobs 3 --period 10ms -- ARGS" in done.stderr
    ok = intercore("predict", "--model", str(model), "--json", str(task), "--", "--jobs", "2",
                   "--period", "1ms", "--", "--steps-per-job", "20")
    assert ok.returncode == 0, ok.stderr
    assert [r["name"] for r in json.loads(ok.stdout)["regions"]] == list(REGIONS)


def _measure(control: Path, db: Path, *args: str) -> int:
    topo = read_topology()
    size = 4 * largest_private(topo, topo.online_cpus[0]).size
    done = subprocess.run([sys.executable, "-m", "intercore", "measure", "run", "--db", str(db),
                           "-a",
                           f"bw:op=write,size={size}", "--runs", "3", "--no-canary", "--json",
                           "--", str(control), *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["invocation_id"]


@pytest.mark.slow
def test_heatmap_shows_the_users_code_and_measured_beside_predicted(control, model, tmp_path):
    source = str(control.parent / "controller.c")  # where the marked stages are
    control = Path(shutil.copy2(control, tmp_path / "control"))  # this test rebuilds it
    db = tmp_path / "m.db"
    other = _measure(control, db, "--steps", "61", "--map", "32")  # other arguments
    same = _measure(control, db, *ARGS)
    assert same != other
    done = intercore("heatmap", "--model", str(model), "--db", str(db), "--out",
                     str(tmp_path / "h"), "--json", str(control), "--", *ARGS)
    assert done.returncode == 0, done.stderr
    heat = json.loads((tmp_path / "h" / "heatmap.json").read_text())
    by_name = {r["region"]: r for r in heat["regions"]}
    assert set(by_name) == set(REGIONS)
    for name in REGIONS:
        got = by_name[name]["measured"]
        assert got["invocation"] == same and got["n"] == 3 and got["delta"] > 0
    assert [f["file"] for f in heat["files"]] == [source]
    assert all(ln["file"] == source for r in heat["regions"] for ln in r["lines"])
    page = (tmp_path / "h" / "heatmap.html").read_text()
    assert "ic_arch.h" not in page and "ic_region.h" not in page
    assert 'id="hottest"' in page
    # Rebuilt, the binary is another: its old measurements are not shown beside it
    control.write_bytes(control.read_bytes() + b"\0")
    done = intercore("heatmap", "--model", str(model), "--db", str(db), "--out",
                     str(tmp_path / "h2"), "--json", str(control), "--", *ARGS)
    assert done.returncode == 0, done.stderr
    assert all(r["measured"] is None for r in json.loads(done.stdout)["heatmap"]["regions"])


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_tracing_ends_every_run_and_writes_nothing(control, model, tmp_path, sig,
                                                                code):
    out = tmp_path / "h"
    proc = subprocess.Popen([sys.executable, "-m", "intercore", "learn", "heatmap", "--model",
                             str(model), "--out", str(out), "--db", str(tmp_path / "none.db"),
                             str(control), "--", "--steps", "50000000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(name == "ic-trace-stats" for _, name in native_processes()):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "never started tracing"
            time.sleep(0.05)
        time.sleep(1.0)  # inside the warm-up run
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == code, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_no_native_processes() == []
    assert not out.exists(), "nothing half-written"


@pytest.mark.slow
def test_without_a_model_the_held_out_winner_is_trained_and_named(control, tmp_path):
    from intercore.learn.evaluate import DEFAULT_LEARNER

    done = subprocess.run([sys.executable, "-m", "intercore", "learn", "predict", "--json",
                           str(control), "--", *ARGS], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"]["learner"] == DEFAULT_LEARNER
    doc = json.loads((tmp_path / "intercore-learn" / "model" / "model.json").read_text())
    assert doc["learner"] == DEFAULT_LEARNER and doc["calibration"]["basis"] == "families"
