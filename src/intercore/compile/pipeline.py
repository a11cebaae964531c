"""The compiler driver: source -> comp -> dfg -> fused dfg -> variants -> C or MLIR -> binary.

Each stage's IR can be printed (`intercore compile build --emit STAGE`); `Compiled` keeps them all.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, llvm, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from ..base import outputs
from ..base.errors import InputError
from . import cost, dataflow, irgen, parser, partition, weights
from .dialects.comp import Comp
from .dialects.dfg import Dfg
from .dialects import dfg
from .passes import CompToDfg, DfgFuse

STAGES = ("comp", "dfg", "fused", "c", "mlir")


@dataclass(frozen=True)
class Options:
    cpus: int = field(default_factory=lambda: len(os.sched_getaffinity(0)))
    max_tasks: int | None = None
    budget: float | None = None
    no_fuse: bool = False
    split: int = 1
    schedule: str | None = None   # threads, static, or None: the cost model's choice
    capacity: int = 8
    heatmap: Path | None = None
    weights: Path | None = None
    matrix: Path | None = None
    sources: tuple[Path, ...] = ()

    def check(self) -> None:
        for ok, opt, msg in ((self.cpus >= 1, "--cpus", "must be >= 1"),
                             (self.max_tasks is None or self.max_tasks >= 1, "--max-tasks",
                              "must be >= 1"),
                             (self.budget is None or self.budget > 0, "--budget",
                              "must be > 0"),
                             (1 <= self.split <= 64, "--split", "must be 1..64"),
                             (self.schedule in (None, *partition.SCHEDULES), "--schedule",
                              f"choose {' or '.join(partition.SCHEDULES)}"),
                             (1 <= self.capacity <= 1 << 20, "--capacity",
                              "must be 1..1048576")):
            if not ok:
                raise InputError(msg, field=opt)


@dataclass
class Compiled:
    module: irgen.Module
    graph: dataflow.Graph
    stages: dict[str, str]
    plan: cost.Plan
    weight_source: str
    weight_unused: tuple[str, ...]   # functions whose @weight a --heatmap/--weights overrode
    processes: list[partition.Process]
    variants: list[partition.Variant]   # the first is what runs when the threads are granted
    schedule: str                       # threads or static (partition.SCHEDULES)
    schedule_why: str
    options: Options
    before: tuple[dict, list]      # cost-model view before fusion (for drawings)
    after: tuple[dict, list]


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, arith.Arith, func.Func, scf.Scf, llvm.LLVM, Comp, Dfg):
        ctx.load_dialect(d)
    return ctx


def text(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def dfg_text(module: ModuleOp) -> str:
    ops = [op.clone() for op in module.ops if isinstance(op, (dfg.ProcessOp, dfg.GraphOp))]
    return text(ModuleOp(ops))


def _matrix(path: Path | None) -> tuple[tuple[str, str, float], ...]:
    if path is None:
        return ()
    from ..measure.periodic.matrix import InterferenceMatrix  # one definition of the artefact
    m = InterferenceMatrix.load_json(path)
    return tuple((a, b, m.directed[i][j]) for i, a in enumerate(m.tasks)
                 for j, b in enumerate(m.tasks) if m.directed[i][j] is not None)


def compile_file(path: str | Path, opts: Options = Options()) -> Compiled:
    opts.check()
    prog = parser.parse_file(path)
    module = irgen.generate(prog)
    graph = dataflow.analyse(module)
    if not graph.nodes:
        raise InputError("main calls no function: there is nothing to run", source=str(path))
    stages = {"comp": text(module.module)}
    callees = {n: (node.callee if node.callee in module.decls else None,
                   int(cost.firings(node.rate))) for n, node in graph.nodes.items()}
    for n, node in graph.nodes.items():
        if node.callee in module.recursive:
            callees[n] = (node.callee, int(cost.firings(node.rate)))
    decl_weights = {name: d.weight.value.data for name, d in module.decls.items()
                    if d.weight is not None}
    heat = weights.load_heatmap(opts.heatmap) if opts.heatmap else None
    given = weights.load_heatmap(opts.weights) if opts.weights else None
    fired = {a.name: (a.callee, a.fires) for a in module.rates.adapters} \
        if module.rates is not None else {}
    resolved = weights.resolve(callees, decl_weights, heat, given, list(opts.sources), fired)
    graph.weights = resolved.nodes
    ir = module.module.clone()
    ctx = context()
    CompToDfg(capacity=opts.capacity, split=opts.split, graph=graph,
              matrix=_matrix(opts.matrix)).apply(ctx, ir)
    ir.verify()
    stages["dfg"] = dfg_text(ir)
    from .passes import view
    before = view(ir)[:2]
    fuse = DfgFuse(cpus=opts.cpus, max_tasks=opts.max_tasks, budget=opts.budget,
                   no_fuse=opts.no_fuse)
    fuse.apply(ctx, ir)
    ir.verify()
    stages["fused"] = dfg_text(ir)
    after = view(ir)[:2]
    procs = partition.processes_from_ir(ir, graph)
    schedule, why, runs = partition.choose_schedule(opts.schedule, graph, procs, opts.cpus)
    variants = partition.variants(graph, runs, opts.capacity, opts.cpus)
    return Compiled(module, graph, stages, fuse.plan, resolved.source, resolved.unused, procs,
                    variants, schedule, why, opts, before, after)


def emit(c: Compiled, stage: str) -> str:
    if stage in c.stages:
        return c.stages[stage]
    if stage == "c":
        from . import emit_c
        return emit_c.generate(c.graph, c.variants, c.module.exit_code)
    if stage == "mlir":
        from . import emit_mlir
        return text(emit_mlir.generate(c.graph, c.variants, c.module.exit_code))
    raise ValueError(stage)


BUILD_RECORD = "build.json"  # in OUT.build/: what built the binary, and how


@dataclass(frozen=True)
class Built:
    binary: Path
    record: dict   # also OUT.build/build.json

    @property
    def said(self) -> str:
        """One line for the output: which compiler built what."""
        r = self.record
        cc, generated = r["c_compiler"]["said"], r["generated_code_by"]
        if generated == cc:
            return f"{r['backend']} back end; generated C, runtime and user C by {cc}"
        return f"{r['backend']} back end; runtime and user C by {cc}; generated code by {generated}"


def build(c: Compiled, out: Path, sources: list[Path], backend: str = "c",
          cc: str | None = None) -> Built:
    """Write the generated code next to `out` (OUT.build/) and build the binary, with the
    same C compiler for the user's C whichever the back end."""
    from . import adapters_c, build as builder, emit_c
    compiler = builder.compiler(cc)
    out = Path(out)
    # OUT.build/ and OUT appear whole or not at all: a stop or an error part way leaves
    # what was there before
    with outputs.replacing(out) as binary, \
            outputs.new_directory(out.with_name(out.name + ".build"), replace=True) as work:
        (work / "composition.h").write_text(emit_c.header(c.module))
        adapters = adapters_c.generate(c.module)
        if adapters is not None:   # compiled as the user's C is, whichever the back end
            (work / adapters_c.FILE).write_text(adapters)
            sources = [*sources, work / adapters_c.FILE]
        if backend == "c":
            main = work / "main.c"
            main.write_text(emit(c, "c"))
            commands = [builder.compile_c(main, sources, binary, compiler)]
            generated_by = compiler.said
        else:
            from . import emit_mlir
            commands = emit_mlir.build(c, work, sources, binary, compiler)
            generated_by = emit_mlir.GENERATED_BY
        record = _record(work, out, binary, c, backend, compiler, generated_by, commands)
    return Built(out, record)


def _record(work: Path, out: Path, binary: Path, c: Compiled, backend: str, compiler,
            generated_by: str, commands: list[list[str]]) -> dict:
    """OUT.build/build.json, naming the binary and the work folder by their final names
    (the commands ran on temporary ones)."""
    from . import build as builder
    final = {str(binary): str(out), str(work): str(out.with_name(out.name + ".build"))}
    record = {"format": "intercore.build/1", "backend": backend, "binary": str(out),
              "c_compiler": {"command": compiler.command, "version": compiler.version,
                             "flags": list(builder.CFLAGS), "said": compiler.said},
              "generated_code_by": generated_by,
              "schedule": {"mode": c.schedule, "why": c.schedule_why,
                           "threads": len(c.variants[0].tasks)},
              "commands": [[_renamed(a, final) for a in cmd] for cmd in commands]}
    outputs.write_text(work / BUILD_RECORD, json.dumps(record, indent=1) + "\n")
    return record


def _renamed(arg: str, final: dict[str, str]) -> str:
    for tmp, name in final.items():
        if arg == tmp or arg.startswith(tmp + "/"):
            return name + arg[len(tmp):]
    return arg
