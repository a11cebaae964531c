"""`intercore learn` on bad input: one line naming the problem, exit 2; a host without the
tracer: exit 3."""

from __future__ import annotations

import pytest

import gzip
import json
import shutil
import subprocess
from pathlib import Path


from intercore.learn import programs
from intercore.learn.dataset import Dataset, ProgramRecord, load
from intercore.base.native import bin_dir

from _synthetic import HIER, examples
import _jaxwork
from _learnkit import compile_c, in_child, intercore


def _one_error_line(done: subprocess.CompletedProcess, code: int, *needles: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def _dataset(tmp_path: Path) -> Path:
    ex = examples(8, seed=1)
    by_prog: dict[str, list] = {}
    for e in ex:
        by_prog.setdefault(e.program, []).append(e)
    recs = [ProgramRecord(programs.ProgramSpec(p, es[0].family, "O2", ()),
                          tuple(e.region for e in es), {e.region.region: e.label for e in es})
            for p, es in by_prog.items()]
    d = tmp_path / "ds"
    Dataset({"hierarchy": HIER.to_dict()}, recs).save(d)
    return d


@pytest.mark.slow
def test_a_binary_without_markers_is_bad_input(tmp_path):
    exe = compile_c("int main(void) { return 0; }\n", tmp_path, "plain")
    (tmp_path / "model").mkdir()
    done = intercore("predict", "--model", str(_model(tmp_path)), str(exe))
    _one_error_line(done, 2, str(exe), "no region markers")


@pytest.mark.slow
def test_a_stripped_binary_has_no_heatmap(tmp_path):
    exe = compile_c('#include "ic_mark.h"\nint main(void) { IC_TRACE_BEGIN(1); '
                    'IC_TRACE_END(1); return 0; }\n', tmp_path, "marked")
    subprocess.run(["strip", str(exe)], check=True)
    done = intercore("heatmap", "--model", str(_model(tmp_path)), "--out",
                     str(tmp_path / "h"), str(exe))
    _one_error_line(done, 2, "no DWARF line table", "-g")
    assert not (tmp_path / "h").exists(), "nothing half-written"


@pytest.mark.slow
def test_a_dataset_saved_twice_is_the_same_bytes(tmp_path):
    """Its hash names its content, not the time it was exported."""
    first = (_dataset(tmp_path) / "programs.jsonl.gz").read_bytes()
    import time
    time.sleep(1.1)  # the gzip header's time has a resolution of a second
    again = load(tmp_path / "ds")
    again.save(tmp_path / "again")
    assert (tmp_path / "again" / "programs.jsonl.gz").read_bytes() == first
    assert load(tmp_path / "again").hash == again.hash


@pytest.mark.slow
def test_a_corrupt_dataset_is_bad_input(tmp_path):
    d = _dataset(tmp_path)
    load(d)  # intact: loads
    path = d / "programs.jsonl.gz"
    data = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    data[1] = data[1].replace(b'"labels"', b'"labelz"')
    path.write_bytes(gzip.compress(b"".join(data)))
    done = intercore("train", "--dataset", str(d), "--out", str(tmp_path / "m"))
    _one_error_line(done, 2, "programs.jsonl.gz", "does not match the hash")
    # Re-hashed, the same damage is named by line and field.
    meta = json.loads((d / "dataset.json").read_text())
    import hashlib
    meta["programs_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (d / "dataset.json").write_text(json.dumps(meta))
    done = intercore("train", "--dataset", str(d), "--out", str(tmp_path / "m"))
    _one_error_line(done, 2, "programs.jsonl.gz:2", "labels")
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_not_a_dataset_and_bad_options(tmp_path):
    _one_error_line(intercore("train", "--dataset", str(tmp_path)), 2, "not a dataset")
    d = _dataset(tmp_path)
    _one_error_line(intercore("train", "--dataset", str(d), "--alignment", "rows"), 2,
                    "--alignment")
    _one_error_line(intercore("evaluate", "--dataset", str(d), "--learners", "svm"), 2,
                    "--learners")
    _one_error_line(intercore("train", "--dataset", str(d), "--learner", "forest"), 2,
                    "--learner")
    _one_error_line(intercore("train", "--dataset", str(d), "--learner", "analytic",
                              "--lambda", "1"), 2, "--lambda")


@pytest.mark.slow
def test_a_baseline_trains_and_every_learner_is_scored(tmp_path):
    d = _dataset(tmp_path)
    done = intercore("train", "--dataset", str(d), "--out", str(tmp_path / "m"), "--learner",
                     "analytic", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["learner"] == "analytic" and doc["calibration"]["basis"] == "families"
    assert json.loads((tmp_path / "m" / "model.json").read_text())["learner"] == "analytic"
    done = intercore("evaluate", "--dataset", str(d), "--learners", "analytic,constant",
                     "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for s in report["learners"].values():
        for m in ("rho_within", "rho_across", "top1", "acc@10", "mape", "exceedance"):
            assert s[m] is not None and m in s["ci"]
    assert report["winner"] in ("analytic", "constant")
    done = intercore("evaluate", "--dataset", str(d), "--learners", "analytic,constant")
    assert done.returncode == 0, done.stderr
    assert "exceeded" in done.stdout and "held-out winner (ρ within, then top-3): " in done.stdout


@pytest.mark.slow
def test_a_host_without_the_tracer_says_so(tmp_path):
    fake = tmp_path / "bin"
    shutil.copytree(bin_dir(), fake, symlinks=True, ignore=shutil.ignore_patterns("ictrace*"))
    (fake / "ictrace.json").write_text('{"built": false, "status": "not built: test"}')
    done = intercore("dataset", "--small", "--out", str(tmp_path / "ds"), "--db",
                     str(tmp_path / "x.db"), env={"INTERCORE_BIN_DIR": str(fake)})
    _one_error_line(done, 3, "not built: test", "apt-get install valgrind")


def _model(tmp_path: Path) -> Path:
    """A tiny trained model (a few epochs on synthetic regions), trained in a child."""
    in_child(_jaxwork.tiny_model, str(tmp_path / "model"))
    return tmp_path / "model"
