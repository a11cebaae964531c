"""Every example and test program builds with each back end - unfused, fused, and with its
data-parallel nodes split - and prints what the sequential program prints, with any thread
limit (no deadlock at OMP_THREAD_LIMIT=1).

Unfused, each is built with both schedules: a thread per task, and the static one (a
thread per CPU firing its partition's calls in order).

The reference is the C back end's one-task variant (what OMP_THREAD_LIMIT=1 selects): the
composition run in order on one thread, with no channel. Where a program has a
`*.expected` file, written from an independent model of its functions, the reference must
equal it too, so a bug shared by every variant cannot hide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples" / "apps").iterdir() if p.is_dir())
PROGRAMS = sorted(p for p in (Path(__file__).parent / "programs").iterdir() if p.is_dir())
CASES = EXAMPLES + PROGRAMS
HAVE_MLIR = shutil.which("mlir-opt-19") is not None and shutil.which("clang-19") is not None
BACKENDS = ["c", pytest.param("mlir", marks=pytest.mark.skipif(
    not HAVE_MLIR, reason="mlir-19-tools and clang-19 are not installed"))]
# --cpus 2: unfused, most programs have more tasks than CPUs, so both schedules differ
VARIANTS = {"unfused": ("--no-fuse", "--schedule", "threads"),
            "static": ("--no-fuse", "--schedule", "static"), "fused": (),
            "split": ("--split", "2")}


def build(app: Path, out: Path, backend: str, *flags: str) -> dict:
    """Build `app` into `out`; the compiler's --json report (its plan)."""
    comp = next(app.glob("*.comp"))
    sources = sorted(app.glob("*.c"))
    cmd = [sys.executable, "-m", "intercore", "compile", "build", str(comp), "--sources",
           *map(str, sources), "-o", str(out), "--backend", backend, "--cpus", "2", "--json",
           *flags]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run(binary: Path, threads: int | None = None, quiet: bool = True) -> str:
    env = dict(os.environ)
    env.pop("OMP_THREAD_LIMIT", None)
    env.pop("INTERCORE_RT_QUIET", None)
    if quiet:
        env["INTERCORE_RT_QUIET"] = "1"
    if threads is not None:
        env["OMP_THREAD_LIMIT"] = str(threads)
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    cache: dict[Path, str] = {}

    def get(app: Path) -> str:
        if app not in cache:
            out = tmp_path_factory.mktemp(app.name) / "reference"
            build(app, out, "c", "--no-fuse")
            cache[app] = run(out, threads=1)
            assert cache[app].strip(), "the program prints its result"
            for expected in app.glob("*.expected"):
                assert cache[app] == expected.read_text(), expected
        return cache[app]
    return get


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("app", CASES, ids=[p.name for p in CASES])
@pytest.mark.slow
def test_matches_sequential_reference(app: Path, backend: str, tmp_path, reference) -> None:
    expected = reference(app)
    for name, flags in VARIANTS.items():
        build(app, tmp_path / name, backend, *flags)
        for threads in (None, 1, 2):
            assert run(tmp_path / name, threads) == expected, (name, threads)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_split_loop_runs_its_replicas(backend: str, tmp_path, reference) -> None:
    """mandel's `escape` is data-parallel: --split 2 makes it two instances taking turns by
    row, and with enough threads the program runs that variant (no fallback notice)."""
    app = ROOT / "examples" / "apps" / "mandel"
    doc = build(app, tmp_path / "mandel", backend, "--split", "2")
    tasks = {t["process"]: t["instances"] for t in doc["explain"]["tasks"]}
    assert tasks == {"p_frame": 1, "p_escape": 2, "p_shade": 1}, tasks
    assert run(tmp_path / "mandel", quiet=False) == reference(app)


@pytest.mark.slow
def test_recursion_is_one_sequential_node(tmp_path) -> None:
    """Each call of a recursive composition function is one node, stateful (never split)."""
    doc = build(Path(__file__).parent / "programs" / "recursive", tmp_path / "r", "c",
                "--split", "2", "--no-fuse")["explain"]
    recursive = {n["label"]: n for n in doc["nodes"]
                 if n["label"] in ("fib", "is_even", "smooth", "triangle")}
    assert set(recursive) == {"fib", "is_even", "smooth", "triangle"}
    assert all(n["stateful"] and not n["replicable"] for n in recursive.values())


@pytest.mark.slow
def test_thread_limit_picks_a_smaller_variant(tmp_path) -> None:
    """Unfused signal pipeline: 6 tasks; with 3 threads it must run a 3-task variant
    rather than block 6 tasks on 3 threads."""
    build(ROOT / "examples" / "apps" / "signal", tmp_path / "s", "c", "--no-fuse")
    env = dict(os.environ, OMP_THREAD_LIMIT="3")
    done = subprocess.run([str(tmp_path / "s")], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0 and done.stdout == run(tmp_path / "s", 1)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_static_schedule_runs_one_thread_per_cpu(backend: str, tmp_path, reference) -> None:
    """Unfused signal pipeline: 6 tasks on 2 CPUs; by default it runs as 2 threads, each
    firing its partition in order, says so, and prints what the thread-per-task build does."""
    app = ROOT / "examples" / "apps" / "signal"
    doc = build(app, tmp_path / "s", backend, "--no-fuse")
    schedule = doc["explain"]["schedule"]
    assert schedule["mode"] == "static"
    assert schedule["why"].startswith("6 tasks > 2 CPU(s); estimate ")
    assert len(schedule["threads"]) == 2
    assert doc["build"]["schedule"] == {"mode": "static", "why": schedule["why"], "threads": 2}
    record = json.loads((tmp_path / "s.build" / "build.json").read_text())
    assert record["schedule"]["mode"] == "static"
    fired = [o["label"] for t in schedule["threads"] for o in t["order"]]
    assert sorted(fired) == sorted(n["label"] for n in doc["explain"]["nodes"])
    assert run(tmp_path / "s", quiet=False) == reference(app)  # no fallback notice either
