"""Weights said plainly: a @weight on some functions only is relative to the default call
(weight 1) and changes the plan; what cannot mean anything is refused at its line; and the
weights used, their unit and the annotations a file overrode are printed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _compilekit import HEAD, compiled, groups

from intercore.compile import parser
from intercore.compile.errors import CompileError

CHAIN = """
    blk a(int i);
    {b}blk b(const blk x);
    blk c(const blk x);
    stateful void d(const blk x);
    int main() {{ for (int i = 0; i < 100; i++) {{ d(c(b(a(i)))); }} return 0; }}"""


def per_firing(c) -> dict[str, tuple[float, str]]:
    return {c.graph.nodes[n].label: (w.per_firing, w.source) for n, w in c.graph.weights.items()}


def test_a_weight_on_one_function_is_relative_to_the_default(tmp_path) -> None:
    plain = compiled(tmp_path, CHAIN.format(b=""), cpus=2)
    heavy = compiled(tmp_path, CHAIN.format(b="@weight(4) "), cpus=2)
    assert plain.weight_source == "default" and heavy.weight_source == "@weight"
    assert per_firing(heavy) == {"a": (1.0, "default"), "b": (4.0, "@weight(4)"),
                                 "c": (1.0, "default"), "d": (1.0, "default")}
    # four equal stages pair up; with b four times the others, b keeps a CPU to itself
    assert groups(plain) == [["a", "b"], ["c", "d"]]
    assert ["b"] in groups(heavy)
    assert heavy.plan.estimate > plain.plan.estimate


def test_weights_on_every_function_are_taken_as_written(tmp_path) -> None:
    body = CHAIN.format(b="@weight(3) ")
    for decl in ("blk a", "blk c", "stateful"):
        body = body.replace(f"    {decl}", f"    @weight(3) {decl}")
    assert {w for w, _ in per_firing(compiled(tmp_path, body, cpus=2)).values()} == {3.0}


@pytest.mark.slow
@pytest.mark.parametrize("decl, col, words", [
    ("@weight(2) @weight(3) int f(int i);", 12, "@weight given twice: one weight per function"),
    ("@weight(0) int f(int i);", 1, "@weight must be a positive finite number"),
    ("stateful @weight(1e999) int f(int i);", 10, "@weight must be a positive finite number"),
])
def test_a_weight_that_cannot_mean_anything_is_refused_at_its_column(decl, col, words,
                                                                     tmp_path) -> None:
    from intercore.compile import irgen
    src = decl + "\nstateful void s(int v);\nint main() { s(f(1)); return 0; }\n"
    with pytest.raises(CompileError) as err:
        irgen.generate(parser.parse(src, "w.comp"))
    assert str(err.value).startswith(f"w.comp:1:{col}: {words}"), str(err.value)
    bad = tmp_path / "w.comp"
    bad.write_text(src)
    run = subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.startswith(f"error: {bad}:1:{col}: {words}"), run.stderr


def _cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    src = tmp_path / "chain.comp"
    src.write_text(HEAD + CHAIN.format(b="@weight(4) ").replace("    blk c",
                                                                "    @weight(2) blk c"))
    return subprocess.run([sys.executable, "-m", "intercore", "compile", "build", str(src),
                           "--cpus", "2",
                           *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_explain_shows_the_weights_used_and_their_unit(tmp_path) -> None:
    run = _cli(tmp_path, "--explain")
    assert run.returncode == 0, run.stderr
    out = run.stdout.splitlines()
    assert out[1] == ("weights: @weight(N) is N firings of a call without @weight, which "
                      "weighs 1 (the default); an array copy weighs 0.05")
    nodes = [line.strip() for line in out if line.startswith("  line ")]
    assert [n.split(" rate")[0] + n[n.index(", weight/firing"):] for n in nodes] == [
        "line 7: a, weight/firing 1, delta 1 (default) [replicable]",
        "line 7: b, weight/firing 4, delta 1 (@weight(4)) [replicable]",
        "line 7: c, weight/firing 2, delta 1 (@weight(2)) [replicable]",
        "line 7: d, weight/firing 1, delta 1 (default) [stateful]"]


@pytest.mark.slow
def test_weights_a_file_overrides_are_said_even_unasked(tmp_path) -> None:
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({"format": "intercore.heatmap/1", "regions": [
        {"region": "a", "delta": 1.0, "weight": 5.0}]}))
    run = _cli(tmp_path, "--weights", str(weights))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[1] == (
        "@weight on b, c not used: --weights gives the weights (one source for the whole "
        "graph: their units differ)")
    doc = json.loads(_cli(tmp_path, "--weights", str(weights), "--json").stdout)["explain"]
    assert doc["weights_from"] == "weights"
    assert doc["weights"]["unused_at_weight"] == ["b", "c"]
    sources = {n["label"]: (n["weight_per_firing"], n["weight_source"]) for n in doc["nodes"]}
    assert sources == {"a": (1.0, "weights: a"), "b": (1.0, "not covered: the covered mean"),
                       "c": (1.0, "not covered: the covered mean"),
                       "d": (1.0, "not covered: the covered mean")}


RATED = """
    int32_t a(int i);
    {a}int32_t b(const int32_t x[2]);
    stateful void d(const int32_t y);
    int main() {{
      for (int i = 0; i < 100; i++) {{ int32_t x = a(i); int32_t y = b(x); d(y); }}
      return 0;
    }}"""


def test_a_rate_weighs_its_firings_without_claiming_an_annotation(tmp_path) -> None:
    """b takes two of a's tokens, so a fires twice per period, through an adapter a_x2: its
    weight is two firings', said as such, and a program with no @weight stays "default"
    (it was reported as weights from @weight)."""
    plain = compiled(tmp_path, RATED.format(a=""), cpus=2)
    assert plain.weight_source == "default"
    assert per_firing(plain) == {"a_x2": (2.0, "2 firings of a per call, each 1 (default)"),
                                 "b": (1.0, "default"), "d": (1.0, "default")}
    heavy = compiled(tmp_path, RATED.format(a="").replace("    int32_t a(", "    @weight(3) "
                                                          "int32_t a("), cpus=2)
    assert heavy.weight_source == "@weight" and heavy.weight_unused == ()
    assert per_firing(heavy)["a_x2"] == (6.0, "2 firings of a per call, each @weight(3)")


def test_a_heatmap_weighs_an_adapter_by_the_users_function(tmp_path) -> None:
    """A heatmap knows the user's functions, not the adapters the rates made: a's region
    weighs a_x2, twice, since it fires a twice per call."""
    heat = tmp_path / "w.json"
    heat.write_text(json.dumps({"format": "intercore.heatmap/1", "regions": [
        {"region": "a", "delta": 1.3, "weight": 5.0}, {"region": "b", "delta": 1.0,
                                                      "weight": 5.0}]}))
    c = compiled(tmp_path, RATED.format(a=""), cpus=2, weights=heat)
    w = per_firing(c)
    assert c.weight_source == "weights"
    assert w["a_x2"][1] == "weights: a" and w["b"][1] == "weights: b"
    assert w["a_x2"][0] == pytest.approx(2 * w["b"][0])
    assert c.graph.weights[next(n for n, node in c.graph.nodes.items()
                                if node.label == "a_x2")].delta == 1.3
