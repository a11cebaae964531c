"""Bad input for the newer command groups: assess, learn, compile, profile, gang, service,
manage, results merge (and the victim and aggressor grammars, the platform model's sizes).

One generator per group makes its cases: input files broken past the loader's bounds (a
learn artefact nested 100 000 deep, a .comp program whose literal, array type, constant
folding or recursion has no bound) and option values out of their range or beyond this host
(`--cpus 100000`, `--omp-threads 0`, `--threshold 0`, `--cc /nonexistent/cc`, a name of 300
characters, a key given twice). Every case must be refused the corpus's way: exit 2, the
option or the file named in one `error:` line (a .comp error adds the source line and a
caret under it), no traceback, fast (nothing was measured or trained), and nothing left
behind: no file in the scratch directory, no store.

The run reports how many cases each group had (tests/fuzz/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from typer.testing import CliRunner

from intercore.cli.main import app

EXAMPLES = Path(__file__).parents[2] / "examples"
DEEP = "[" * 100_000 + "]" * 100_000  # RecursionError in json.loads before the loader's bound
LONG_NAME = "n" * 300


class Case(NamedTuple):
    argv: tuple[str, ...]  # {T}: the scratch directory
    names: str             # what the error line must name: the option, or the file
    files: dict[str, str]  # scratch files the case needs, name -> content
    status: int = 2        # 3: the host (or its board) lacks something


def _comp(body: str, *decls: str) -> str:
    return "\n".join([*decls, "int main() {", body, "  return 0;", "}", ""])


def learn() -> list[Case]:
    ds = {"ds/dataset.json": DEEP, "ds/programs.jsonl.gz": ""}
    return [
        Case(("learn", "train", "-d", "{T}/ds", "-o", "{T}/model"), "dataset.json", ds),
        Case(("learn", "evaluate", "-d", "{T}/ds"), "dataset.json", ds),
        Case(("learn", "predict", "--model", "{T}/m", "/bin/true"), "model.json",
             {"m/model.json": DEEP}),
        Case(("learn", "predict", "--model", "{T}/m", "/bin/true"), "model.json",
             {"m/model.json": json.dumps({"format": [[[[[[[[0]]]]]]]] * 20000})}),
        Case(("learn", "train", "-o", "{T}/file", "--budget", "600"), "--out", {"file": "x"}),
        Case(("learn", "train", "--learner", "forest", "-o", "{T}/m"), "--learner", {}),
        Case(("learn", "evaluate", "--figures", "{T}/file", "--budget", "600"), "--figures",
             {"file": "x"}),
        Case(("learn", "dataset", "--families", "bogus", "--db", "{T}/s.db", "-o", "{T}/d"),
             "--families", {}),
        Case(("learn", "dataset", "--resume", "unknown", "--db", "{T}/s.db", "-o", "{T}/d"),
             "--db", {}),
        Case(("learn", "dataset", "--caches", "48K:bogus", "--db", "{T}/s.db", "-o", "{T}/d"),
             "--caches", {}),
    ]


def compile_() -> list[Case]:
    squarings = ["const long c0 = 3;"] + [f"const long c{i} = c{i - 1} * c{i - 1};"
                                          for i in range(1, 64)]
    programs = {
        "huge-float.comp": _comp("  f(1e999999);", "void f(double x);"),
        "huge-float32.comp": _comp("  f(1e39f);", "void f(float x);"),
        "huge-int.comp": _comp("  f(" + "9" * 100_000 + ");", "void f(long x);"),
        "huge-array.comp": _comp("  h(g(1));", "type big = float[1125899906842624];",
                                 "big g(int i);", "void h(const big x);"),
        "squarings.comp": _comp("  f(c63);", *squarings, "void f(long x);"),
        "overflow.comp": _comp("  f(N);", "const int N = 2147483647 + 1;", "void f(int x);"),
        "no-base-case.comp": _comp("  int y = f(1);", "int step(int x);",
                                   "int f(int x) {\n  return f(step(x));\n}"),
        "no-base-case-mutual.comp": _comp(
            "  int y = a(1);", "int step(int x);",
            "int a(int x) {\n  int r = b(step(x));\n  return r;\n}",
            "int b(int x) {\n  if (x > 3) {\n    x = a(x);\n  } else {\n    x = a(step(x));\n"
            "  }\n  return x;\n}"),
        "read-before-write.comp": _comp("  int x;\n  if (g(1) > 0) {\n    x = 1;\n  }\n  f(x);",
                                        "int g(int i);", "stateful void f(int x);"),
        "weight-twice.comp": _comp("  f(1);", "@weight(2) @weight(3) stateful void f(int x);"),
        "weight-infinite.comp": _comp("  f(1);", "@weight(1e999) stateful void f(int x);"),
    }
    signal_app = (str(EXAMPLES / "apps/signal/signal.comp"), "-s",
                  str(EXAMPLES / "apps/signal/signal.c"))
    return [Case(("compile", "build", "{T}/" + name), name, {name: text})
            for name, text in programs.items()] + [
        Case(("compile", "build", *signal_app, "--cpus", "100000"), "--cpus", {}),
        Case(("compile", "build", *signal_app, "--cpus", "0"), "--cpus", {}),
        Case(("compile", "build", *signal_app, "-o", "{T}/sig", "--schedule", "sometimes"),
             "--schedule", {}),
        Case(("compile", "build", *signal_app, "-o", "{T}/sig", "--cc", "/nonexistent/cc"), "--cc",
             {}),
        Case(("compile", "build", *signal_app, "-o", "{T}/sig", "--cc", ""), "--cc", {}),
        Case(("compile", "build", *signal_app, "-o", "{T}/sig", "--backend", "mlir", "--cc",
              "/nonexistent/cc"), "--cc", {}),
    ]


def profile() -> list[Case]:
    return [
        Case(("measure", "profile", "run", "--interval", "0s", "--", "true"), "--interval", {}),
        Case(("measure", "profile", "run", "--interval", "1h", "--", "true"), "--interval", {}),
        Case(("measure", "profile", "run", "--self-test", "0s"), "--self-test", {}),
        Case(("measure", "profile", "run", "--cpu", "100000", "--", "true"), "--cpu", {}),
    ]


def gang() -> list[Case]:
    ts = ("mitigate", "gang", "--taskset", str(EXAMPLES / "tasksets/rt-gang.yaml"), "-o", "{T}/g")
    return [Case(ts + (option, value), option, {}) for option, value in (
        ("--jobs", "0"), ("--rounds", "0"), ("--cpu", "100000"), ("--lead", "-1s"),
        ("--throttle", "slow"))]


def service() -> list[Case]:
    install = ("mitigate", "service", "install", "--plan", "{T}/plan.json", "--unit-dir", "{T}",
               "--state-dir", "{T}")
    return [Case(install + (option, value), option, {}) for option, value in (
        ("--threshold", "0"), ("--threshold", "101"), ("--rt-priority", "100"),
        ("--name", LONG_NAME), ("--name", "../x"), ("--watchdog", "1"),
        ("--policy", "sometimes"))]


def manage() -> list[Case]:
    return [Case(("compile", "manage", option, value, "--", "true"), option, {}) for option,
            value in (
        ("--cpus", "100000"), ("--cpus", "0-999999999999"), ("--omp-threads", "0"),
        ("--top", "0"), ("--interval", "0"), ("--rt-priority", "100"),
        ("--sensitivity", "x=-1"))]


def results_merge() -> list[Case]:
    return [
        Case(("results", "merge", "{T}/junk.db", "-o", "{T}/out.db"), "junk.db",
             {"junk.db": "not a store\n"}),
        Case(("results", "merge", "{T}/deep.db", "-o", "{T}/out.db"), "deep.db",
             {"deep.db": DEEP}),
        Case(("results", "merge", "{T}/missing.db", "-o", "{T}/out.db"), "missing.db", {}),
    ]


def measure() -> list[Case]:
    quick = ("measure", "run", "--no-store", "--no-canary", "--runs", "2")
    return [
        Case(quick + ("ptrchase:size=1M,size=2M",), "--param", {}),
        Case(quick + ("ptrchase:size=1M", "-p", "size=2M"), "--param", {}),
        Case(quick + ("matmul", "-a", "bw:size=1M,size=2M"), "--aggressor", {}),
    ]


def model() -> list[Case]:
    base = (EXAMPLES / "platforms/rpi4.yaml").read_text()
    edits = {"line-63.yaml": ("line: 64", "line: 63"),
             "ways-1e8.yaml": ("ways: 16", "ways: 100000000"),
             "banks-1e9.yaml": ("banks: 8", "banks: 1000000000")}
    files = {name: base.replace(old, new, 1) for name, (old, new) in edits.items()}
    files["cpu-range.yaml"] = base.replace("components:\n", "components:\n  cpu[0-999999999999]: "
                                           "{kind: core, role: initiator}\n", 1)
    return [Case(("model", "analyze", "{T}/" + name), name, {name: text})
            for name, text in files.items()]


def campaign() -> list[Case]:
    """A board that is not there: named in one line, exit 2 (no such host) or 3 (no answer),
    not exit 1 as a failing tool."""
    text = (EXAMPLES / "campaigns/small.yaml").read_text()
    boards = {"unresolvable.yaml": ("no-such-board.invalid", 2),
              "refused.yaml": ("127.0.0.1, port: 9", 3)}
    return [Case(("measure", "campaign", "validate", "{T}/" + name), host.split(",")[0],
                 {name: f"executor: {{kind: ssh, host: {host}}}\n" + _without_executor(text)},
                 status) for name, (host, status) in boards.items()]


def _without_executor(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("executor:"))


ASSESS_TASKSET = """name: t
tasks:
  - {name: chase, workload: ptrchase, period: 10ms, deadline: 5ms, cpu: 0, priority: 10,
     role: critical}
  - {name: noise, workload: BwWrite(LLC), period: 20ms, work: time:4ms, cpu: 0,
     role: best-effort}
"""
ASSESS_SYSTEM = "name: s\nplatform: detect\ntaskset: t.yaml\n"


def assess() -> list[Case]:
    """A system description broken one field at a time (and the files it names, and the
    places it writes): refused at the field before anything is detected or measured, the
    dossier directory never made."""
    run = ("assess", "{T}/s.yaml", "-o", "{T}/dossier")
    edits = {"speed: 3": "speed", "theta: 1": "theta", "theta: .nan": "theta",
             "budget: 1ms": "budget", "budget: 10": "budget", "sizes: {jobs: 0}": "sizes.jobs",
             "sizes: {matrix_rounds: 1000000000}": "sizes.matrix_rounds",
             "sizes: {matrix_block: 1ps}": "sizes.matrix_block",
             "mitigations: [teleport]": "mitigations", "mitigations: freeze": "mitigations"}
    cases = [Case(run, field, {"s.yaml": ASSESS_SYSTEM + extra + "\n",
                               "t.yaml": ASSESS_TASKSET})
             for extra, field in edits.items()]
    broken = {"taskset: missing.yaml": "taskset", "platform: missing.yaml": "platform",
              "taskset: t.yaml\nplatform: bad-model.yaml": "bad-model.yaml",
              "taskset: deep.yaml": "deep.yaml", "taskset: crit-only.yaml": "taskset",
              "taskset: no-cpu.yaml": "tasks[0].cpu"}
    files = {"bad-model.yaml": "name: m\ncomponents: 3\n", "deep.yaml": DEEP,
             "crit-only.yaml": ASSESS_TASKSET.split("  - {name: noise")[0],
             "no-cpu.yaml": ASSESS_TASKSET.replace("cpu: 0, priority: 10,", "priority: 10,")}
    for edit, names in broken.items():
        system = "name: s\n" + edit + ("\n" if "platform" in edit else "\nplatform: detect\n")
        if "taskset" not in edit:
            system += "taskset: t.yaml\n"
        cases.append(Case(run, names, {"s.yaml": system, "t.yaml": ASSESS_TASKSET, **files}))
    good = {"s.yaml": ASSESS_SYSTEM, "t.yaml": ASSESS_TASKSET}
    cases += [Case(("assess", "{T}/s.yaml", "-o", "{T}/t.yaml"), "--out", good),
              Case(("assess", "{T}/s.yaml", "-o", "{T}/t.yaml/d"), "--out", good),
              Case(run + ("--root", "../up"), "--root", good),
              Case(run + ("--db", "{T}/t.yaml"), "--db", good)]
    return cases


def dossier() -> list[Case]:
    """`dossier verify` / `diff` of directories that are not dossiers this version reads: refused
    at the file and field before a host setting is read or a figure measured."""
    verify = ("dossier", "verify", "{T}/d")
    bad = {"d/dossier.json": json.dumps({"format": "intercore.dossier/0"}),
           "e/dossier.json": '{"format": "intercore.dossier/1", "figures": [',
           "f/dossier.json": DEEP, "g/dossier.json": json.dumps({"format":
                                                                 "intercore.dossier/1"}),
           "t.yaml": "x"}
    return [Case(("dossier", "verify", "{T}/missing"), "DIR", {}),
            Case(("dossier", "verify", "{T}/t.yaml"), "DIR", bad),
            Case(("dossier", "verify", "{T}/empty"), "DIR", {"empty/x": ""}),
            Case(verify, "d/dossier.json:1: format", bad),
            Case(("dossier", "verify", "{T}/e"), "e/dossier.json:1", bad),
            Case(("dossier", "verify", "{T}/f"), "f/dossier.json", bad),
            Case(("dossier", "verify", "{T}/g"), "g/dossier.json:1: tool_version", bad),
            Case(verify + ("--out", "{T}/t.yaml"), "--out", bad),
            Case(verify + ("--out", "{T}/t.yaml/v"), "--out", bad),
            Case(verify + ("--root", "../up"), "--root", bad),
            Case(("dossier", "diff", "{T}/missing", "{T}/d"), "A", bad),
            Case(("dossier", "diff", "{T}/e", "{T}/missing"), "e/dossier.json", bad),
            Case(("dossier", "diff", "{T}/g", "{T}/d"), "g/dossier.json", bad)]


GENERATORS = {"assess": assess, "dossier": dossier, "learn": learn, "compile build": compile_,
              "measure profile run": profile, "mitigate gang": gang,
              "mitigate service install": service, "compile manage": manage,
              "results merge": results_merge, "measure run": measure, "model": model,
              "measure campaign validate": campaign}
CASES = [(group, case) for group, make in GENERATORS.items() for case in make()]


def test_every_group_has_its_generator():
    groups = {group for group, _ in CASES}
    assert {"learn", "compile build", "measure profile run", "mitigate gang",
            "mitigate service install", "compile manage", "results merge", "assess",
            "dossier"} <= groups


@pytest.mark.slow
@pytest.mark.parametrize("group, case", CASES,
                         ids=[f"{g}:{' '.join(c.argv[1:4])[:60]}" for g, c in CASES])
def test_a_bad_input_of_a_new_group_is_refused_up_front(tmp_path, monkeypatch, group, case):
    scratch = tmp_path / "work"
    scratch.mkdir()
    for name, text in case.files.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)
    monkeypatch.chdir(scratch)
    before = sorted(p.relative_to(scratch) for p in scratch.rglob("*"))
    argv = [a.replace("{T}", str(scratch)) for a in case.argv]
    started = time.monotonic()
    result = CliRunner().invoke(app, argv)
    seconds = time.monotonic() - started
    where = f"intercore {' '.join(argv)[:300]}"
    assert isinstance(result.exception, SystemExit), f"{where}: {result.exception!r}"
    assert result.exit_code == case.status, \
        f"{where}: exit {result.exit_code}\n{result.output[-2000:]}"
    assert "Traceback" not in result.output, where
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1, f"{where}: {result.stderr!r}"
    assert case.names in result.stderr, f"{where}: {result.stderr!r}"
    assert seconds < 20, f"{where}: took {seconds:.1f} s, so it worked on something"
    assert sorted(p.relative_to(scratch) for p in scratch.rglob("*")) == before, \
        f"{where}: left {set(scratch.rglob('*'))}"
    assert not {p for p in os.listdir("/dev/shm") if p.startswith(f"intercore-{os.getpid()}-")}


@pytest.fixture(autouse=True, scope="module")
def no_compiler_override():
    """--cc cases must meet the compiler they name, not $CC."""
    saved = os.environ.pop("CC", None)
    yield
    if saved is not None:
        os.environ["CC"] = saved


def test_a_compiler_that_exists_is_still_used(tmp_path):
    """The --cc check refuses what is missing, not what is there."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on this host")
    out = tmp_path / "sig"
    result = CliRunner().invoke(app, ["compile", "build", str(EXAMPLES / "apps/signal/signal.comp"),
                                      "-s", str(EXAMPLES / "apps/signal/signal.c"), "-o",
                                      str(out), "--cc", cc])
    assert result.exit_code == 0, result.output
    assert out.exists()
