"""`intercore assess` on the real kernel: the example's control_task (built as a user builds
it) beside a DRAM writer on one CPU, through every step into a dossier, with sizes small
enough for a test (the system file's `sizes:`, docs/assess.md).

Structure and provenance only, no timing: the dossier's sections, that every hash it names is
the hash of the file it names, that every store invocation it cites holds the runs it cites,
that each figure without shared-regime support is flagged; then that a re-run measures
nothing (every step skipped, the store unchanged), and that Ctrl-C in the Protected phase
exits 130 with no group left and no partial artefact, and the next run resumes there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base.artefact import file_sha256
from intercore.host.topology import read_topology
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.store import Store

from _kit import REGIONS
from _procs import programs_running, wait_no_native_processes


def worst_presets() -> list[str]:
    """The presets the quick search tries on this host (assess/search.py)."""
    from intercore.assess import search
    return search.space(TOPO, TOPO.online_cpus[-1], quick=True)

pytestmark = pytest.mark.slow


TOPO = read_topology()
JOBS = 10
STEPS = ("platform", "channels", "validation", "search", "matrix", "regions", "plan",
         "protection")
TASKSET = """name: demo
tasks:
  - name: ctl
    program: [./control_task, --steps-per-job, "50"]
    period: 10ms
    deadline: 5ms
    offset: 1ms
    cpu: {cpu}
    priority: 10
    role: critical
  - name: writer
    workload: bw
    params: {{op: write, size: 2xLLC}}
    period: 20ms
    work: time:4ms
    cpu: {cpu}
    priority: 10
    role: best-effort
"""


def _system(directory: Path, jobs: int = JOBS, theta: float = 1.5) -> Path:
    (directory / "demo.taskset.yaml").write_text(TASKSET.format(cpu=TOPO.online_cpus[-1]))
    path = directory / "demo.yaml"
    path.write_text(f"name: demo\nplatform: detect\ntaskset: demo.taskset.yaml\ntheta: {theta}\n"
                    "sizes: {matrix_rounds: 1, matrix_block: 200ms, jobs: %d, "
                    "validation_runs: 3}\n" % jobs)
    return path


def _assess(system: Path, out: Path, root: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "intercore", "assess", str(system),
                             "-o", str(out), "--root", root, "--quick", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=system.parent)


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = proc.communicate(timeout=600)
    return proc.returncode, stdout, stderr


def _store_state(db: Path) -> list[int]:
    with Store.open(db) as store:
        return sorted(inv.id for inv in store.invocations())


@pytest.fixture(scope="module")
def assessed(example, tmp_path_factory, module_root):
    """One assessment, run once for the module's structure tests."""
    root = module_root
    system, out = _system(example), tmp_path_factory.mktemp("dossier") / "d"
    rc, stdout, stderr = _finish(_assess(system, out, root))
    assert rc == 0, stdout + stderr
    return system, out, root, stdout


def test_the_dossier_names_every_input_by_its_hash_and_every_figure_its_rows(assessed):
    system, out, _, stdout = assessed
    for i, step in enumerate(STEPS, start=1):
        assert f"[{i}/{len(STEPS)}] {step}: " in stdout
    doc = json.loads((out / "dossier.json").read_text())
    assert doc["format"] == "intercore.dossier/1"
    assert set(doc["sections"]) == {"configuration", "channels", "capacity", "timing", "plan"}

    # Every input file, and every step artefact, is named by the sha256 of its bytes.
    inputs = doc["inputs"]
    assert str(system) in inputs and str(system.parent / "demo.taskset.yaml") in inputs
    assert str(system.parent / "control_task") in inputs
    assert str(out / "platform.yaml") in inputs  # the model `detect` wrote, kept
    for path, digest in inputs.items():
        assert file_sha256(path) == digest, path
    for name, step in doc["steps"].items():
        assert file_sha256(out / step["artefact"]) == step["sha256"], name

    settings = doc["sections"]["configuration"]["settings"]
    assert {"kernel_release", "kernel_cmdline", "cpufreq_governors", "smt", "cgroups",
            "resctrl"} <= set(settings)
    assert settings["kernel_cmdline"]["value"] == Path("/proc/cmdline").read_text().strip()

    # Every figure cites a store invocation that holds it, and is flagged unless a
    # shared-regime pair supports it.
    db = out / "store.db"
    with Store.open(db) as store:
        for fig in doc["figures"]:
            prov = fig["provenance"]
            assert prov["host_fingerprint"] == doc["host_fingerprint"]
            assert prov["tool_version"] == doc["tool_version"]
            assert all(inputs.get(p) == h for p, h in prov["files"].items()), fig["id"]
            inv = prov["store"]["invocation_id"]
            assert store.get_invocation(inv) is not None, fig["id"]
            assert (fig["flag"] is None) == (fig["regime"] == "shared"), fig["id"]
        jobs = store.jobs.of_invocation(doc["store"]["invocations"]["protection"])
    assert doc["flagged"] == [f["id"] for f in doc["figures"] if f["flag"]]
    assert len(jobs[("ctl/protected", "ctl/ctl")]) == JOBS
    assert len(jobs[("ctl/worst-found", "ctl/ctl")]) == JOBS
    assert len(jobs[("ctl/worst-found", "ctl/worst-found-0")]) == JOBS

    # The calibration puts every verdict the validation stored beside the model's claim.
    channels = doc["sections"]["channels"]
    validation = json.loads((out / "step-validation.json").read_text())["result"]
    assert len(channels["calibration"]) == len(validation.get("verdicts", []))
    assert channels["contradictions"] == [f["id"] for f in channels["calibration"]
                                          if f["value"]["verdict"] == "contradicted"]
    if "refused" in validation:
        assert all(r["verdict"]["why"] == validation["refused"] for r in channels["rows"])

    timing = doc["sections"]["timing"]["tasks"]
    assert [t["task"] for t in timing] == ["ctl"]
    scenarios = timing[0]["scenarios"]
    # The search found an aggressor (its winner or its strongest so far): ctl ran beside it too.
    assert set(scenarios) == {"solo", "interference", "protected", "worst-found"}
    for fig in scenarios.values():
        assert fig["value"]["n"] == JOBS and fig["regime"] == "not probed" and fig["flag"]
    protection = json.loads((out / "step-protection.json").read_text())["result"]
    aggressor = timing[0]["worst_found"]["figure"]["value"]["aggressor"]
    assert any(n.startswith(f"worst-found: beside {aggressor} (")
               for n in protection["tasks"]["ctl"]["notes"])
    # The plan is made from the region-level matrix: the measured whole-job values, each
    # cell of the critical task tagged with its provenance and the channels the detected
    # model finds between the two tasks' CPU (one CPU: its time, at least).
    regions = InterferenceMatrix.model_validate(
        json.loads((out / "step-regions.json").read_text())["result"])
    measured = json.loads((out / "step-matrix.json").read_text())["result"]["matrix"]
    assert [list(row) for row in regions.directed] == measured["directed"]
    [cell] = regions.cells("ctl", "writer")
    assert (cell.provenance, cell.region) == ("measured", None)
    assert f"cpu{TOPO.online_cpus[-1]} time" in cell.channels
    # Whatever this host measured, every decision gives its reason. Both tasks share one CPU:
    # no channel of the model's table lies between them (a channel with another tenant of the
    # VM, `external`, is never covered by a freeze), and the one the plan lists, that CPU's
    # time, is covered by the freeze exactly when the plan freezes a group.
    plan = doc["sections"]["plan"]
    assert all(d["why"] for d in plan["decisions"])
    freezes = any(g["freeze_while_active"] for g in plan["groups"])
    for row in doc["sections"]["channels"]["rows"]:
        others = "external" in row["initiators"]
        assert row["mitigation"]["by"] == ("unmitigated" if others
                                           else "not between the system's tasks"), row
        assert row["mitigation"]["why"]
    between = {c["channel"]: c for c in doc["sections"]["channels"]["between_tasks"]}
    assert between[f"cpu{TOPO.online_cpus[-1]} time"]["mitigation"] == \
        ("freeze (whole job)" if freezes else "unmitigated")

    # The worst aggressor searched for ctl among the presets on the other CPU(s): the winner,
    # or (refused, as on a host whose CPUs did not share their cache) the strongest so far,
    # provisional; either way its Δ and each region's are figures citing the store.
    worst = timing[0]["worst_found"]
    assert worst["candidates"] == len(worst_presets()) and worst["pairs"] == 2
    assert worst["aggressor_cpus"] == [c for c in TOPO.online_cpus if c != TOPO.online_cpus[-1]]
    assert (worst["saved_as"] is None) == (worst["refused"] is not None)
    found = worst["figure"]
    assert found["id"] == "search/ctl" and found["value"]["aggressor"] in worst_presets()
    assert found["value"]["provisional"] == (worst["refused"] is not None)
    assert found["value"]["n"] >= 2 and len(found["value"]["delta_ci"]) == 2
    assert [f["id"] for f in worst["regions"]] == [f"search/ctl/{r}" for r in REGIONS]
    assert {f["id"] for f in [found, *worst["regions"]]} <= {f["id"] for f in doc["figures"]}

    page = (out / "dossier.html").read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert doc["headline"] in page


def test_a_rerun_skips_every_step_and_measures_nothing(assessed):
    system, out, root, _ = assessed
    before = {p.name: p.read_bytes() for p in out.glob("step-*.json")}
    invocations = _store_state(out / "store.db")
    rc, stdout, stderr = _finish(_assess(system, out, root))
    assert rc == 0, stdout + stderr
    for i, step in enumerate(STEPS, start=1):
        assert f"[{i}/{len(STEPS)}] {step}: skipped, inputs unchanged" in stdout
    assert {p.name: p.read_bytes() for p in out.glob("step-*.json")} == before
    assert _store_state(out / "store.db") == invocations

    # A changed input (θ) re-runs what depends on it, and only that.
    system.write_text(system.read_text().replace("theta: 1.5", "theta: 1.6"))
    rc, stdout, stderr = _finish(_assess(system, out, root))
    assert rc == 0, stdout + stderr
    assert "[6/8] regions: skipped" in stdout and "[7/8] plan: Algorithm 1" in stdout
    assert (out / "step-matrix.json").read_bytes() == before["step-matrix.json"]


def _wait_for(proc: subprocess.Popen, text: str, seen: list[str]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return
    proc.kill()
    pytest.fail(f"never saw {text!r}: {''.join(seen)}{proc.stderr.read()}")


def test_ctrl_c_while_protected_runs_leaves_nothing_frozen_and_resumes(example, tmp_path,
                                                                      real_cgroups, test_root):
    # θ near 1, so that the plan separates the writer unless this host's alone runs were as
    # slow as its runs beside it (a loaded host can do that: the Protected phase then runs
    # without groups, and the stop must leave as little).
    system, out = _system(example, jobs=100, theta=1.01), tmp_path / "d"
    proc, seen = _assess(system, out, test_root), []
    _wait_for(proc, "ctl: protected (", seen)
    time.sleep(0.3)  # into the run: groups made, the monitor freezing
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, stdout, stderr = _finish(proc)
    stopped = time.monotonic() - sent
    assert rc == 130, "".join(seen) + stdout + stderr
    assert stopped < 5, f"took {stopped:.1f} s to stop"
    assert not real_cgroups.roots_named(test_root)
    assert not (out / "step-protection.json").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no scratch, no temp
    assert not (out / "protection").exists()
    invocations = _store_state(out / "store.db")

    rc, stdout, stderr = _finish(_assess(system, out, test_root))
    assert rc == 0, stdout + stderr
    for i, step in enumerate(STEPS[:-1], start=1):
        assert f"[{i}/{len(STEPS)}] {step}: skipped" in stdout
    assert f"[{len(STEPS)}/{len(STEPS)}] protection: Solo" in stdout
    assert len(_store_state(out / "store.db")) == len(invocations) + 1
    assert (out / "dossier.json").is_file() and (out / "protection").is_dir()
    assert not real_cgroups.roots_named(test_root)


def test_sigterm_in_the_matrix_exits_143_with_no_matrix_artefact(example, tmp_path, test_root):
    system, out = _system(example), tmp_path / "d"
    system.write_text(system.read_text().replace("matrix_rounds: 1", "matrix_rounds: 20"))
    proc, seen = _assess(system, out, test_root), []
    _wait_for(proc, "[5/8] matrix", seen)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rc, stdout, stderr = _finish(proc)
    assert rc == 143, "".join(seen) + stdout + stderr
    assert (out / "step-validation.json").is_file()
    assert not (out / "step-matrix.json").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    assert not os.path.exists(out / "dossier.json")


def _across_cpus(system: Path) -> None:
    """The writer moved to the other CPU: the regions step can then measure ctl's regions."""
    ts = system.parent / "demo.taskset.yaml"
    text = ts.read_text()
    writer = text.index("- name: writer")
    ts.write_text(text[:writer] + text[writer:].replace(f"cpu: {TOPO.online_cpus[-1]}",
                                                        f"cpu: {TOPO.online_cpus[0]}"))


# Into each step's measurement: the quick search here takes tens of seconds (its round waits
# for shared blocks), the regions step under two (3 pairs of 3-job runs at 10 ms).
@pytest.mark.parametrize("step, sig, rc, into", [("[4/8] search", signal.SIGTERM, 143, 1.0),
                                                 ("[6/8] regions", signal.SIGINT, 130, 0.5)])
def test_a_stop_in_a_step_that_runs_the_users_program_leaves_nothing_and_resumes(
        example, tmp_path, test_root, step, sig, rc, into):
    """The search and the regions step run the user's program through the paired harness:
    a stop there exits at once, with no artefact of the step, no scratch, no process of the
    harness or the program left; the next run skips the steps before and runs it whole."""
    system, out = _system(example), tmp_path / "d"
    _across_cpus(system)
    proc, seen = _assess(system, out, test_root), []
    _wait_for(proc, step, seen)
    time.sleep(into)
    sent = time.monotonic()
    proc.send_signal(sig)
    code, stdout, stderr = _finish(proc)
    stopped = time.monotonic() - sent
    assert code == rc, "".join(seen) + stdout + stderr
    assert stopped < 5, f"took {stopped:.1f} s to stop"
    name = step.split()[1]
    assert not (out / f"step-{name}.json").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    assert not (out / "dossier.json").exists()
    assert wait_no_native_processes() == []
    assert programs_running(example / "control_task") == []

    code, stdout, stderr = _finish(_assess(system, out, test_root))
    assert code == 0, stdout + stderr
    at = STEPS.index(name)
    for i, before in enumerate(STEPS[:at], start=1):
        assert f"[{i}/{len(STEPS)}] {before}: skipped" in stdout
    assert f"[{at + 1}/{len(STEPS)}] {name}: skipped" not in stdout
    assert (out / f"step-{name}.json").is_file() and (out / "dossier.json").is_file()


HEATMAP = {"format": "intercore.heatmap/1", "regions": [
    {"region": "fir", "delta": 1.0, "interval": [1.0, 2.7], "weight": 0.9},
    {"region": "lut", "delta": 1.0, "interval": [1.0, 3.0], "weight": 0.06},
    {"region": "pid", "delta": 1.0, "interval": [1.0, 2.7], "weight": 0.04}]}


def test_across_cpus_the_programs_regions_are_measured_cited_and_verified(example, tmp_path,
                                                                          test_root):
    """The writer moved to the other CPU, a heatmap given: the regions step measures each of
    control_task's regions beside the writer, the measurements replace the predictions in
    the region-level matrix, each is a figure citing its store rows, and `dossier verify`
    measures them again. Which Δ they show is this host's business."""
    system = _system(example)
    _across_cpus(system)
    (system.parent / "ctl.heatmap.json").write_text(json.dumps(HEATMAP))
    system.write_text(system.read_text() + "heatmaps: {ctl: ctl.heatmap.json}\n")
    out = tmp_path / "d"
    rc, stdout, stderr = _finish(_assess(system, out, test_root))
    assert rc == 0, stdout + stderr
    assert "[6/8] regions: region-level matrix (channels of host; the heatmaps of ctl; the " \
           "regions of ctl measured beside writer)" in stdout
    doc = json.loads((out / "dossier.json").read_text())
    heat = str(system.parent / "ctl.heatmap.json")
    assert doc["inputs"][heat] == file_sha256(heat)
    regions = InterferenceMatrix.model_validate(
        json.loads((out / "step-regions.json").read_text())["result"])
    cells = {c.region: c for c in regions.cells("ctl", "writer")}
    assert set(cells) == {None, "fir", "lut", "pid"}
    # A cell is its worst regime's stratum (region_matrix.measured_cell): on a loaded host a
    # probe may call one block's regime unknown, so the three pairs may lie in two strata
    # (the full CI run beside a hog had one such cell), and the figure cites the cell.
    assert all(cells[r].provenance == "measured" and 1 <= cells[r].n <= 3 for r in REGIONS)
    ids = {f["id"]: f for f in doc["figures"]}
    with Store.open(out / "store.db") as store:
        for r in REGIONS:
            fig = ids[f"regions/ctl/writer/{r}"]
            assert fig["value"]["n"] == cells[r].n
            ci = cells[r].ci   # a stratum of one pair has no interval
            assert fig["value"]["delta_ci"] == (None if ci is None else list(ci))
            assert ci is None or len(ci) == 2
            assert store.get_invocation(fig["provenance"]["store"]["invocation_id"])
    verified = subprocess.run([sys.executable, "-m", "intercore", "dossier", "verify", str(out),
                               "--figure", "regions/*", "--json"], capture_output=True,
                              text=True, timeout=300)
    assert verified.returncode in (0, 1), verified.stderr
    rows = json.loads(verified.stdout)["figures"]
    assert sorted(r["id"] for r in rows) == [f"regions/ctl/writer/{r}" for r in REGIONS]
    for row in rows:   # each judged against its interval; a one-pair stratum states none
        stated = cells[row["id"].rsplit("/", 1)[1]].ci is not None
        assert row["verdict"] in (("reproduced", "not reproduced") if stated
                                  else ("no interval stated",)), row
