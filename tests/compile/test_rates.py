"""Rates (synchronous dataflow): the balance-equation solver on hand-computed graphs, and the
front end's refusals of rates that do not balance, are not positive, or need a trip count
the loop does not have - each at its file:line:column, before any IR."""

from __future__ import annotations

import pytest

from intercore.compile import irgen, parser, rates
from intercore.compile.errors import CompileError
from intercore.compile.rates import Flow


# (calls, flows as (src, dst, produced, consumed), the repetition vector, worked out by hand)
@pytest.mark.parametrize("calls, flows, fires", [
    (1, [], (1,)),
    (2, [(0, 1, 1, 1)], (1, 1)),
    (3, [(0, 1, 1, 4), (1, 2, 1, 1)], (4, 1, 1)),              # 4:1 decimator
    (3, [(0, 1, 1, 1), (1, 2, 2, 1)], (1, 1, 2)),              # 1:2 interpolator
    (2, [(0, 1, 2, 3)], (3, 2)),                               # 2 made, 3 taken: 6 a period
    (3, [(0, 1, 2, 3), (1, 2, 4, 6)], (9, 6, 4)),              # 18 tokens, then 24
    # a diamond whose two paths agree: 4:1 then 1:2 against 2:1 directly
    (4, [(0, 1, 1, 4), (1, 3, 2, 1), (0, 2, 1, 2), (2, 3, 1, 1)], (4, 1, 2, 2)),
    # two groups no stream joins: each busiest call fires as often as the loop's busiest
    (4, [(0, 1, 1, 4)], (4, 1, 4, 4)),
    (5, [(0, 1, 1, 4), (2, 3, 1, 3)], (12, 3, 12, 4, 12)),
])
def test_repetition_vector(calls, flows, fires) -> None:
    got = rates.repetition(calls, [Flow(*f) for f in flows])
    assert got == fires
    for f in flows:  # balanced on every flow
        assert got[f[0]] * f[2] == got[f[1]] * f[3]


def test_smallest_vector_of_a_connected_graph() -> None:
    """No common factor is left: 4 made, 6 taken is 3:2, not 6:4."""
    assert rates.repetition(2, [Flow(0, 1, 4, 6)]) == (3, 2)


def test_inconsistent_graph_is_refused() -> None:
    """0 -> 1 takes 4 per firing, 0 -> 2 takes 1, and 1 and 2 both feed 3 one for one: 3 would
    have to fire once and four times per period."""
    flows = [Flow(0, 1, 1, 4), Flow(0, 2, 1, 1), Flow(1, 3, 1, 1), Flow(2, 3, 1, 1)]
    with pytest.raises(rates.Unbalanced) as exc:
        rates.repetition(4, flows)
    f = exc.value.flow
    assert exc.value.src_fires * f.produced != exc.value.dst_fires * f.consumed


@pytest.mark.parametrize("produced, consumed", [(0, 1), (1, 0), (-2, 1), (1, -4)])
def test_rate_below_one_is_refused(produced: int, consumed: int) -> None:
    with pytest.raises(rates.BadRate):
        rates.repetition(2, [Flow(0, 1, produced, consumed)])


@pytest.mark.parametrize("trip, fires, periods", [(16, (4, 1, 1), 4), (0, (4, 1), 0),
                                                   (12, (3, 2), 4), (5, (1, 1), 5)])
def test_periods(trip: int, fires, periods: int) -> None:
    assert rates.periods(trip, fires) == periods


def test_trip_count_not_divisible_is_refused() -> None:
    with pytest.raises(rates.NotDivisible) as exc:
        rates.periods(18, (4, 1, 1))
    assert (exc.value.trip, exc.value.period) == (18, 4)


# ---- the front end
HEAD = ("type frame = int[4];\nint gen(int i);\nint decimate(const int x[4]);\n"
        "int pass(const int x);\nint both(const int a, const int b);\n"
        "stateful void show(int n, const int y);\n")


def compile_body(body: str, head: str = HEAD) -> irgen.Module:
    return irgen.generate(parser.parse(head + "int main() {\n" + body + "\n  return 0;\n}\n",
                                       "r.comp"))


def refused(body: str, head: str = HEAD) -> CompileError:
    with pytest.raises(CompileError) as exc:
        compile_body(body, head)
    return exc.value


def test_loop_lowered_to_whole_periods() -> None:
    m = compile_body("  for (int i = 0; i < 16; i++) {\n"
                     "    int x = gen(i);\n    show(i, decimate(x));\n  }")
    (loop,) = m.rates.loops
    assert (loop.trip, loop.periods) == (16, 4)
    assert [(a.label, a.line, a.fires) for a in loop.actors] == [
        ("gen", 9, 4), ("decimate", 10, 1), ("show", 10, 1)]
    (adapter,) = m.rates.adapters
    assert (adapter.name, adapter.callee, adapter.fires) == ("gen_x4", "gen", 4)
    assert adapter.args == (("counter", 1),) and adapter.result == ("token", 0)
    trips = [op.trip.value.data for op in m.main().walk() if hasattr(op, "trip")
             and op.trip is not None]
    assert trips == [4]


def test_program_without_rates_is_unchanged() -> None:
    text = HEAD.replace("const int x[4]", "const int x[1]") + (
        "int main() {\n  for (int i = 0; i < 6; i++) {\n    show(i, decimate(gen(i)));\n"
        "  }\n  return 0;\n}\n")
    prog = parser.parse(text, "r.comp")
    assert irgen.generate(prog).rates.program is prog


@pytest.mark.parametrize("body, pos, words", [
    # decimate fires once per four of pass, but both takes one of each
    ("  for (int i = 0; i < 16; i++) {\n    int x = gen(i);\n"
     "    show(i, both(decimate(x), pass(x)));\n  }", (10, 18), "rates do not balance"),
    ("  for (int i = 0; i < 18; i++) {\n    int x = gen(i);\n    show(i, decimate(x));\n  }",
     (8, 3), "make the trip count a multiple of 4"),
    ("  int x = gen(0);\n  show(0, decimate(x));", (9, 11), "call it directly in the body"),
    ("  int x = gen(0);\n  if (decimate(x) > 0) {\n    show(0, 1);\n  }", (9, 7),
     "call it directly in the body"),
    ("  for (int i = 0; i < 16; i++) {\n    int x = gen(i);\n    while (i > 99) {\n"
     "      show(i, decimate(x));\n    }\n  }", (11, 15), "call it directly in the body"),
    ("  int n = 16;\n  for (int i = 0; i < n; i++) {\n    int x = gen(i);\n"
     "    show(i, decimate(x));\n  }", (9, 3), "needs a constant trip count"),
    ("  for (int i = 0; i < 16; i++) {\n    show(i, decimate(i));\n  }", (9, 22),
     "pass a stream of this loop"),
    ("  for (int i = 0; i < 16; i++) {\n    int x = gen(i * 2);\n    show(i, decimate(x));\n"
     "  }", (9, 19), "pass the counter 'i' alone"),
])
def test_front_end_refusals(body: str, pos, words: str) -> None:
    err = refused(body)
    assert (err.pos.line, err.pos.col) == pos, str(err)
    assert words in str(err)
    assert str(err).startswith(f"r.comp:{pos[0]}:{pos[1]}: ")


@pytest.mark.parametrize("rate", ["0", "-2", "2.5"])
def test_rate_that_is_not_a_positive_integer_is_refused(rate: str) -> None:
    err = refused("  show(0, 1);", HEAD.replace("const int x[4]", f"const int x[{rate}]"))
    assert (err.pos.line, err.pos.col) == (3, 26)
    assert "a rate is a positive integer constant" in str(err)
