"""Definite assignment: a read that some path reaches with no value is refused in the front
end, with the read's file:line:column, the variable and the path, before any back end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.compile import irgen, parser
from intercore.compile.errors import CompileError

HEAD = ("type b = float[4];\nint src(int i);\nb make(int i);\nvoid mod(b x);\n"
        "void use(const b x);\nstateful void sink(int i, int v);\n")
FIRST = HEAD.count("\n") + 2  # the source line of main's first statement


def check(body: str, funcs: str = "") -> None:
    irgen.generate(parser.parse(HEAD + funcs + "int main() {\n" + body + "\n  return 0;\n}\n",
                                "da.comp"))


# (body, the read's line and column, why): lines count from the body's first, 0; {k} in
# `why` stands for the source line of the body's line k.
@pytest.mark.parametrize("body, line, col, why", [
    ("  int x;\n  sink(0, x);", 1, 11, "declared at line {0} with no value"),
    ("  int x;\n  x += 1;\n  sink(0, x);", 1, 3, "declared at line {0} with no value"),
    ("  int x;\n  x++;", 1, 3, "declared at line {0} with no value"),
    ("  b x;\n  use(x);", 1, 7, "declared at line {0} with no value"),
    # a mutable argument is read too: the function may read what it modifies
    ("  b x;\n  mod(x);", 1, 7, "declared at line {0} with no value"),
    ("  int x;\n  if (src(0) > 1) { x = 1; }\n  sink(0, x);", 2, 11,
     "the if at line {1} assigns it only when its condition is true"),
    ("  int x;\n  if (src(0) > 1) { sink(1, 1); } else { x = 1; }\n  sink(0, x);", 2, 11,
     "the if at line {1} assigns it only when its condition is false"),
    ("  int x;\n  if (src(0) > 1) { x = 1; } else if (src(1) > 1) { x = 2; }\n"
     "  sink(0, x);", 2, 11, "the if at line {1} assigns it only when its condition is true"),
    ("  int x;\n  int n = src(0);\n  while (n > 0) { x = n; n -= 1; }\n  sink(0, x);", 3, 11,
     "the loop at line {2} assigns it but may run zero times"),
    ("  int x;\n  int n = src(0);\n  for (int i = 0; i < n; i++) { x = i; }\n  sink(0, x);",
     3, 11, "the loop at line {2} assigns it but may run zero times"),
    ("  int x;\n  for (int i = 0; i < 0; i++) { x = i; }\n  sink(0, x);", 2, 11,
     "the loop at line {1} assigns it but may run zero times"),
    # the first iteration reads it before the body assigns it
    ("  int x;\n  for (int i = 0; i < 4; i++) { sink(i, x);\n x = src(i); }", 1, 41,
     "declared at line {0} with no value"),
    ("  int x;\n  for (int i = 0; i < 4; i++) { x = src(i); }\n  for (int j = 0; j < x; j++) "
     "{ int y;\n sink(j, y); }", 3, 10, "declared at line {2} with no value"),
])
def test_a_read_some_path_reaches_unassigned_is_refused(body, line, col, why) -> None:
    with pytest.raises(CompileError) as err:
        check(body)
    name = "y" if "int y;" in body else "x"
    assert (err.value.pos.line, err.value.pos.col) == (FIRST + line, col), str(err.value)
    assert f"'{name}' may be read before it has a value: " \
        f"{why.format(*range(FIRST, FIRST + 4))}; " in str(err.value)


def test_reads_in_composition_and_recursive_functions_are_checked() -> None:
    inlined = "int pick(int v) {\n  int r;\n  if (v > 0) { r = v; }\n  return r;\n}\n"
    with pytest.raises(CompileError, match=r"^da\.comp:10:10: 'r' may be read .* line 9 "
                                           "assigns it only when its condition is true"):
        check("  sink(0, pick(src(0)));", inlined)
    recursive = ("long f(long n) {\n  long r;\n"
                 "  if (n < 2) { return r; } else { return f(n - 1); }\n}\n")
    with pytest.raises(CompileError, match=r"^da\.comp:9:23: 'r' may be read before"):
        check("  sink(0, f(5));", recursive)


@pytest.mark.parametrize("body", [
    "  int x;\n  x = src(0);\n  sink(0, x);",
    "  int x;\n  if (src(0) > 1) { x = 1; } else { x = 2; }\n  sink(0, x);",
    "  int x;\n  if (src(0) > 1) { x = 1; } else if (src(1) > 1) { x = 2; } else { x = 3; }\n"
    "  sink(0, x);",
    "  int x;\n  for (int i = 0; i < 4; i++) { x = src(i); }\n  sink(0, x);",  # runs 4 times
    "  int x;\n  for (int i = 0; i < 4; i++) { x = src(i);\n sink(i, x); }",
    "  int n = src(0);\n  while (n > 0) { int x;\n x = n;\n sink(0, x);\n n -= 1; }",
    "  b x;\n  x = make(1);\n  mod(x);\n  use(x);",
    "  b x;\n  b y = make(2);\n  x = y;\n  use(x);",
    "  { int x;\n x = 1;\n sink(0, x); }\n  { int x = 2;\n sink(1, x); }",
])
def test_a_variable_assigned_on_every_path_compiles(body) -> None:
    check(body)


# ---- the issue's composition: refused before either back end runs ----------------------------

ALARMS = Path(__file__).parent / "programs" / "alarms"
BACKENDS = ("c", "mlir")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_issue_example_reaches_neither_back_end(backend: str, tmp_path) -> None:
    """The composition that printed `sum -nan` from its MLIR build, with `sum` declared with
    no value, fails with one line naming the read; every tool a back end would run is a
    stand-in that records its call, and none is called, and nothing is written."""
    text = (ALARMS / "alarms.comp").read_text()
    assert "  float sum = 0.0;\n" in text
    bad = tmp_path / "alarms.comp"
    bad.write_text(text.replace("  float sum = 0.0;\n", "  float sum;\n"))
    lines = bad.read_text().splitlines()
    decl = lines.index("  float sum;") + 1
    use = lines.index("    sum += e;") + 1
    tools, calls = tmp_path / "tools", tmp_path / "calls.log"
    tools.mkdir()
    for tool in ("cc", "gcc", "clang", "clang-19", "mlir-opt-19", "mlir-translate-19"):
        (tools / tool).write_text(f"#!/bin/sh\necho {tool} >> {calls}\nexit 1\n")
        (tools / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "CC": str(tools / "cc")}
    out = tmp_path / "app"
    run = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(bad),
                          "--sources",
                          str(ALARMS / "alarms.c"), "-o", str(out), "--backend", backend],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    first = run.stderr.splitlines()[0]
    assert first == (f"error: {bad}:{use}:5: 'sum' may be read before it has a value: "
                     f"declared at line {decl} with no value; give it a value where it is "
                     "declared, or on every path to this use"), run.stderr
    assert not calls.exists(), calls.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alarms.comp", "tools"]


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["comp", "c", "mlir"])
def test_no_stage_is_printed_for_a_refused_program(stage: str, tmp_path) -> None:
    bad = tmp_path / "bad.comp"
    bad.write_text("int src(int i);\nstateful void sink(int v);\nint main() {\n  int x;\n"
                   "  if (src(0) > 0) { x = 1; }\n  sink(x);\n  return 0;\n}\n")
    run = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(bad), "--emit",
                          stage], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"error: {bad}:6:8: 'x' may be read before it has a value: "
                                 "the if at line 5 assigns it only when its condition is true")
