"""Fusion legality (mixed rates, conditional edges, cycles, stateful duplication) and the
cost model's choice on a hand-made weight table."""

from __future__ import annotations

import json

import pytest

from _compilekit import HEAD, compiled, groups
from intercore.compile import cost, pipeline
from intercore.compile import weights as weights_mod


def test_mixed_rates_are_not_fused(tmp_path) -> None:
    c = compiled(tmp_path, """
        blk calibrate(void);
        blk measure(int i, const blk ref);
        stateful void log_(const blk x);
        int main() {
          blk ref = calibrate();
          for (int i = 0; i < 10; i++) { log_(measure(i, ref)); }
          return 0;
        }""", max_tasks=1)
    assert ["calibrate"] in groups(c)
    why = c.plan.rejected[("p_calibrate", "p_measure_log")]
    assert why.startswith("mixed rates (p_calibrate fires 1x, p_measure_log 10x)")


def test_conditional_edge_is_not_fused(tmp_path) -> None:
    c = compiled(tmp_path, """
        blk take(int i);
        double level(const blk x);
        stateful void keep(const blk x);
        int main() {
          for (int i = 0; i < 10; i++) {
            blk x = take(i);
            if (level(x) > 0.5) { keep(x); }
          }
          return 0;
        }""", max_tasks=1)
    assert ["keep"] in groups(c)
    assert c.plan.rejected[("p_take_level", "p_keep")].startswith("conditional edge")


def test_path_that_would_close_a_cycle_is_not_fused(tmp_path) -> None:
    c = compiled(tmp_path, """
        blk a(int i);
        blk c(const blk x);
        stateful void b(const blk x, const blk y);
        int main() {
          for (int i = 0; i < 10; i++) { blk x = a(i); b(x, c(x)); }
          return 0;
        }""", no_fuse=True)
    procs, chans = c.before
    part = cost.Partition(procs, chans, cost.Model(1))
    why = cost.legality(procs["p_a"], procs["p_b"], part, None)
    assert why == "a path p_a -> p_c -> ... -> p_b would become a cycle"
    assert cost.legality(procs["p_a"], procs["p_c"], part, None) is None
    # fusing a and c first removes the other path: then everything fuses
    assert groups(compiled(tmp_path, c.module.source and (tmp_path / "p.comp").read_text()
                           .removeprefix(HEAD), max_tasks=1)) == [["a", "b", "c"]]


def test_stateful_node_is_never_duplicated(tmp_path) -> None:
    c = compiled(tmp_path, """
        blk work(int i);
        stateful void total(const blk x);
        int main() {
          for (int i = 0; i < 10; i++) { total(work(i)); }
          return 0;
        }""", split=2, max_tasks=1)
    assert [p.copies for p in c.processes] == [2, 1]
    assert c.plan.rejected[("p_work", "p_total")] == \
        "would duplicate stateful p_total (2 instances)"


def test_cost_model_balances_a_weighted_chain(tmp_path) -> None:
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({"format": "intercore.heatmap/1", "regions": [
        {"region": r, "delta": 1.0, "weight": w}
        for r, w in (("a", 1), ("b", 1), ("c", 6), ("d", 1))]}))
    body = """
        blk a(int i); blk b(const blk x); blk c(const blk x); stateful void d(const blk x);
        int main() { for (int i = 0; i < 100; i++) { d(c(b(a(i)))); } return 0; }"""
    # 2 CPUs: c alone is the bottleneck, so a+b share a task and d keeps its own:
    # [a b][c][d] = 6 x 1.125 beats [a b][c d] = 7, [a b c][d] = 8 and no fusion = 7.5.
    c = compiled(tmp_path, body, cpus=2, weights=weights)
    assert c.weight_source == "weights"
    assert groups(c) == [["a", "b"], ["c"], ["d"]]
    # --max-tasks forces the rest; --budget refuses a task heavier than it.
    assert groups(compiled(tmp_path, body, cpus=2, weights=weights, max_tasks=2)) == \
        [["a", "b"], ["c", "d"]]
    tight = compiled(tmp_path, body, cpus=2, weights=weights, max_tasks=1, budget=300)
    assert ["c"] in groups(tight)
    assert "over budget" in tight.plan.rejected[("p_a_b", "p_c")]


def test_interference_matrix_pulls_the_pair_together(tmp_path) -> None:
    """Two nodes that slow each other down 3x are fused although CPUs are free."""
    from intercore.measure.periodic.matrix import InterferenceMatrix
    body = """
        blk a(int i); blk b(const blk x); stateful void d(const blk x);
        int main() { for (int i = 0; i < 100; i++) { d(b(a(i))); } return 0; }"""
    assert len(compiled(tmp_path, body, cpus=4).processes) == 3
    m = InterferenceMatrix(tasks=("a", "b", "d"), statistic="max",
                           directed=((None, 3.0, 1.0), (3.0, None, 1.0), (1.0, 1.0, None)),
                           n=((0, 5, 5), (5, 0, 5), (5, 5, 0)))
    path = tmp_path / "m.json"
    m.save_json(path)
    assert groups(compiled(tmp_path, body, cpus=4, matrix=path)) == [["a", "b"], ["d"]]


def test_pass_registry_names_match() -> None:
    from intercore.compile.passes import get_all_passes
    for name, factory in get_all_passes().items():
        assert factory().name == name


def test_learn_stages_heatmap_drives_fusion(tmp_path) -> None:
    """The heatmap as the learning stage writes it (learn.heatmap.build, its extra keys
    included): regions named by marker, matched to callees through their source lines."""
    import numpy as np
    from intercore.learn import heatmap
    from intercore.learn.features import RegionFeatures, Token
    app = tmp_path / "app.c"
    app.write_text("".join(f"void {f}(void)\n{{\n  work();\n}}\n" for f in "abcd"))
    lines = weights_mod.function_lines(app)

    def region(i: int, name: str, fn: str, insns: int) -> RegionFeatures:
        first, last = lines[fn]
        tokens = tuple(Token(pc=0x1000 * i + k, kind="add:rr", execs=insns, loads=1, stores=0,
                             bytes=8, regular=1, served=(1, 0, 0, 0), stride=(0,), reuse=(0,),
                             source=f"{app}:{line}", function=fn)
                       for k, line in enumerate((first + 1, last - 1)))
        return RegionFeatures(i, name, entries=10, insns=insns * 10, loads=10, stores=0,
                              bytes=80, footprint_lines=1, served=(10, 0, 0, 0), reuse=(0,),
                              tokens=tokens)

    regions = [region(i, f"region {i}", fn, w)
               for i, (fn, w) in enumerate((("a", 100), ("b", 100), ("c", 600), ("d", 100)))]
    body = """
        blk a(int i); blk b(const blk x); blk c(const blk x); stateful void d(const blk x);
        int main() { for (int i = 0; i < 100; i++) { d(c(b(a(i)))); } return 0; }"""

    def fused(delta_c: float) -> pipeline.Compiled:
        med = np.array([1.0, 1.0, delta_c, 1.0])
        doc = heatmap.build([str(app)], regions, med, med + 0.2, np.ones((4, 3)), {"name": "t"})
        heatmap.write_json(doc, tmp_path / "heatmap.json")
        return compiled(tmp_path, body, cpus=2, heatmap=tmp_path / "heatmap.json",
                        sources=(app,))

    c = fused(1.0)
    assert c.weight_source == "heatmap"
    by_label = {c.graph.nodes[n].label: w for n, w in c.graph.weights.items()}
    assert by_label["c"].source == "heatmap: region 2"
    assert by_label["c"].per_firing == pytest.approx(6 * by_label["a"].per_firing)
    # the same balance as the hand-made table above: c alone, a+b share a task
    assert groups(c) == [["a", "b"], ["c"], ["d"]]
    # c predicted 1.4x slower beside other tasks: the pipeline no longer pays, one task wins
    c = fused(1.4)
    assert {c.graph.nodes[n].label: w.delta for n, w in c.graph.weights.items()}["c"] == 1.4
    assert groups(c) == [["a", "b", "c", "d"]]
