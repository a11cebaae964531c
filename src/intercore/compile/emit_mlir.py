"""The MLIR 19 back end: func/scf/arith/llvm plus `omp.parallel` in MLIR 19's layout, then
mlir-opt-19, mlir-translate-19 and clang-19 (Debian's mlir-19-tools, clang-19, libomp-19-dev).

The program is the same as the C back end's (emit_c.py decides what each task does; this
module only spells it in MLIR): variables are llvm.alloca slots, loops scf.while, branches
scf.if, calls func.call, channels the runtime's C functions, and each variant one
omp.parallel region with a thread per task. xDSL's own omp ops follow upstream MLIR, whose
operand layout MLIR 19 rejects (research note mlir.md), hence `Parallel19` here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import (Float32Type, Float64Type, FloatAttr, IntegerType,
                                   ModuleOp, i1, i8, i32, i64)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, irdl_op_definition,
                       region_def, traits_def, var_operand_def)
from xdsl.traits import IsTerminator

from ..base.errors import HostUnsupported
from .dataflow import Graph
from .dialects import comp
from .emit_c import TaskEmitter
from .irgen import is_array
from .partition import Channel, Variant

PTR = llvm.LLVMPointerType()
TOOLS = ("mlir-opt-19", "mlir-translate-19", "clang-19")
PIPELINE = ("--convert-scf-to-cf", "--convert-to-llvm", "--convert-openmp-to-llvm",
            "--reconcile-unrealized-casts")


@irdl_op_definition
class Parallel19(IRDLOperation):
    """omp.parallel with MLIR 19.1's operands: if, num_threads, allocate, allocator,
    reduction, private (checked with mlir-opt-19 --mlir-print-op-generic)."""

    name = "omp.parallel"
    if_expr = var_operand_def()
    num_threads = var_operand_def()
    allocate_vars = var_operand_def()
    allocator_vars = var_operand_def()
    reduction_vars = var_operand_def()
    private_vars = var_operand_def()
    region = region_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class Terminator19(IRDLOperation):
    name = "omp.terminator"
    traits = traits_def(IsTerminator())


def mlir_type(t: Attribute) -> Attribute:
    if isinstance(t, IntegerType):
        return IntegerType(t.width.data)  # arith and llvm are signless
    return t


def _bytes(t: Attribute) -> int:
    if is_array(t):
        return t.size.data * _bytes(t.elem)
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, Float32Type):
        return 4
    return max(1, t.width.data // 8)


class _Fn:
    """Builds one func.func body."""

    def __init__(self):
        self.block = Block()

    def add(self, op):
        self.block.add_op(op)
        return op

    def const(self, value: int, t: Attribute = i64) -> SSAValue:
        return self.add(arith.ConstantOp.from_int_and_width(value, t)).result

    def call(self, name: str, args, results=()):
        op = self.add(func.CallOp(name, list(args), list(results)))
        return op.res[0] if results else None


class _Externals:
    def __init__(self):
        self.funcs: dict[str, func.FuncOp] = {}

    def need(self, name: str, ins, outs=()) -> None:
        if name not in self.funcs:
            self.funcs[name] = func.FuncOp.external(name, list(ins), list(outs))


class _Body:
    """Spells comp ops inside one func.func: variables are llvm.alloca slots, an array
    argument a pointer, a scalar argument a value. Subclasses decide which ops to emit."""

    def __init__(self, g: Graph, ext: _Externals):
        self.g, self.ext = g, ext
        self.fn = _Fn()
        self.args: dict[SSAValue, SSAValue] = {}  # comp block argument -> func argument
        self.slots: dict[str, SSAValue] = {}

    def alloca(self, var: str, t: Attribute) -> None:
        if is_array(t):
            n = self.fn.const(t.size.data)
            self.slots[var] = self.fn.add(llvm.AllocaOp(n, mlir_type(t.elem))).res
        else:
            slot = self.fn.add(llvm.AllocaOp(self.fn.const(1), mlir_type(t))).res
            self.fn.add(llvm.StoreOp(self.zero(mlir_type(t)), slot))
            self.slots[var] = slot

    def zero(self, t: Attribute) -> SSAValue:
        if isinstance(t, (Float32Type, Float64Type)):
            return self.fn.add(arith.ConstantOp(FloatAttr(0.0, t))).result
        return self.fn.const(0, t)

    # -- values
    def value(self, v: SSAValue, cache: dict) -> SSAValue:
        if v in cache:
            return cache[v]
        if v in self.args:
            return self.args[v]
        op = v.owner
        if isinstance(op, comp.LoadOp):
            out = self.fn.add(llvm.LoadOp(self.slot(op.ref), mlir_type(op.value.type))
                              ).dereferenced_value
        elif isinstance(op, arith.ConstantOp):
            out = self.fn.add(op.clone()).result
        else:
            operands = [self.value(o, cache) for o in op.operands]
            clone = op.clone()
            for k, o in enumerate(operands):
                clone.operands[k] = o
            out = self.fn.add(clone).results[0]
        cache[v] = out
        return out

    def slot(self, ref: SSAValue) -> SSAValue:
        if ref in self.args:
            return self.args[ref]
        return self.slots[ref.owner.var_name.data]

    # -- structure
    def block(self, block) -> None:
        raise NotImplementedError

    def nested(self, build) -> Region:
        saved = self.fn.block
        self.fn.block = Block()
        build()
        block = self.fn.block
        self.fn.block = saved
        return Region(block)

    def region(self, body) -> Region:
        def build():
            self.block(body)
            self.fn.add(scf.YieldOp())
        return self.nested(build)

    def if_(self, op: comp.IfOp) -> None:
        cond = self.value(op.cond, {})
        then, orelse = self.region(op.then.block), self.region(op.orelse.block)
        self.fn.add(scf.IfOp(cond, [], then, orelse))

    def loop(self, op: comp.LoopOp, lid: int) -> None:
        def before():
            self.block(op.cond.block)
            self.fn.add(scf.ConditionOp(self.value(op.cond.block.last_op.cond, {})))

        def after():
            self.iteration(lid)
            self.block(op.body.block)
            self.fn.add(scf.YieldOp())
        self.fn.add(scf.WhileOp([], [], self.nested(before), self.nested(after)))

    def iteration(self, lid: int) -> None:
        """Called at the top of every iteration of loop `lid`."""

    def when(self, cond: SSAValue, build) -> None:
        def body():
            build()
            self.fn.add(scf.YieldOp())
        self.fn.add(scf.IfOp(cond, [], self.nested(body), self.nested(
            lambda: self.fn.add(scf.YieldOp()))))

    # -- one call, copy or store
    def node_op(self, op) -> None:
        if isinstance(op, comp.StoreOp):
            self.fn.add(llvm.StoreOp(self.value(op.value, {}), self.slot(op.ref)))
            return
        if isinstance(op, comp.CopyOp):
            self.ext.need("memcpy", [PTR, PTR, i64], [PTR])
            size = self.fn.const(_bytes(op.dst.type.elem))
            self.fn.call("memcpy", [self.slot(op.dst), self.slot(op.src), size], [PTR])
            return
        callee = op.callee.root_reference.data
        external = callee in self.g.module.decls
        args, ins = [], []
        for a in op.args:
            if isinstance(a.type, comp.RefType):
                args.append(self.slot(a))
                ins.append(PTR)
            else:
                v = self.value(a, {})
                if external and v.type == i1:  # C's bool is a byte, zero-extended
                    v = self.fn.add(arith.ExtUIOp(v, i8)).result
                args.append(v)
                ins.append(v.type)
        out = op.out
        if out is not None and is_array(out.type.elem):
            args.append(self.slot(out))
            ins.append(PTR)
            out = None
        outs = [mlir_type(out.type.elem)] if out is not None else []
        if external and outs == [i1]:
            outs = [i8]
        name = callee if external else f"comp_{callee}"
        if external:
            self.ext.need(name, ins, outs)
        result = self.fn.call(name, args, outs)
        if out is not None:
            if result.type != mlir_type(out.type.elem):  # a C bool back to i1
                zero = self.fn.const(0, i8)
                result = self.fn.add(arith.CmpiOp(result, zero, "ne")).result
            self.fn.add(llvm.StoreOp(result, self.slot(out)))


class _Recursive(_Body):
    """A recursive composition function: sequential, as a private func.func."""

    def build(self, fn: comp.FuncOp) -> func.FuncOp:
        body = fn.body.block
        ins = [PTR if isinstance(t, comp.RefType) else mlir_type(t)
               for t in fn.function_type.inputs.data]
        outs = [mlir_type(t) for t in fn.function_type.outputs.data]
        entry = Block(arg_types=ins)
        self.fn.block = entry
        self.args = dict(zip(body.args, entry.args))
        for op in fn.walk():  # every slot in the entry block: one frame per call
            if isinstance(op, comp.VarOp):
                self.alloca(op.var_name.data, op.ref.type.elem)
        self.block(body)
        return func.FuncOp(f"comp_{fn.sym_name.data}", (ins, outs), Region(entry),
                           visibility="private")

    def block(self, block) -> None:
        for op in block.ops:
            if isinstance(op, comp.LoopOp):
                self.loop(op, op.id.value.data)
            elif isinstance(op, comp.IfOp):
                self.if_(op)
            elif isinstance(op, (comp.CallOp, comp.CopyOp, comp.StoreOp)):
                self.node_op(op)
            elif isinstance(op, comp.ReturnOp):
                values = [self.value(op.value, {})] if op.value is not None else []
                self.fn.add(func.ReturnOp(*values))


class _Task(_Body):
    """One task as MLIR: what to emit comes from emit_c.TaskEmitter."""

    def __init__(self, g: Graph, variant: Variant, index: int, ext: _Externals):
        super().__init__(g, ext)
        self.variant, self.index = variant, index
        self.plan = TaskEmitter(g, variant, variant.tasks[index])

    def build(self, name: str) -> func.FuncOp:
        entry = Block(arg_types=[PTR])
        self.ch = entry.args[0]
        self.fn.block = entry
        for var, ref in self.g.refs.items():
            self.alloca(var, ref.type.elem)
        for lid in sorted(self.plan.counters):
            slot = self.fn.add(llvm.AllocaOp(self.fn.const(1), i64)).res
            self.fn.add(llvm.StoreOp(self.fn.const(-1), slot))
            self.slots[f"it_{lid}"] = slot
        self.block(self.g.module.main().body.block)
        self.fn.add(func.ReturnOp())
        return func.FuncOp(name, ([PTR], []), Region(entry))

    def block(self, block) -> None:
        plan = self.plan
        for op in block.ops:
            i = op.id.value.data if getattr(op, "id", None) is not None else None
            if isinstance(op, comp.LoopOp) and i in plan.cons:
                self.loop(op, i)
            elif isinstance(op, comp.IfOp) and i in plan.cons:
                self.if_(op)
            elif i in plan.own:
                self.node(op, i)
            elif i in plan.incoming:
                for ch in plan.incoming[i]:
                    self.pull(ch)
            elif isinstance(op, comp.StoreOp) and i in plan.ctl:
                self.fn.add(llvm.StoreOp(self.value(op.value, {}), self.slot(op.ref)))

    def iteration(self, lid: int) -> None:
        if lid in self.plan.counters:
            slot = self.slots[f"it_{lid}"]
            v = self.fn.add(llvm.LoadOp(slot, i64)).dereferenced_value
            self.fn.add(llvm.StoreOp(self.fn.add(arith.AddiOp(v, self.fn.const(1))).result,
                                     slot))

    def turn(self, lid, k: int) -> SSAValue:
        it = self.fn.add(llvm.LoadOp(self.slots[f"it_{lid}"], i64)).dereferenced_value
        return self.fn.add(arith.RemSIOp(it, self.fn.const(k))).result

    def is_turn(self, lid, k: int, j: int) -> SSAValue:
        return self.fn.add(arith.CmpiOp(self.turn(lid, k), self.fn.const(j), "eq")).result

    # -- nodes and channels
    def node(self, op, i: int) -> None:
        p = self.plan.task.process

        def build():
            self.node_op(op)
            for ch in self.plan.outgoing.get(i, ()):
                self.push(ch)
        if p.copies > 1:
            self.when(self.is_turn(p.loop, p.copies, self.plan.task.replica), build)
        else:
            build()

    def chan(self, index: SSAValue | int) -> SSAValue:
        self.ext.need("ic_rt_chan", [PTR, i64], [PTR])
        idx = self.fn.const(index) if isinstance(index, int) else index
        return self.fn.call("ic_rt_chan", [self.ch, idx], [PTR])

    def chan_at(self, ch: Channel, lid, k: int) -> SSAValue:
        idx = self.fn.add(arith.AddiOp(self.fn.const(ch.index), self.turn(lid, k))).result
        return self.chan(idx)

    def push(self, ch: Channel) -> None:
        self.ext.need("ic_chan_push", [PTR, PTR], [i1])
        slot = self.slots[ch.var]
        p, q = ch.src, ch.dst
        if p.copies > 1:
            targets = [self.chan(ch.index + self.plan.task.replica)]
        elif q.copies > 1 and self.plan._in_loop(ch.src_node, q.loop):
            targets = [self.chan_at(ch, q.loop, q.copies)]
        else:
            targets = [self.chan(ch.index + j) for j in range(ch.count)]
        for t in targets:  # a refused push means the run was aborted: pulls report it
            self.fn.call("ic_chan_push", [t, slot], [i1])

    def pull(self, ch: Channel) -> None:
        p, q = ch.src, ch.dst
        j = self.plan.task.replica
        if q.copies > 1 and (p.copies > 1 or self.plan._in_loop(ch.src_node, q.loop)):
            self.when(self.is_turn(q.loop, q.copies, j),
                      lambda: self.pull_from(self.chan(ch.index + j), ch))
        elif q.copies > 1:
            self.pull_from(self.chan(ch.index + j), ch)
        elif p.copies > 1:
            self.pull_from(self.chan_at(ch, p.loop, p.copies), ch)
        else:
            self.pull_from(self.chan(ch.index), ch)

    def pull_from(self, chan: SSAValue, ch: Channel) -> None:
        self.ext.need("ic_chan_pull", [PTR, PTR], [i1])
        self.ext.need("ic_rt_pull_failed", [i32, PTR, i32, i32])
        ok = self.fn.call("ic_chan_pull", [chan, self.slots[ch.var]], [i1])
        failed = self.fn.add(arith.XOrIOp(ok, self.fn.const(1, i1))).result
        n, t, c = (self.fn.const(v, i32) for v in (self.variant.nchannels, self.index,
                                                   ch.index))
        self.when(failed, lambda: self.fn.call("ic_rt_pull_failed", [n, self.ch, t, c]))


def _variant(g: Graph, v: Variant, k: int, ext: _Externals, out: list) -> func.FuncOp:
    for t in range(len(v.tasks)):
        out.append(_Task(g, v, t, ext).build(f"v{k}_t{t}"))
    f = _Fn()
    n = v.nchannels
    ext.need("ic_rt_channels", [i32, PTR, PTR], [PTR])
    ext.need("ic_rt_finish", [i32, PTR], [i32])
    ext.need("ic_rt_note_fallback", [i32, i32])
    ext.need("omp_get_num_threads", [], [i32])
    ext.need("omp_get_thread_num", [], [i32])
    ext.need("ic_rt_task_thread", [], [i1])
    sizes = f.add(llvm.AllocaOp(f.const(max(n, 1)), i64)).res
    caps = f.add(llvm.AllocaOp(f.const(max(n, 1)), i64)).res
    k_index = 0
    for ch in v.channels:
        for _ in range(ch.count):
            for base, value in ((sizes, _bytes(ch.elem)), (caps, ch.capacity)):
                slot = f.add(llvm.GEPOp(base, [k_index], pointee_type=i64)).result
                f.add(llvm.StoreOp(f.const(value), slot))
            k_index += 1
    nch = f.const(n, i32)
    chans = f.call("ic_rt_channels", [nch, sizes, caps], [PTR])
    ntasks = f.const(len(v.tasks), i32)
    got = f.add(llvm.AllocaOp(f.const(1), i32)).res
    f.add(llvm.StoreOp(ntasks, got))
    body = _Fn()
    team = body.call("omp_get_num_threads", [], [i32])
    tid = body.call("omp_get_thread_num", [], [i32])
    short = body.add(arith.CmpiOp(team, ntasks, "ne")).result

    def dispatch(t: int) -> Region:
        inner = _Fn()
        if t == 0:  # wake-ups that preempt no task (ic_chan.h)
            inner.call("ic_rt_task_thread", [], [i1])
        if t == len(v.tasks) - 1:
            inner.call(f"v{k}_t{t}", [chans])
        else:
            is_t = inner.add(arith.CmpiOp(tid, inner.const(t, i32), "eq")).result
            call = _Fn()
            call.call(f"v{k}_t{t}", [chans])
            call.add(scf.YieldOp())
            inner.add(scf.IfOp(is_t, [], Region(call.block), dispatch(t + 1)))
        inner.add(scf.YieldOp())
        return Region(inner.block)

    record = _Fn()
    record.add(llvm.StoreOp(team, got))
    record.add(scf.YieldOp())
    body.add(scf.IfOp(short, [], Region(record.block), dispatch(0)))
    body.add(Terminator19())
    f.add(Parallel19(operands=[[], [ntasks], [], [], [], []], regions=[Region(body.block)]))
    aborted = f.call("ic_rt_finish", [nch, chans], [i32])
    got_v = f.add(llvm.LoadOp(got, i32)).dereferenced_value
    was_short = f.add(arith.CmpiOp(got_v, ntasks, "ne")).result
    note = _Fn()
    note.call("ic_rt_note_fallback", [ntasks, got_v])
    note.add(scf.YieldOp(note.const(-1, i32)))
    keep = _Fn()
    keep.add(scf.YieldOp(aborted))
    rc = f.add(scf.IfOp(was_short, [i32], Region(note.block), Region(keep.block))).results[0]
    f.add(func.ReturnOp(rc))
    return func.FuncOp(f"run_v{k}", ([], [i32]), Region(f.block))


def generate(g: Graph, variants: list[Variant], exit_code: int) -> ModuleOp:
    ext = _Externals()
    ops: list = [_Recursive(g, ext).build(op) for op in g.module.module.ops
                 if isinstance(op, comp.FuncOp) and op.sym_name.data != "main"]
    runners = [_variant(g, v, k, ext, ops) for k, v in enumerate(variants)]
    ext.need("omp_set_dynamic", [i32])
    ext.need("omp_get_thread_limit", [], [i32])
    ext.need("ic_rt_set_thread_limit", [i32])
    ext.need("ic_rt_thread_limit", [], [i32])
    m = _Fn()
    m.call("omp_set_dynamic", [m.const(0, i32)])
    m.call("ic_rt_set_thread_limit", [m.call("omp_get_thread_limit", [], [i32])])
    rc = m.add(llvm.AllocaOp(m.const(1), i32)).res
    m.add(llvm.StoreOp(m.const(-1, i32), rc))
    for k, v in enumerate(variants):
        limit = m.call("ic_rt_thread_limit", [], [i32])
        enough = m.add(arith.CmpiOp(limit, m.const(len(v.tasks), i32), "sge")).result
        cur = m.add(llvm.LoadOp(rc, i32)).dereferenced_value
        pending = m.add(arith.CmpiOp(cur, m.const(-1, i32), "eq")).result
        go = m.add(arith.AndIOp(enough, pending)).result
        run = _Fn()
        r = run.call(f"run_v{k}", [], [i32])
        run.add(llvm.StoreOp(r, rc))
        run.add(scf.YieldOp())
        skip = _Fn()
        skip.add(scf.YieldOp())
        m.add(scf.IfOp(go, [], Region(run.block), Region(skip.block)))
    final = m.add(llvm.LoadOp(rc, i32)).dereferenced_value
    ok = m.add(arith.CmpiOp(final, m.const(0, i32), "eq")).result
    code = m.add(arith.SelectOp(ok, m.const(exit_code, i32), m.const(1, i32))).result
    m.add(func.ReturnOp(code))
    main = func.FuncOp("main", ([], [i32]), Region(m.block))
    module = ModuleOp([*ext.funcs.values(), *ops, *runners, main])
    module.verify()
    return module


def tools() -> dict[str, str]:
    found = {t: shutil.which(t) for t in TOOLS}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise HostUnsupported(f"the MLIR back end needs {', '.join(missing)} (Debian: apt-get "
                              "install mlir-19-tools clang-19 libomp-19-dev); --backend c "
                              "needs only a C compiler")
    return found


def build(c, work: Path, sources: list[Path], out: Path, cc) -> list[list[str]]:
    """MLIR -> LLVM IR -> clang-19, linked with the runtime and the user's C compiled by `cc`
    (build.Compiler), the C back end's compiler. Returns the commands run."""
    from . import build as builder
    from .pipeline import text
    t = tools()
    src = work / "main.mlir"
    src.write_text(text(generate(c.graph, c.variants, c.module.exit_code)))
    lowered, ll = work / "main.llvm.mlir", work / "main.ll"
    cmds = [[t["mlir-opt-19"], str(src), *PIPELINE, "-o", str(lowered)],
            [t["mlir-translate-19"], "--mlir-to-llvmir", str(lowered), "-o", str(ll)]]
    for cmd in cmds:
        builder.run(cmd)
    objects, compiled = builder.compile_objects(sources, work, cc)
    link = [t["clang-19"], "-O2", "-fopenmp", "-Wno-override-module", str(ll),
            *map(str, objects), "-o", str(out), "-lm"]
    builder.run(link)
    return cmds + compiled + [link]


# What compiles the generated code, for the build record and the output.
GENERATED_BY = "mlir-opt-19, mlir-translate-19 and clang-19 -O2"
