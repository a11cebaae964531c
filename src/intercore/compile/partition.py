"""From the fused dfg graph to what runs: tasks, channels, and the variants for fewer threads.

A process with multiplicity k becomes k tasks (replicas) that take turns by iteration of
the loop it sits in. Every process pair joined by an edge gets channels: one, or one per
replica when either side is replicated.

Blocking channels need a thread per task. When the OpenMP runtime grants fewer threads
than the fused graph has tasks (OMP_THREAD_LIMIT, a busy team), the program runs a variant
with fewer tasks instead, down to the sequential one: every task follows the same control
skeleton, so any grouping of nodes is a correct program, and the paper's fusion rules only
decide which groupings are worth building first.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cost
from .dataflow import Graph
from .dialects import dfg


@dataclass(frozen=True)
class Process:
    name: str
    nodes: frozenset[int]
    copies: int
    loop: int | None      # the loop whose iterations the copies share


@dataclass(frozen=True)
class Task:
    name: str
    process: Process
    replica: int


@dataclass(frozen=True)
class Channel:
    index: int            # first of `count` consecutive channels
    count: int
    src_node: int         # the def
    var: str
    src: Process
    dst: Process
    elem: object          # comp/builtin type of the token
    capacity: int


@dataclass
class Variant:
    tasks: list[Task]
    channels: list[Channel]

    @property
    def nchannels(self) -> int:
        return sum(c.count for c in self.channels)


def processes_from_ir(graph_module, g: Graph) -> list[Process]:
    """The fused processes of a dfg module, in graph order."""
    procs = {}
    for op in graph_module.walk():
        if isinstance(op, dfg.ProcessOp):
            nodes = frozenset(a.value.data for a in op.ops.data)
            copies = op.multiplicity.value.data
            loop = g.nodes[min(nodes)].loops[-1] if copies > 1 else None
            procs[op.sym_name.data] = Process(op.sym_name.data, nodes, copies, loop)
    order = [op.callee.root_reference.data for op in graph_module.walk()
             if isinstance(op, dfg.InstantiateOp)]
    return [procs[name] for name in order]


def build(g: Graph, procs: list[Process], capacity: int) -> Variant:
    where = {n: p for p in procs for n in p.nodes}
    tasks = [Task(f"{p.name}" + (f"_{j}" if p.copies > 1 else ""), p, j)
             for p in procs for j in range(p.copies)]
    channels: dict[tuple, Channel] = {}
    index = 0
    for e in g.edges:
        src, dst = where[e.src], where[e.dst]
        if src is dst:
            continue
        key = (e.src, e.var, src.name, dst.name)
        if key in channels:
            continue
        count = max(src.copies, dst.copies)
        channels[key] = Channel(index, count, e.src, e.var, src, dst, g.var_types[e.var],
                                capacity)
        index += count
    return Variant(tasks, list(channels.values()))


def variants(g: Graph, procs: list[Process], capacity: int, cpus: int) -> list[Variant]:
    """The fused variant, then ones with fewer tasks down to 1 (sequential)."""
    out = [build(g, procs, capacity)]
    current = list(procs)
    while sum(p.copies for p in current) > 1:
        current = _squeeze(g, current, cpus)
        out.append(build(g, current, capacity))
    return out


def _squeeze(g: Graph, procs: list[Process], cpus: int) -> list[Process]:
    """One step down: drop replication first, then merge the pair the cost model likes
    best, legal or not (neighbours first, so channels disappear)."""
    if any(p.copies > 1 for p in procs):
        p = max((p for p in procs if p.copies > 1), key=lambda p: p.copies)
        return [Process(q.name, q.nodes, 1, None) if q is p else q for q in procs]
    model = cost.Model(cpus)
    view = {p.name: _view(g, p) for p in procs}
    chans = _view_channels(g, procs)
    linked = {tuple(sorted((c.src, c.dst))) for c in chans if c.src != c.dst}
    names = [p.name for p in procs]
    pairs = sorted(linked) or [(names[0], names[1])]
    best = None
    for a, b in pairs:
        m = cost.merge(view[a], view[b], f"{a}_{b}")
        trial = {k: v for k, v in view.items() if k not in (a, b)} | {m.name: m}
        est = model.estimate(trial, cost._rename(chans, a, b, m.name))
        if best is None or (est, a, b) < best[0]:
            best = ((est, a, b), m)
    (_, a, b), m = best
    pa = next(p for p in procs if p.name == a)
    pb = next(p for p in procs if p.name == b)
    merged = Process(m.name, pa.nodes | pb.nodes, 1, None)
    return [merged if p is pa else p for p in procs if p is not pb]


def _view(g: Graph, p: Process) -> cost.Proc:
    nodes = [g.nodes[n] for n in sorted(p.nodes)]
    w = sum(g.weights[n.id].per_firing * cost.firings(n.rate) for n in nodes)
    return cost.Proc(p.name, tuple(sorted(p.nodes)), tuple(n.label for n in nodes),
                     "", nodes[0].rate, w, 1.0, any(n.stateful for n in nodes), p.copies)


def _view_channels(g: Graph, procs: list[Process]) -> list[cost.Chan]:
    where = {n: p.name for p in procs for n in p.nodes}
    return [cost.Chan(where[e.src], where[e.dst], e.var, e.conditional, e.control,
                      cost.firings(g.nodes[e.src].rate)) for e in g.edges]
