"""`intercore dossier verify` on the real kernel: the example's control_task assessed with sizes
small enough for a test (as tests/mitigate/test_assess.py does), then measured again here.

Which figures were re-measured and by which step, that the re-measurement stores its rows
and (with --out) becomes a dossier of its own that `dossier diff` reads, that no setting
drifted between two runs minutes apart on one host, and that Ctrl-C in the re-measurement
exits 130 leaving no group, no scratch directory and no --out. Whether a figure reproduced is
this host's timing and is not asserted (bench/ is where that is judged)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base import artefact
from intercore.base.artefact import file_sha256
from intercore.assess import compare
from intercore.store import Store

from test_assess import JOBS, _assess, _finish, _system, _wait_for


@pytest.fixture(scope="module")
def assessed(example, tmp_path_factory, module_root):
    system, out = _system(example), tmp_path_factory.mktemp("dossier") / "d"
    rc, stdout, stderr = _finish(_assess(system, out, module_root))
    assert rc == 0, stdout + stderr
    return system, out, module_root


def _verify(out: Path, root: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "intercore", "dossier", "verify", str(out),
                             "--root", root, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_verify_measures_the_chosen_figures_again_by_their_own_step(assessed, tmp_path,
                                                                   real_cgroups):
    _, out, root = assessed
    before = {p.name: file_sha256(p) for p in out.iterdir() if p.is_file()}
    again = tmp_path / "again"
    rc, stdout, stderr = _finish(_verify(out, root, "--figure", "protection/*", "--out",
                                         str(again), "--json"))
    result = json.loads(stdout)
    assert rc == (0 if result["all_reproduced"] else 1), stderr
    assert "[1/1] protection: Solo" in stderr
    assert result["steps"] == ["protection"] and result["drift"] == []
    assert [f["id"] for f in result["figures"]] == [
        f"protection/ctl/{s}" for s in ("solo", "interference", "protected", "worst-found")]
    for fig in result["figures"]:
        assert fig["verdict"] in (compare.REPRODUCED, compare.NOT_REPRODUCED), fig
        assert [q["quantity"] for q in fig["quantities"]] == ["miss_ratio"]
        assert fig["measured"]["n"] == JOBS
    assert result["reproduced"] == sum(f["verdict"] == compare.REPRODUCED
                                       for f in result["figures"])
    # The dossier verified is untouched; the re-measurement is a dossier of its own.
    assert {p.name: file_sha256(p) for p in out.iterdir() if p.is_file()} == before
    assert json.loads((again / "verification.json").read_text()) == result
    new = json.loads((again / "dossier.json").read_text())
    with Store.open(again / "store.db") as store:
        assert [i.id for i in store.invocations()] == \
            [new["store"]["invocations"]["protection"]]
    assert (again / "step-matrix.json").read_bytes() == (out / "step-matrix.json").read_bytes()
    assert not real_cgroups.roots_named(root)

    done = subprocess.run([sys.executable, "-m", "intercore", "dossier", "diff", str(out),
                           str(again), "--json"], capture_output=True, text=True)
    compared = json.loads(done.stdout)
    assert compared["settings"] == []
    outside = {f["id"] for f in compared["figures"] if f["flag"]}
    assert done.returncode == (1 if outside else 0), done.stderr
    assert outside <= {f["id"] for f in result["figures"]}


@pytest.mark.slow
def test_a_matrix_figure_states_no_interval_and_is_not_counted_reproduced(assessed):
    _, out, root = assessed
    rc, stdout, stderr = _finish(_verify(out, root, "--figure", "matrix/*"))
    assert rc == 1, stdout + stderr
    assert "[1/1] matrix: interference matrix" in stdout
    assert "0 of 1 figures reproduced" in stdout and compare.NO_INTERVAL in stdout


@pytest.mark.slow
def test_ctrl_c_in_the_remeasurement_leaves_nothing(assessed, tmp_path, real_cgroups):
    system, out, root = assessed
    # A dossier of a longer matrix (20 rounds): the same run, its system file and the
    # dossier's record of it edited as one, so that the stop lands inside the matrix.
    longer = tmp_path / "longer"
    longer.mkdir()
    for p in out.iterdir():
        if p.is_file():
            (longer / p.name).write_bytes(p.read_bytes())
    edited = system.parent / "longer.yaml"
    edited.write_text(system.read_text().replace("matrix_rounds: 1", "matrix_rounds: 20"))
    doc = json.loads((out / "dossier.json").read_text())
    doc["inputs"][str(edited)] = file_sha256(edited)
    doc["system"].update(source=str(edited), quick=False)
    (longer / "dossier.json").write_text(artefact.dumps(doc))

    proc, seen = _verify(longer, root, "--figure", "matrix/*", "-o", str(tmp_path / "v")), []
    _wait_for(proc, "[1/1] matrix", seen)
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc, stdout, stderr = _finish(proc)
    assert rc == 130, "".join(seen) + stdout + stderr
    assert time.monotonic() - sent < 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["longer"]
    assert not real_cgroups.roots_named(root)
