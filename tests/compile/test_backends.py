"""Every example builds with each back end, fused and unfused, and prints what the
sequential program prints, with any thread limit (no deadlock at OMP_THREAD_LIMIT=1).

The reference is the program's one-task variant: the composition run in order on one
thread, with no channel (what OMP_THREAD_LIMIT=1 selects)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parents[2] / "examples" / "apps"
EXAMPLES = sorted(p for p in APPS.iterdir() if p.is_dir())
BACKENDS = ["c", pytest.param("mlir", marks=pytest.mark.skipif(
    shutil.which("mlir-opt-19") is None or shutil.which("clang-19") is None,
    reason="mlir-19-tools and clang-19 are not installed"))]


def build(app: Path, out: Path, backend: str, *flags: str) -> Path:
    comp = next(app.glob("*.comp"))
    sources = sorted(app.glob("*.c"))
    cmd = [sys.executable, "-m", "intercore", "compile", str(comp), "--sources",
           *map(str, sources), "-o", str(out), "--backend", backend, "--cpus", "2", *flags]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def run(binary: Path, threads: int | None = None) -> str:
    env = dict(os.environ, INTERCORE_RT_QUIET="1")
    env.pop("OMP_THREAD_LIMIT", None)
    if threads is not None:
        env["OMP_THREAD_LIMIT"] = str(threads)
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("app", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_matches_sequential(app: Path, backend: str, tmp_path) -> None:
    unfused = build(app, tmp_path / "unfused", backend, "--no-fuse")
    fused = build(app, tmp_path / "fused", backend)
    reference = run(unfused, threads=1)
    assert reference.strip(), "the example prints its result"
    for binary in (unfused, fused):
        for threads in (None, 1, 2):
            assert run(binary, threads) == reference, (binary.name, threads)


def test_thread_limit_picks_a_smaller_variant(tmp_path) -> None:
    """Unfused signal pipeline: 6 tasks; with 3 threads it must run a 3-task variant
    rather than block 6 tasks on 3 threads."""
    binary = build(APPS / "signal", tmp_path / "s", "c", "--no-fuse")
    env = dict(os.environ, OMP_THREAD_LIMIT="3")
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout == run(binary, 1)
