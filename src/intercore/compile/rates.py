"""Synchronous-dataflow balance equations: how often each call of one loop body fires.

A stream joins the call that makes it (`produced` tokens per firing) to each call that
takes it (`consumed` per firing). Over one period of the loop every token made is taken,
so the firing counts q satisfy q_src * produced = q_dst * consumed on every flow; the
repetition vector is the smallest positive integer solution. Calls that no stream joins
form groups with vectors of their own; each group is scaled so that its busiest call fires
as often as the busiest call of the loop, which fires once per iteration of the loop as
written (docs/compile.md, "Rates"). Pure functions: the front end maps the errors to
positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm


@dataclass(frozen=True)
class Flow:
    src: int          # index of the producing call
    dst: int          # index of the consuming call
    produced: int     # tokens per firing of src
    consumed: int     # tokens per firing of dst


class BadRate(ValueError):
    """A rate below 1: a call that makes or takes no token has no firing count."""

    def __init__(self, flow: Flow):
        super().__init__(f"rates must be positive: {flow}")
        self.flow = flow


class Unbalanced(ValueError):
    """No firing counts balance `flow`: the other flows already fix the ratio
    q_src : q_dst at `src_fires` : `dst_fires`."""

    def __init__(self, flow: Flow, src_fires: int, dst_fires: int):
        super().__init__(f"{flow} does not balance at {src_fires}:{dst_fires}")
        self.flow, self.src_fires, self.dst_fires = flow, src_fires, dst_fires


class NotDivisible(ValueError):
    def __init__(self, trip: int, period: int):
        super().__init__(f"{trip} iterations is no whole number of periods of {period}")
        self.trip, self.period = trip, period


def repetition(calls: int, flows: list[Flow] | tuple[Flow, ...]) -> tuple[int, ...]:
    """The firing count of each of `calls` calls per period; BadRate or Unbalanced."""
    for f in flows:
        if f.produced < 1 or f.consumed < 1:
            raise BadRate(f)
    ratio: dict[int, Fraction] = {}   # firings relative to the first call of its group
    touching: list[list[Flow]] = [[] for _ in range(calls)]
    for f in flows:
        touching[f.src].append(f)
        touching[f.dst].append(f)
    groups = []
    for start in range(calls):
        if start in ratio:
            continue
        ratio[start], group, todo = Fraction(1), [start], [start]
        while todo:
            u = todo.pop()
            for f in touching[u]:
                v, q = ((f.dst, ratio[u] * Fraction(f.produced, f.consumed)) if f.src == u
                        else (f.src, ratio[u] * Fraction(f.consumed, f.produced)))
                if v not in ratio:
                    ratio[v] = q
                    group.append(v)
                    todo.append(v)
        groups.append(group)
    fires = [0] * calls
    for group in groups:   # smallest integers: clear the denominators, divide the gcd
        scale = lcm(*(ratio[v].denominator for v in group))
        ints = {v: int(ratio[v] * scale) for v in group}
        common = gcd(*ints.values())
        for v, n in ints.items():
            fires[v] = n // common
    for f in flows:        # a flow off the spanning tree may contradict it
        if fires[f.src] * f.produced != fires[f.dst] * f.consumed:
            raise Unbalanced(f, fires[f.src], fires[f.dst])
    period = lcm(*(max(fires[v] for v in group) for group in groups)) if groups else 1
    for group in groups:
        busiest = max(fires[v] for v in group)
        for v in group:
            fires[v] *= period // busiest
    return tuple(fires)


def periods(trip: int, fires: tuple[int, ...]) -> int:
    """How many periods a loop of `trip` iterations runs: the busiest call fires once per
    iteration, so `trip` must be a multiple of its firing count (NotDivisible)."""
    period = max(fires, default=1)
    if trip % period:
        raise NotDivisible(trip, period)
    return trip // period
