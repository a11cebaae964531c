"""A user's own program, measured as it is: the example under examples/user-program/ built with
gcc and clang 19 against the installed kit (`intercore measure kit`, intercore.pc), run by
ic-run, and measured by `intercore measure run -- PROG ARGS` through the same harness and
store as the built-in victims. Structure only: the host is too noisy for timing figures."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base.artefact import file_sha256
from intercore.host.topology import largest_private, read_topology
from intercore.measure.aggressors.presets import PRESETS
from intercore.base.native import tool

from _kit import COMPILERS, REGIONS, STRICT, build_example, need
from _procs import wait_no_native_processes

TOPO = read_topology()


def intercore(*args: str, timeout: float = 300, cwd: Path | None = None
              ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def kit(*args: str) -> str:
    done = intercore("measure", "kit", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def control(tmp_path_factory) -> Path:
    need("gcc")
    return build_example("gcc", tmp_path_factory.mktemp("example")) / "control"


def small_aggressor() -> str:
    return f"bw:op=write,size={4 * largest_private(TOPO, TOPO.online_cpus[0]).size}"


# ---- the kit ------------------------------------------------------------------------------


@pytest.mark.slow
def test_kit_flags_are_pkg_configs_and_name_the_installed_kit():
    pc_path = Path(kit("--pc-path"))
    assert (pc_path / "intercore.pc").is_file()
    env = {**os.environ, "PKG_CONFIG_PATH": str(pc_path)}
    by_pkg_config = subprocess.run(["pkg-config", "--cflags", "--libs", "intercore"], env=env,
                                   capture_output=True, text=True, check=True).stdout.split()
    ours = kit("--cflags", "--libs").split()

    def resolved(flags: list[str]) -> list[str]:
        return [f[:2] + str(Path(f[2:]).resolve()) if f[:2] in ("-I", "-L") else f
                for f in flags]

    assert resolved(ours) == resolved(by_pkg_config)
    include = next(Path(f[2:]) for f in ours if f.startswith("-I"))
    assert (include / "ic_user.h").is_file()
    # The installed package's kit, not a checkout's.
    assert include.resolve().is_relative_to(tool("ic-run").resolve().parent)
    doc = json.loads(intercore("measure", "kit", "--json").stdout)
    assert doc["cflags"] == kit("--cflags").split() and doc["pc_path"] == str(pc_path)


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--pc-path", "--libs"]])
def test_kit_without_a_question_or_with_two_exits_2(args):
    done = intercore("measure", "kit", *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("first", ["", "#include <stdio.h>\n#include <time.h>\n"])
def test_the_headers_compile_as_strict_c11(cc, first, tmp_path):
    """ic_region.h once called sched_getcpu and clock_gettime, which strict C11 does not
    declare: gcc 12 warned, clang 19 refused. Included first or after system headers."""
    need(cc)
    src = tmp_path / "strict.c"
    src.write_text(first + "#include <ic_user.h>\n#include <ic_mark.h>\n"
                   "static const char *const names[] = {\"a\"};\n"
                   "int main(void) {\n  ic_user_regions(names, 1);\n"
                   "  IC_REGION_BEGIN(0);\n  IC_TRACE_BEGIN(1);\n  IC_TRACE_END(1);\n"
                   "  IC_REGION_END(0);\n  return 0;\n}\n")
    flags = kit("--cflags", "--libs").split()
    done = subprocess.run([cc, *STRICT, str(src), "-o", str(tmp_path / "strict"), *flags],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "strict")], timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
def test_the_example_builds_with_its_makefile_and_runs_alone(cc, tmp_path):
    need(cc)
    exe = build_example(cc, tmp_path) / "control"
    done = subprocess.run([str(exe), "--steps", "1000"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("control: 1000 steps") and done.stderr == ""


# ---- ic-run: the victim protocol for a program --------------------------------------------


def ic_run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([str(tool("ic-run")), *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_ic_run_speaks_the_victim_protocol_with_the_programs_regions(control):
    done = ic_run("--reps", "5", "--sync", "--cpu", str(TOPO.online_cpus[-1]), "--", str(control),
                  "--steps", "2000", stdin="go\ngo\ngo\nquit\n")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(ln) for ln in done.stdout.splitlines()]
    events = [ln["event"] for ln in lines]
    assert events[0] == "ready" and events[-1] == "end"
    assert lines[0]["kind"] == "program" and lines[0]["program"] == str(control)
    assert [ln["rep"] for ln in lines if ln["event"] == "rep"] == [0, 1, 2]
    samples = [ln for ln in lines if ln["event"] == "sample"]
    assert {(s["rep"], s["region"], s["name"]) for s in samples} == {
        (rep, i, name) for rep in range(3) for i, name in enumerate(("total", *REGIONS))}
    for s in samples:
        assert s["cpu"] == TOPO.online_cpus[-1]
        # The regions lie inside the whole run.
        assert 0 < s["cpu_ns"] <= next(t["cpu_ns"] for t in samples
                                       if t["rep"] == s["rep"] and t["region"] == 0)
    assert lines[-1]["reps"] == 3 and lines[-1]["dropped"] == 0


def test_a_program_without_markers_is_one_region_the_whole_run():
    done = ic_run("--reps", "2", "--", "/bin/true")
    assert done.returncode == 0, done.stderr
    samples = [json.loads(ln) for ln in done.stdout.splitlines()
               if json.loads(ln)["event"] == "sample"]
    assert [(s["rep"], s["name"]) for s in samples] == [(0, "total"), (1, "total")]
    assert all(s["wall_ns"] > 0 and s["nivcsw"] >= 0 for s in samples)


def test_a_failing_program_fails_the_run_with_its_message(tmp_path):
    script = tmp_path / "fails"
    script.write_text("#!/bin/sh\necho 'sensor offline' >&2\nexit 3\n")
    script.chmod(0o755)
    done = ic_run("--reps", "2", "--", str(script))
    assert done.returncode == 1
    assert "exited with status 3: sensor offline" in done.stderr


@pytest.mark.parametrize("args,needle", [
    (["--", "/nonexistent/prog"], "No such file"),
    (["--", "/tmp"], "not an executable file"),
    (["--reps", "2"], "missing -- PROG"),
])
def test_ic_run_refuses_bad_input_with_exit_2(args, needle):
    done = ic_run(*args)
    assert done.returncode == 2 and needle in done.stderr and done.stdout == ""


# ---- intercore measure run -- PROG ------------------------------------------------------------

pytestmark = pytest.mark.skipif(len(TOPO.online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")


@pytest.mark.slow
def test_measure_reports_the_programs_regions_by_name_and_stores_them(control, tmp_path):
    db = tmp_path / "r.db"
    done = intercore("measure", "run", "-a", small_aggressor(), "-a", "PLLRead(LLC)", "--runs", "3",
                     "--json", "--db", str(db), "--", str(control), "--steps", "2000")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["victim"]["kind"] == "program"
    assert out["victim"]["command"] == [str(control.resolve()), "--steps", "2000"]
    assert out["regime"] in ("shared", "not-shared", "unknown", "mixed")
    sets = [s["label"] for s in out["aggressors"]]
    assert {(r["aggressor_set"], r["name"]) for r in out["regions"]} == {
        (s, name) for s in sets for name in ("total", *REGIONS)}
    for r in out["regions"]:
        assert r["n"] == 3
        assert sum(v["n"] for v in r["by_regime"].values()) == 3
    design = out["design"]
    assert design["interleaved"]
    assert {b["aggressor_set"] for b in design["blocks"]} == set(sets)
    assert len(design["probes"]) == len(design["blocks"]) + 1

    con = sqlite3.connect(db)
    # 2 sets x 3 pairs x 2 conditions x 4 regions
    assert con.execute("select count(*) from samples").fetchone()[0] == 48
    kind, params = con.execute(
        "select kind, params_json from workloads where role='victim'").fetchone()
    assert kind == "program" and json.loads(params)["command"][0] == str(control.resolve())
    # Every pair is one isolated and one interfered run of the program, back to back.
    rows = con.execute("select pair, condition, rep, regime from samples "
                       "where region_name='total'").fetchall()
    by_pair: dict[int, dict[str, int]] = {}
    for pair, cond, rep, regime in rows:
        by_pair.setdefault(pair, {})[cond] = rep
        assert regime in ("shared", "not-shared", "unknown")
    assert len(by_pair) == 6
    assert all(set(p) == {"iso", "int"} and abs(p["iso"] - p["int"]) == 1
               for p in by_pair.values())


@pytest.mark.slow
def test_the_worst_aggressor_of_a_program_is_searched_saved_for_its_binary_and_reused(
        control, tmp_path):
    """`--search -- PROG`: the presets ranked over the program's own pairs, the winner saved
    under the binary's sha256, and `-a @worst:PATH` resolving to it; a rebuilt binary (other
    bytes) has no winner saved, so it is refused rather than handed the old one's."""
    db = tmp_path / "r.db"
    done = intercore("measure", "run", "--search", "--search-presets", "--search-pairs", "2",
                     "--no-canary", "--json", "--db", str(db), "--", str(control),
                     "--steps", "2000")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    first = out["rounds"][0]
    tried = [r["aggressor"] for r in first["ranking"]]
    assert first["pairs"] == 2 and 2 < len(tried) <= len(PRESETS) and set(tried) <= set(PRESETS)
    winner = out["winner"]["aggressor"]
    assert winner in tried
    assert out["saved_as"] == f"@worst:program:control:sha256={file_sha256(control)[:16]}"

    again = intercore("measure", "run", "-a", f"@worst:{control}", "--runs", "2",
                      "--no-canary", "--json", "--db", str(db), "--", str(control),
                      "--steps", "2000")
    assert again.returncode == 0, again.stderr
    [aset] = json.loads(again.stdout)["aggressors"]
    assert aset["label"] == f"@worst:{control} = {winner}"

    other = tmp_path / "control"
    other.write_bytes(control.read_bytes() + b"\0")  # another binary: another sha256
    other.chmod(0o755)
    refused = intercore("measure", "run", "-a", f"@worst:{other}", "--runs", "2",
                        "--no-canary", "--db", str(db), "--", str(other))
    assert refused.returncode == 2 and "not saved for this host" in refused.stderr, \
        refused.stderr


@pytest.mark.slow
def test_measure_a_program_without_markers_measures_its_whole_run(tmp_path):
    done = intercore("measure", "run", "-a", small_aggressor(), "--runs", "2", "--no-canary",
                     "--json", "--no-store", "--", "/bin/true", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [(r["name"], r["n"]) for r in out["regions"]] == [("total", 2)]
    assert list(tmp_path.iterdir()) == []


def _not_executable(tmp_path: Path) -> str:
    path = tmp_path / "prog.c"
    path.write_text("int main(void) { return 0; }\n")
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("args,needle", [
    (lambda t: ["--", str(t / "missing")], "no such file"),
    (lambda t: ["--", str(t)], "is a directory"),
    (lambda t: ["--", _not_executable(t)], "not an executable file"),
    (lambda t: ["-p", "n=3", "--", "/bin/true"], "--param"),
    (lambda t: ["--", "matmul", "--n", "3"], "VICTIM"),
])
def test_bad_programs_are_refused_before_any_work(tmp_path, args, needle):
    db = tmp_path / "r.db"
    done = intercore("measure", "run", "--db", str(db), *args(tmp_path))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert needle in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error:")
    assert not db.exists()
    assert wait_no_native_processes() == []


def _pids_of(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(
                    errors="replace").replace("\0", " "):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_stop_kills_the_programs_whole_group_at_once(tmp_path, how):
    """Ctrl-C reaches the terminal's whole process group (intercore and ic-run), SIGTERM only
    intercore; either way the program and what it started are gone within a second."""
    marker = f"{4000 + os.getpid() % 1000}.{os.getpid()}"
    script = tmp_path / "slow"
    # A program that starts a child of its own: the group, not only the program, must go.
    script.write_text(f"#!/bin/sh\nsleep {marker} &\nwait\n")
    script.chmod(0o755)
    db = tmp_path / "r.db"
    proc = subprocess.Popen([sys.executable, "-m", "intercore", "measure", "run", "-a",
                             small_aggressor(), "--runs", "5", "--no-canary", "--db", str(db),
                             "--", str(script)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not _pids_of(f"sleep {marker}"):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.05)
        sent = time.monotonic()
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        while _pids_of(f"sleep {marker}") and time.monotonic() - sent < 1.0:
            time.sleep(0.01)
        assert _pids_of(f"sleep {marker}") == [], "the program's group outlived the stop"
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == (130 if how == "ctrl-c" else 143), proc.stderr.read()
    assert wait_no_native_processes() == []
    assert not db.exists()
    assert not list(Path("/dev/shm").glob(f"intercore-{proc.pid}-*"))


@pytest.mark.slow
def test_the_demo_builds_the_example_as_a_user_would_and_measures_its_regions(tmp_path):
    from intercore.measure.harness.session import measure
    from intercore.tour import user_program

    (tmp_path / "user-program").mkdir()
    (tmp_path / "user-program" / "control").write_text("stale")  # a build of the user's own
    binary = user_program.build(tmp_path) / "control"
    assert binary == tmp_path / "user-program" / "control" and os.access(binary, os.X_OK)
    result = measure(user_program.request(binary, (small_aggressor(),), 3), db=None,
                     argv=["test"])
    assert result.plan.victim.command == (str(binary.resolve()), *user_program.ARGS)
    assert {r.region_name for r in result.regions} == {"total", *REGIONS}
    assert all(r.result.n == 3 for r in result.regions)
