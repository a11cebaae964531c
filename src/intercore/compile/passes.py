"""The compiler's passes, xDSL style: frozen dataclasses with a `name` and typed options,
built from small rewrite patterns. `get_all_passes()` is the registry.

- `comp-to-dfg` adds to a comp module one `dfg.process` per node and a `dfg.graph @main` with
  a channel per def-use edge (dataflow.py says what the graph means).
- `dfg-fuse` asks the cost model (cost.py) which processes to fuse and applies each decision
  with `FuseInstances`; `EraseDeadChannel` then drops channels nobody uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (ArrayAttr, DictionaryAttr, FloatAttr, IntegerAttr,
                                   ModuleOp, StringAttr, UnitAttr, f64)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (PatternRewriter, PatternRewriteWalker, RewritePattern,
                                   op_type_rewrite_pattern)
from xdsl.rewriter import Rewriter

from . import cost
from .dataflow import Graph
from .dialects import dfg


def _name(label: str, taken: set[str]) -> str:
    """A process symbol: p_<label>, apart from the functions' symbols."""
    base = "p_" + ("".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "node")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


@dataclass(frozen=True)
class CompToDfg(ModulePass):
    """comp -> dfg: one process per node, one channel per (def, consumer) edge."""

    name: ClassVar[str] = "comp-to-dfg"
    capacity: int = 8
    split: int = 1
    graph: Graph | None = field(default=None, compare=False)
    matrix: tuple[tuple[str, str, float], ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        g = self.graph
        taken: set[str] = set()
        names = {n: _name(node.label, taken) for n, node in sorted(g.nodes.items())}
        replicated = _replicated(g, self.split)
        procs = []
        for n, node in sorted(g.nodes.items()):
            w = g.weights[n]
            props = {"sym_name": StringAttr(names[n]),
                     "ops": ArrayAttr([IntegerAttr(n, 64)]),
                     "callees": ArrayAttr([StringAttr(node.label)]),
                     "loop": StringAttr("/".join(f"L{i}" for i in node.loops)),
                     "rate": StringAttr(node.rate),
                     "weight": FloatAttr(w.per_firing * cost.firings(node.rate), f64),
                     "sensitivity": FloatAttr(w.delta, f64),
                     "multiplicity": IntegerAttr(self.split if n in replicated else 1, 64)}
            if node.stateful:
                props["stateful"] = UnitAttr()
            if node.replicable:
                props["replicable"] = UnitAttr()
            procs.append(dfg.ProcessOp(properties=props))
        body = Block()
        ports: dict[int, tuple[list, list]] = {n: ([], []) for n in g.nodes}
        for e in g.edges:
            t = g.var_types[e.var]
            props = {"capacity": IntegerAttr(self.capacity, 64), "var": StringAttr(e.var),
                     "def": IntegerAttr(e.src, 64)}
            if e.conditional:
                props["conditional"] = UnitAttr()
            if e.control:
                props["control"] = UnitAttr()
            ch = dfg.ChannelOp(properties=props,
                               result_types=[dfg.InputType(t), dfg.OutputType(t)])
            body.add_op(ch)
            ports[e.src][1].append(ch.in_port)
            ports[e.dst][0].append(ch.out_port)
        for n in sorted(g.nodes):
            body.add_op(dfg.InstantiateOp(names[n], *ports[n]))
        graph_props = {"sym_name": StringAttr("graph")}
        graph = dfg.GraphOp(properties=graph_props, regions=[Region(body)])
        if self.matrix:
            graph.attributes["interference"] = DictionaryAttr(
                {f"{a}|{b}": FloatAttr(v, f64) for a, b, v in self.matrix})
        op.body.block.add_ops(procs + [graph])


def _replicated(g: Graph, split: int) -> set[int]:
    """Replicable nodes that get `split` instances. Replicas take turns by iteration of
    their innermost loop, so a replicated producer and consumer must share that loop."""
    if split <= 1:
        return set()
    chosen = {n for n, node in g.nodes.items() if node.replicable}
    for e in g.edges:
        if e.src in chosen and e.dst in chosen and \
                g.nodes[e.src].loops[-1] != g.nodes[e.dst].loops[-1]:
            chosen.discard(e.dst)
    return chosen


def view(module: ModuleOp) -> tuple[dict[str, cost.Proc], list[cost.Chan], dict]:
    """The cost model's picture of a dfg module: processes, channels, interference."""
    procs, port_owner = {}, {}
    graph = next(o for o in module.walk() if isinstance(o, dfg.GraphOp))
    for op in module.walk():
        if isinstance(op, dfg.ProcessOp):
            procs[op.sym_name.data] = cost.Proc(
                op.sym_name.data, tuple(a.value.data for a in op.ops.data),
                tuple(s.data for s in op.callees.data), op.loop.data, op.rate.data,
                op.weight.value.data, op.sensitivity.value.data, op.stateful is not None,
                op.multiplicity.value.data)
    for inst in graph.body.block.ops:
        if isinstance(inst, dfg.InstantiateOp):
            for v in list(inst.inputs) + list(inst.outputs):
                port_owner[v] = inst.callee.root_reference.data
    chans = []
    for ch in graph.body.block.ops:
        if isinstance(ch, dfg.ChannelOp):
            src, dst = port_owner[ch.in_port], port_owner[ch.out_port]
            rate = procs[src].rate
            chans.append(cost.Chan(src, dst, ch.var.data, ch.conditional is not None,
                                   ch.control is not None, cost.firings(rate)))
    matrix = {}
    if "interference" in graph.attributes:
        for key, v in graph.attributes["interference"].data.items():
            a, b = key.split("|", 1)
            matrix[(a, b)] = v.value.data
    return procs, chans, matrix


class FuseInstances:
    """Fuse the instances of two processes into one; the channels between them become
    internal and are erased. The ops are found through tables made once per module: a
    rewrite walker per fusion walked the whole module each time, quadratic in the graph
    (17 s of a 200-node compile, issue 23)."""

    def __init__(self, module: ModuleOp):
        self.process = {o.sym_name.data: o for o in module.walk()
                        if isinstance(o, dfg.ProcessOp)}
        graph = next(o for o in module.walk() if isinstance(o, dfg.GraphOp))
        self.instance = {o.callee.root_reference.data: o for o in graph.body.block.ops
                         if isinstance(o, dfg.InstantiateOp)}

    def fuse(self, a: str, b: str, merged: str) -> None:
        op, other = self.instance.pop(a), self.instance.pop(b)
        pa, pb = self.process.pop(a), self.process.pop(b)
        mine_out = set(op.outputs) | set(other.outputs)
        internal = list(dict.fromkeys(
            v.owner for v in list(op.inputs) + list(other.inputs)
            if isinstance(v.owner, dfg.ChannelOp) and v.owner.in_port in mine_out))
        dropped = {v for ch in internal for v in (ch.in_port, ch.out_port)}
        inputs = [v for v in list(op.inputs) + list(other.inputs) if v not in dropped]
        outputs = [v for v in list(op.outputs) + list(other.outputs) if v not in dropped]
        fused = cost.merge(_proc_view(pa), _proc_view(pb), merged)
        props = dict(pa.properties)
        props.update({"sym_name": StringAttr(merged),
                      "ops": ArrayAttr(list(pa.ops.data) + list(pb.ops.data)),
                      "callees": ArrayAttr(list(pa.callees.data) + list(pb.callees.data)),
                      "weight": FloatAttr(fused.weight, f64),
                      "sensitivity": FloatAttr(fused.delta, f64)})
        props.pop("replicable", None)
        if pa.replicable is not None and pb.replicable is not None:
            props["replicable"] = UnitAttr()
        if fused.stateful:
            props["stateful"] = UnitAttr()
        self.process[merged] = dfg.ProcessOp(properties=props)
        Rewriter.replace_op(pa, self.process[merged])
        Rewriter.erase_op(pb)
        self.instance[merged] = dfg.InstantiateOp(merged, inputs, outputs)
        Rewriter.replace_op(op, self.instance[merged])
        Rewriter.erase_op(other)
        for ch in internal:
            Rewriter.erase_op(ch)


class EraseDeadChannel(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: dfg.ChannelOp, rewriter: PatternRewriter) -> None:
        if not op.in_port.uses and not op.out_port.uses:
            rewriter.erase(op)


def _proc_view(op: dfg.ProcessOp) -> cost.Proc:
    return cost.Proc(op.sym_name.data, (), (), op.loop.data, op.rate.data,
                     op.weight.value.data, op.sensitivity.value.data,
                     op.stateful is not None, op.multiplicity.value.data)


def fused_name(a: str, b: str) -> str:
    """p_x + p_y -> p_x_y: unique, because the two never share a node."""
    return f"{a}_{b[2:]}"


@dataclass(frozen=True)
class DfgFuse(ModulePass):
    """Fuse processes as the cost model decides (cost.py); the decisions are kept in
    `plan` for --explain."""

    name: ClassVar[str] = "dfg-fuse"
    cpus: int = 1
    max_tasks: int | None = None
    budget: float | None = None
    no_fuse: bool = False
    plan: cost.Plan = field(default_factory=cost.Plan, compare=False)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        procs, chans, matrix = view(op)
        result = cost.plan(procs, chans, cost.Model(self.cpus, matrix),
                           max_tasks=self.max_tasks, budget=self.budget, no_fuse=self.no_fuse,
                           name=fused_name)
        fuser = FuseInstances(op)
        for d in result.merges:
            fuser.fuse(d.a, d.b, d.merged)
        PatternRewriteWalker(EraseDeadChannel()).rewrite_module(op)
        self.plan.merges[:] = result.merges
        self.plan.rejected.clear()
        self.plan.rejected.update(result.rejected)
        self.plan.estimate = result.estimate
        self.plan.start_estimate = result.start_estimate
        self.plan.stop = result.stop


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {"comp-to-dfg": lambda: CompToDfg, "dfg-fuse": lambda: DfgFuse}
