"""Reaching definitions over nested loops: the same graph as the plain fixed point, in a
number of passes that grows with the square of the nesting depth, not 2^depth."""

from __future__ import annotations

import pytest

import itertools

from hypothesis import given, settings, strategies as st

from intercore.compile import dataflow, irgen, parser

HEAD = "int src(int i);\nstateful void sink(int i, int v);\nint twice(int v);\n"


def nest(depth: int) -> str:
    loops = "".join(f"for (int i{k} = 0; i{k} < 2; i{k}++) {{\n" for k in range(depth))
    return HEAD + "void main() {\n" + loops + "sink(0, src(i0));\n" + "}\n" * depth + "}\n"


def analyse(text: str, *, remember_loops: bool = True) -> dataflow.Graph:
    module = irgen.generate(parser.parse(text, "t.comp"))
    if remember_loops:
        return dataflow.analyse(module)
    forgetful = type("Forgetful", (dict,), {"__setitem__": lambda self, k, v: None})
    original = dataflow._Walk.__init__

    def init(self, m):
        original(self, m)
        self.loop_heads = forgetful()
    dataflow._Walk.__init__ = init
    try:
        return dataflow.analyse(module)
    finally:
        dataflow._Walk.__init__ = original


def test_a_nest_of_loops_takes_polynomially_many_passes(monkeypatch):
    calls = itertools.count()
    run_reach = dataflow._Walk.run_reach
    monkeypatch.setattr(dataflow._Walk, "run_reach",
                        lambda self, block, state: (next(calls), run_reach(self, block, state))[1])
    depth = 12
    graph = analyse(nest(depth))
    passes = next(calls)
    assert len(graph.nodes) == 2  # src and sink, inside all twelve loops
    assert passes <= 2 * depth * depth, passes  # the plain fixed point took 2^(depth+2) - 3


def statements(depth: int, counter: itertools.count) -> st.SearchStrategy[str]:
    simple = st.sampled_from(["sink(i, x);", "x = src(i);", "x = twice(x);", "y = x + 1;",
                              "x = y;"])
    if depth == 0:
        return simple

    def loop(body: list[str]) -> str:
        k = next(counter)
        return f"for (int j{k} = 0; j{k} < 3; j{k}++) {{ {' '.join(body)} }}"

    def branch(parts: tuple[list[str], list[str]]) -> str:
        return f"if (x > y) {{ {' '.join(parts[0])} }} else {{ {' '.join(parts[1])} }}"

    inner = st.lists(statements(depth - 1, counter), min_size=1, max_size=3)
    return st.one_of(simple, inner.map(loop), st.tuples(inner, inner).map(branch))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(statements(3, itertools.count()), min_size=1, max_size=4))
def test_remembered_loop_heads_give_the_plain_fixed_points_graph(body):
    text = HEAD + ("void main() { int y = 0; for (int i = 0; i < 4; i++) {\n int x = src(i);\n"
                   + "\n".join(body) + "\n sink(i, y); } }\n")
    fast, plain = analyse(text), analyse(text, remember_loops=False)
    assert sorted(e.key + (e.control, e.conditional) for e in fast.edges) == \
        sorted(e.key + (e.control, e.conditional) for e in plain.edges)
    assert (fast.pulls, fast.control_ops, fast.constructs) == \
        (plain.pulls, plain.control_ops, plain.constructs)
