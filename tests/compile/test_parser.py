"""The composition language: every construct parses and checks; errors name line:column."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercore.compile import ast, irgen, parser
from intercore.compile.errors import CompileError

EVERYTHING = """
type block = float[2 * 128];
const int N = 10;
const double LIMIT = N / 4.0;
block source(int i);
stateful void sink(int i, const block x);
@weight(2.5) block lowpass(const block x);
void normalize(block x);
double energy(const block x);
long fib(long n) {
  if (n < 2) { return n; } else { return fib(n - 1) + fib(n - 2); }
}
block twice(const block x) {
  block y = lowpass(lowpass(x));
  return y;
}
void main(void) {
  double acc = 0.0;
  for (int i = 0; i < N; i++) {
    block b = twice(source(i));
    normalize(b);
    double e = energy(b);
    if (e > LIMIT && i % 2 == 0) {
      sink(i, b);
    } else if (!(i > 3) || -e < 1) {
      acc += -e * 2;
    } else {
      acc -= 1;
    }
  }
  while (acc > 1.0) { acc = acc / 2; acc *= 1.0f; }
  { long f = fib(10); }
}
"""


def test_every_construct_parses_and_checks() -> None:
    prog = parser.parse(EVERYTHING, "all.comp")
    kinds = {type(i) for i in prog.items}
    assert kinds == {ast.TypeDef, ast.ConstDef, ast.Decl, ast.FuncDef}
    decls = {i.name: i for i in prog.items if isinstance(i, ast.Decl)}
    assert decls["sink"].stateful and decls["lowpass"].weight == 2.5
    assert decls["normalize"].params[0].const is False
    assert decls["energy"].params[0].const is True

    def walk(stmts):
        for s in stmts:
            yield s
            for sub in ("then", "orelse", "body"):
                yield from walk(getattr(s, sub, None) or ())
    main = next(i for i in prog.items if isinstance(i, ast.FuncDef) and i.name == "main")
    seen = {type(s) for s in walk(main.body)}
    assert {ast.VarDecl, ast.For, ast.While, ast.If, ast.Assign, ast.ExprStmt,
            ast.Block} <= seen
    module = irgen.generate(prog)
    assert module.recursive == ("fib",)          # recursion stays a function
    text = str(module.module)
    assert "comp.func @twice" not in text       # non-recursive: inlined
    assert 'trip = 10' in text                  # the for loop's trip count
    assert module.exit_code == 0


@pytest.mark.parametrize("src, line, col, words", [
    ("int main() { x = ; }", 1, 18, "expected an expression"),
    ("int main() {\n  int x = 1\n}", 3, 1, "expected ';'"),
    ("int main() { if (1) return 0; }", 1, 21, "expected '{'"),
    ("int main() { $ }", 1, 14, "unexpected character '$'"),
    ("int main() {", 1, 13, "unexpected end of file"),
    ("type t = float[4]\nint main() { return 0; }", 2, 1, "unexpected 'int'"),
])
def test_syntax_errors_name_line_and_column(src, line, col, words) -> None:
    with pytest.raises(CompileError) as err:
        parser.parse(src, "bad.comp")
    assert (err.value.pos.line, err.value.pos.col) == (line, col)
    assert str(err.value).startswith(f"bad.comp:{line}:{col}: ")
    assert words in str(err.value)
    caret = err.value.excerpt.splitlines()[-1]
    assert caret.index("^") == 4 + col - 1


DECLS = "type b = float[4];\nb make(int i);\nvoid mod(b x);\nvoid use(const b x);\n"


@pytest.mark.parametrize("body, line, col, words", [
    ("  undefined(1);", 6, 3, "unknown function 'undefined'"),
    ("  b x = make(1);\n  mod(make(2));", 7, 7, "pass a variable"),
    ("  int y = 1;\n  int y = 2;", 7, 7, "already defined"),
    ("  uint8_t k = 1;", 6, 3, "only allowed as an array element"),
    ("  use(make(1), 2);", 6, 3, "takes 1 argument(s), 2 given"),
    ("  int z = make(1);", 6, 11, "returns an array"),
    ("  b x = make(1);\n  if (1 > 0 && make(2) > 1) { use(x); }", 7, 24, "no short-circuit"),
    ("  return 3;\n  use(make(1));", 6, 3, "return must be the last"),
])
def test_semantic_errors_name_line_and_column(body, line, col, words) -> None:
    src = DECLS + "int main() {\n" + body + "\n  return 0;\n}\n"
    with pytest.raises(CompileError) as err:
        irgen.generate(parser.parse(src, "sem.comp"))
    assert (err.value.pos.line, err.value.pos.col) == (line, col), str(err.value)
    assert words in str(err.value)


def test_const_parameter_cannot_be_mutated() -> None:
    src = DECLS + ("void helper(const b x) { mod(x); }\n"
                   "int main() { b y = make(1); helper(y); return 0; }\n")
    with pytest.raises(CompileError, match="is const"):
        irgen.generate(parser.parse(src, "c.comp"))


@pytest.mark.slow
def test_cli_prints_caret_and_exits_2(tmp_path) -> None:
    bad = tmp_path / "bad.comp"
    bad.write_text("int main() {\n  for (int i = 0; i < 3; i++) sink(i);\n}\n")
    out = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(bad)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert lines[0] == f"error: {bad}:2:31: unexpected 'sink' (expected '{{')"
    assert lines[1] == "      for (int i = 0; i < 3; i++) sink(i);"
    assert lines[2] == " " * 34 + "^"


# ---- bounds on what a program may be: refused with its line, never a RecursionError ----------

HEAD = "int src(int i);\nstateful void sink(int i, int v);\n"


def _wrap(body: str) -> str:
    return HEAD + ("void main() { for (int i = 0; i < 4; i++) {\n  int x = src(i);\n  "
                   + body + "\n  sink(i, x); } }\n")


@pytest.mark.parametrize("body, words", [
    ("x = " + "(" * 300 + "x" + ")" * 300 + ";", "nested too deeply"),
    ("x = " + "-" * 3000 + "x;", "nested too deeply"),
    ("x = " + "+".join(["x"] * (parser.MAX_EXPR_DEPTH + 2)) + ";", "split it into variables"),
])
def test_too_deep_is_refused_at_its_line(body, words) -> None:
    with pytest.raises(CompileError, match=words) as exc:
        irgen.generate(parser.parse(_wrap(body), "deep.comp"))
    assert exc.value.pos is not None and exc.value.pos.line == 5


def test_deepest_accepted_expression_reaches_both_back_ends(tmp_path) -> None:
    """The bound is below what the recursive passes after the parser can take."""
    from intercore.compile import pipeline
    src = tmp_path / "chain.comp"
    src.write_text(_wrap("x = " + "+".join(["x"] * parser.MAX_EXPR_DEPTH) + ";"))
    compiled = pipeline.compile_file(src, pipeline.Options(cpus=2))
    deepest = "(" * (parser.MAX_EXPR_DEPTH - 1) + "v_x + v_x)"
    assert deepest in pipeline.emit(compiled, "c")
    assert pipeline.emit(compiled, "mlir").count("arith.addi") >= parser.MAX_EXPR_DEPTH - 1


def test_inlining_depth_is_bounded() -> None:
    n = irgen.MAX_INLINE_DEPTH + 4
    funcs = "".join(f"int g{i}(int a) {{ return g{i + 1}(a) + 1; }}\n" for i in range(n))
    src = HEAD + funcs + f"int g{n}(int a) {{ return a; }}\nvoid main() {{ sink(0, g0(1)); }}\n"
    with pytest.raises(CompileError, match=f"more than {irgen.MAX_INLINE_DEPTH} deep") as exc:
        irgen.generate(parser.parse(src, "calls.comp"))
    assert exc.value.pos.line == 2 + irgen.MAX_INLINE_DEPTH


@pytest.mark.slow
@pytest.mark.parametrize("raw, message", [
    (b"int main() {\n  return 0;\0\n}\n", ":2: binary data (a NUL byte), not a text file"),
    (b"int main() {\n  int x = 1; // \xff\n}\n", ":2: not UTF-8 text (byte 0xff at column 17)"),
    (b"x" * (2 << 20), ": 2.0 MiB is larger than"),
    (_wrap("x = " + "(" * 300 + "x" + ")" * 300 + ";").encode(), ":5:85: nested too deeply"),
])
def test_cli_refuses_bad_files_in_one_line_and_writes_nothing(tmp_path, raw, message) -> None:
    bad = tmp_path / "bad.comp"
    bad.write_bytes(raw)
    out = tmp_path / "app"
    run = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(bad), "-o",
                          str(out),
                          "--draw", str(tmp_path / "graph")], capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines()[0].startswith(f"error: {bad}{message}"), run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.comp"]
