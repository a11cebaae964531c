"""From the fused dfg graph to what runs: tasks, channels, and the variants for fewer threads.

A process with multiplicity k becomes k tasks (replicas) that take turns by iteration of
the loop it sits in. Every process pair joined by an edge gets channels: one, or one per
replica when either side is replicated.

Blocking channels need a thread per task. When the OpenMP runtime grants fewer threads
than the fused graph has tasks (OMP_THREAD_LIMIT, a busy team), the program runs a variant
with fewer tasks instead, down to the sequential one: every task follows the same control
skeleton, so any grouping of nodes is a correct program, and the paper's fusion rules only
decide which groupings are worth building first.

The same property gives the static schedule (`--schedule static`): when the fused graph has
more tasks than CPUs, the cost model partitions them over the CPUs (`static`), and each
partition is one thread running its nodes in program order (a topological order of each
iteration, every node once: a single-appearance schedule), its internal edges plain local
variables, so the OS has nothing to switch between inside a partition.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cost
from .dataflow import Graph
from .dialects import dfg
from .passes import fused_name


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


SCHEDULES = ("threads", "static")


def choose_schedule(asked: str | None, g: Graph, procs: list[Process], cpus: int
                    ) -> tuple[str, str, list[Process]]:
    """threads or static, why, and the processes the schedule runs (for static, the
    partition over the CPUs). Static is not simply taken whenever the tasks outnumber the
    CPUs: a static split is only as fast as its heaviest part, and a chain with one heavy
    stage cannot be split evenly (the signal pipeline's fir is 42 % of its work: 240 ms
    static against 143 ms as three threads the OS balances). So the cost model estimates
    both, and the lower wins; a tie goes to static, which switches least."""
    tasks = sum(p.copies for p in procs)
    if asked is not None:
        return asked, f"--schedule {asked}", \
            (static_processes(g, procs, cpus) if asked == "static" else procs)
    if tasks <= cpus:
        return "threads", f"{tasks} task(s) <= {cpus} CPU(s)", procs
    parts = static_processes(g, procs, cpus)
    threads, split = estimate(g, procs, cpus), estimate(g, parts, cpus)
    if split <= threads:
        return "static", (f"{tasks} tasks > {cpus} CPU(s); estimate {split:.3g} split over "
                          f"the CPUs against {threads:.3g} as a thread per task"), parts
    return "threads", (f"{tasks} tasks > {cpus} CPU(s), but a thread per task is estimated "
                       f"faster ({threads:.3g}) than any split over the CPUs ({split:.3g}): "
                       "the OS balances what a static split cannot"), procs


def estimate(g: Graph, procs: list[Process], cpus: int) -> float:
    """The cost model's estimate of `procs` run one thread per instance on `cpus` CPUs."""
    view = {p.name: _view(g, p) for p in procs}
    return cost.Partition(view, _view_channels(g, procs), cost.Model(cpus)).estimate


def static_processes(g: Graph, procs: list[Process], cpus: int) -> list[Process]:
    """The cost model's partition of the tasks over the CPUs. Any two neighbours may share a
    partition (the skeleton makes every grouping correct), and the planner's beam search
    balances them: merging one pair at a time, as `_squeeze` does, leaves a six-stage chain
    cut 4 + 2 on two CPUs."""
    current = list(procs)
    while sum(p.copies for p in current) > cpus and any(p.copies > 1 for p in current):
        current = _squeeze(g, current, cpus)   # replication goes first
    found = cost.plan({p.name: _view(g, p) for p in current}, _view_channels(g, current),
                      cost.Model(cpus), max_tasks=cpus, legal=_neighbours, floor=cpus,
                      name=fused_name)
    by_name = {p.name: p for p in current}
    for d in found.merges:
        a, b = by_name.pop(d.a), by_name.pop(d.b)
        by_name[d.merged] = Process(d.merged, a.nodes | b.nodes, 1, None)
    current = sorted(by_name.values(), key=lambda p: min(p.nodes))
    while sum(p.copies for p in current) > cpus:   # parts no channel joins
        current = _squeeze(g, current, cpus)
    return current


def _neighbours(a: cost.Proc, b: cost.Proc, part, budget) -> str | None:
    return None   # `plan` only offers pairs a channel joins


def order(g: Graph, p: Process) -> list[int]:
    """The nodes of `p` in the order its thread fires them in one iteration: program order,
    which every task's control skeleton follows."""
    return [op.id.value.data for op in g.module.main().walk()
            if getattr(op, "id", None) is not None and op.id.value.data in p.nodes]


def _squeeze(g: Graph, procs: list[Process], cpus: int) -> list[Process]:
    """One step down: drop replication first, then merge the pair the cost model likes
    best, legal or not (neighbours first, so channels disappear)."""
    if any(p.copies > 1 for p in procs):
        p = max((p for p in procs if p.copies > 1), key=lambda p: p.copies)
        return [Process(q.name, q.nodes, 1, None) if q is p else q for q in procs]
    view = {p.name: _view(g, p) for p in procs}
    part = cost.Partition(view, _view_channels(g, procs), cost.Model(cpus))
    names = [p.name for p in procs]
    pairs = part.pairs() or [(names[0], names[1])]
    _, a, b = min((part.estimate_merged(a, b)[0], a, b) for a, b in pairs)
    pa = next(p for p in procs if p.name == a)
    pb = next(p for p in procs if p.name == b)
    merged = Process(f"{a}_{b}", pa.nodes | pb.nodes, 1, None)
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
