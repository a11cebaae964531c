"""The C back end: one C11 file with OpenMP, linked with the user's C files and the runtime.

Each task is a C function running main's control skeleton (see dataflow.py) with its own
nodes' calls and the pushes and pulls of its channels. `main` runs the fused variant in an
`omp parallel` region of one thread per task and falls back to a variant with fewer tasks
when OpenMP grants fewer threads (partition.py).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from .dataflow import Graph
from .dialects import comp
from .irgen import Module, is_array
from .partition import Channel, Task, Variant

_BIN = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivSIOp: "/",
        arith.RemSIOp: "%", arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*",
        arith.DivfOp: "/", arith.AndIOp: "&", arith.OrIOp: "|", arith.XOrIOp: "^"}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
_CMPF = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
_CASTS = (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.SIToFPOp, arith.FPToSIOp,
          arith.ExtFOp, arith.TruncFOp)


def ctype(t: Attribute) -> str:
    if is_array(t):
        return t.type_name.data
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IntegerType):
        if t.width.data == 1:
            return "bool"
        sign = "u" if t.signedness.data.name == "UNSIGNED" else ""
        return f"{sign}int{t.width.data}_t"
    raise ValueError(f"no C type for {t}")


def cname(var: str) -> str:
    return "v_" + "".join(ch if ch.isalnum() else "_" for ch in var)


def _cmp_name(op) -> str:
    names = arith.CMPI_COMPARISON_OPERATIONS if isinstance(op, arith.CmpiOp) \
        else arith.CMPF_COMPARISON_OPERATIONS
    return names[op.predicate.value.data]


def expr(v: SSAValue, args: dict[SSAValue, str] | None = None) -> str:
    """A scalar SSA value as a C expression (loads read the variable where it is used)."""
    if isinstance(v, BlockArgument):
        return args[v]
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        val = op.value
        t = val.type
        if isinstance(t, (Float32Type, Float64Type)):
            text = repr(float(val.value.data))
            return text + ("f" if isinstance(t, Float32Type) else "")
        n = val.value.data
        if t.width.data == 1:
            return "true" if n else "false"
        return f"INT{t.width.data}_C({n})" if t.width.data == 64 else str(n)
    if isinstance(op, comp.LoadOp):
        return _ref(op.ref, args)
    if type(op) in _BIN:
        return f"({expr(op.lhs, args)} {_BIN[type(op)]} {expr(op.rhs, args)})"
    if isinstance(op, arith.CmpiOp):
        return f"({expr(op.lhs, args)} {_CMPI[_cmp_name(op)]} {expr(op.rhs, args)})"
    if isinstance(op, arith.CmpfOp):
        return f"({expr(op.lhs, args)} {_CMPF[_cmp_name(op)]} {expr(op.rhs, args)})"
    if isinstance(op, arith.NegfOp):
        return f"(-{expr(op.operand, args)})"
    if isinstance(op, _CASTS):
        return f"(({ctype(op.result.type)}){expr(op.input, args)})"
    raise ValueError(f"cannot emit {op.name} as C")


def _ref(ref: SSAValue, args) -> str:
    if isinstance(ref, BlockArgument):
        return args[ref]
    return cname(ref.owner.var_name.data)


def _call(op: comp.CallOp, module: Module, args) -> str:
    callee = op.callee.root_reference.data
    name = callee if callee in module.decls else f"comp_{callee}"
    argv = [_ref(a, args) if isinstance(a.type, comp.RefType) else expr(a, args)
            for a in op.args]
    if op.out is None:
        return f"{name}({', '.join(argv)});"
    if is_array(op.out.type.elem):
        return f"{name}({', '.join(argv + [_ref(op.out, args)])});"
    return f"{_ref(op.out, args)} = {name}({', '.join(argv)});"


def _copy(op: comp.CopyOp, args) -> str:
    # sizeof the type, not the variable: an array parameter is a pointer
    return (f"memcpy({_ref(op.dst, args)}, {_ref(op.src, args)}, "
            f"sizeof({ctype(op.dst.type.elem)}));")


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)


def _node_text(op: Operation, module: Module, args) -> str:
    if isinstance(op, comp.CallOp):
        return _call(op, module, args)
    if isinstance(op, comp.CopyOp):
        return _copy(op, args)
    return f"{_ref(op.ref, args)} = {expr(op.value, args)};"


class TaskEmitter:
    """The body of one task: the skeleton parts it needs, its nodes, its channel ends."""

    def __init__(self, g: Graph, variant: Variant, task: Task):
        self.g, self.variant, self.task = g, variant, task
        nodes = task.process.nodes
        self.own = set(nodes)
        self.ctl = set().union(*(g.control_ops[n] for n in nodes))
        self.cons = set().union(*(g.constructs[n] for n in nodes))
        pulls = set().union(*(g.pulls[n] for n in nodes)) - self.own
        self.incoming: dict[int, list[Channel]] = {}
        self.outgoing: dict[int, list[Channel]] = {}
        for ch in variant.channels:
            if ch.dst is task.process and ch.src_node in pulls:
                self.incoming.setdefault(ch.src_node, []).append(ch)
            if ch.src is task.process:
                self.outgoing.setdefault(ch.src_node, []).append(ch)
        self.counters = {p.loop for p in {c.src for c in variant.channels} |
                         {c.dst for c in variant.channels} | {task.process}
                         if p.copies > 1} & self.cons

    def emit(self, w: _Writer) -> None:
        for lid in sorted(self.counters):
            w(f"long it_{lid} = -1;")
        self.block(self.g.module.main().body.block, w)

    def turn(self, lid: int | None, k: int) -> str:
        return f"it_{lid} % {k}"

    def block(self, block, w: _Writer) -> None:
        for op in block.ops:
            i = op.id.value.data if getattr(op, "id", None) is not None else None
            if isinstance(op, comp.LoopOp) and i in self.cons:
                w("for (;;) {")
                w.depth += 1
                self.block(op.cond.block, w)
                w(f"if (!{expr(op.cond.block.last_op.cond)}) break;")
                if i in self.counters:
                    w(f"it_{i}++;")
                self.block(op.body.block, w)
                w.depth -= 1
                w("}")
            elif isinstance(op, comp.IfOp) and i in self.cons:
                w(f"if ({expr(op.cond)}) {{")
                w.depth += 1
                self.block(op.then.block, w)
                w.depth -= 1
                w("} else {")
                w.depth += 1
                self.block(op.orelse.block, w)
                w.depth -= 1
                w("}")
            elif i in self.own:
                self.node(op, i, w)
            elif i in self.incoming:
                for ch in self.incoming[i]:
                    self.pull(ch, w)
            elif isinstance(op, comp.StoreOp) and i in self.ctl:
                w(f"{_ref(op.ref, None)} = {expr(op.value)};")

    def node(self, op, i: int, w: _Writer) -> None:
        p = self.task.process
        guarded = p.copies > 1
        if guarded:
            w(f"if ({self.turn(p.loop, p.copies)} == {self.task.replica}) {{")
            w.depth += 1
        w(_node_text(op, self.g.module, None))
        for ch in self.outgoing.get(i, ()):
            self.push(ch, w)
        if guarded:
            w.depth -= 1
            w("}")

    def push(self, ch: Channel, w: _Writer) -> None:
        var = cname(ch.var)
        p, q = ch.src, ch.dst
        ref = var if is_array(ch.elem) else f"&{var}"
        if p.copies > 1:       # my own replica's channel (to the single or the twin consumer)
            targets = [f"{ch.index + self.task.replica}"]
        elif q.copies > 1 and self._in_loop(ch.src_node, q.loop):
            targets = [f"{ch.index} + {self.turn(q.loop, q.copies)}"]
        else:                  # loop-invariant to a replicated consumer: every replica
            targets = [str(ch.index + j) for j in range(ch.count)]
        for t in targets:
            w(f"if (!ic_chan_push(ch[{t}], {ref})) return;")

    def pull(self, ch: Channel, w: _Writer) -> None:
        var = cname(ch.var)
        p, q = ch.src, ch.dst
        ref = var if is_array(ch.elem) else f"&{var}"
        fail = (f"{{ ic_rt_protocol_error({self.variant.nchannels}, ch, "
                f"\"{self.task.name}\", \"{ch.var}\"); return; }}")
        if q.copies > 1 and p.copies > 1:
            w(f"if ({self.turn(q.loop, q.copies)} == {self.task.replica} && "
              f"!ic_chan_pull(ch[{ch.index + self.task.replica}], {ref})) {fail}")
        elif q.copies > 1 and self._in_loop(ch.src_node, q.loop):
            w(f"if ({self.turn(q.loop, q.copies)} == {self.task.replica} && "
              f"!ic_chan_pull(ch[{ch.index + self.task.replica}], {ref})) {fail}")
        elif q.copies > 1:
            w(f"if (!ic_chan_pull(ch[{ch.index + self.task.replica}], {ref})) {fail}")
        elif p.copies > 1:
            w(f"if (!ic_chan_pull(ch[{ch.index} + {self.turn(p.loop, p.copies)}], {ref})) "
              f"{fail}")
        else:
            w(f"if (!ic_chan_pull(ch[{ch.index}], {ref})) {fail}")

    def _in_loop(self, node: int, loop: int | None) -> bool:
        return loop in self.g.nodes[node].loops


def _declarations(module: Module) -> list[str]:
    out = []
    for t in module.array_types.values():
        out.append(f"typedef {ctype(t.elem)} {t.type_name.data}[{t.size.data}];")
    for name, d in module.decls.items():
        out.append(prototype(name, d) + ";")
    return out


def prototype(name: str, d: comp.DeclOp) -> str:
    ins = d.function_type.inputs.data
    outs = d.function_type.outputs.data
    mutable = {m.value.data for m in d.mutates.data}
    params = []
    for k, t in enumerate(ins):
        if isinstance(t, comp.RefType):
            const = "" if k in mutable else "const "
            params.append(f"{const}{ctype(t.elem)} a{k}")
        else:
            params.append(f"{ctype(t)} a{k}")
    ret = "void"
    if outs and is_array(outs[0]):
        params.append(f"{ctype(outs[0])} out")
    elif outs:
        ret = ctype(outs[0])
    return f"{ret} {name}({', '.join(params) or 'void'})"


def header(module: Module) -> str:
    """app.h: the types and prototypes the user's C files implement."""
    guard = "INTERCORE_COMPOSITION_H"
    return "\n".join([
        "/* Generated by `intercore compile build` from " + module.source + ": the types and",
        " * functions the composition calls. Include it from your C files so that the",
        " * compiler checks your definitions against it. */",
        f"#ifndef {guard}", f"#define {guard}", "#include <stdbool.h>", "#include <stdint.h>",
        *_declarations(module), "#endif", ""])


def _function_body(fn: comp.FuncOp, module: Module) -> list[str]:
    """A recursive composition function, sequential."""
    block = fn.body.block
    args = {a: f"a{k}" for k, a in enumerate(block.args)}
    w = _Writer()
    for op in fn.walk():
        if isinstance(op, comp.VarOp):
            w(f"{ctype(op.ref.type.elem)} {cname(op.var_name.data)}" +
              (";" if is_array(op.ref.type.elem) else " = 0;"))

    def run(b):
        for op in b.ops:
            if isinstance(op, comp.LoopOp):
                w("for (;;) {")
                w.depth += 1
                run(op.cond.block)
                w(f"if (!{expr(op.cond.block.last_op.cond, args)}) break;")
                run(op.body.block)
                w.depth -= 1
                w("}")
            elif isinstance(op, comp.IfOp):
                w(f"if ({expr(op.cond, args)}) {{")
                w.depth += 1
                run(op.then.block)
                w.depth -= 1
                w("} else {")
                w.depth += 1
                run(op.orelse.block)
                w.depth -= 1
                w("}")
            elif isinstance(op, (comp.CallOp, comp.CopyOp, comp.StoreOp)):
                w(_node_text(op, module, args))
            elif isinstance(op, comp.ReturnOp) and op.value is not None:
                w(f"return {expr(op.value, args)};")
    run(block)
    return w.lines


def _signature(fn: comp.FuncOp) -> str:
    ins = fn.function_type.inputs.data
    outs = fn.function_type.outputs.data
    params = [f"{ctype(t.elem)} a{k}" if isinstance(t, comp.RefType) else f"{ctype(t)} a{k}"
              for k, t in enumerate(ins)]
    ret = ctype(outs[0]) if outs else "void"
    return f"static {ret} comp_{fn.sym_name.data}({', '.join(params) or 'void'})"


def _main_vars(g: Graph) -> list[str]:
    out = []
    for name, ref in g.refs.items():
        t = ref.type.elem
        init = "" if is_array(t) else " = 0"
        out.append(f"{ctype(t)} {cname(name)}{init};")
    return out


def generate(g: Graph, variants: list[Variant], exit_code: int) -> str:
    module = g.module
    lines = [
        f"/* Generated by `intercore compile build` from {module.source}. Do not edit. */",
        "#include <stdbool.h>", "#include <stdint.h>", "#include <stdio.h>",
        "#include <stdlib.h>", "#include <string.h>", "#include <omp.h>",
        '#include "ic_chan.h"', "", *_declarations(module), ""]
    recursive = [op for op in module.module.ops if isinstance(op, comp.FuncOp)
                 and op.sym_name.data != "main"]
    for fn in recursive:
        lines.append(_signature(fn) + ";")
    for fn in recursive:
        lines += [_signature(fn) + " {", *_function_body(fn, module), "}", ""]
    for v_index, v in enumerate(variants):
        for t_index, task in enumerate(v.tasks):
            w = _Writer()
            for decl in _main_vars(g):
                w(decl)
            w(" ".join(f"(void){cname(name)};" for name in g.refs))
            TaskEmitter(g, v, task).emit(w)
            lines += [f"/* variant {v_index}, task {t_index}: {task.name} */",
                      f"static void v{v_index}_t{t_index}(ic_chan_t **ch) {{",
                      "  (void)ch;", f'  ic_rt_name_thread("{task.name[:15]}");', *w.lines,
                      "}", ""]
        sizes = ", ".join(f"sizeof({ctype(c.elem)})" for c in v.channels for _ in range(c.count))
        caps = ", ".join(str(c.capacity) for c in v.channels for _ in range(c.count))
        lines += [f"static const long v{v_index}_sizes[] = {{{sizes or '0'}}};",
                  f"static const long v{v_index}_caps[] = {{{caps or '0'}}};",
                  f"static void (*const v{v_index}_tasks[])(ic_chan_t **) = {{"
                  + ", ".join(f"v{v_index}_t{k}" for k in range(len(v.tasks))) + "};", ""]
    lines += [
        "/* Runs one variant: 0 done, 1 aborted, -1 too few threads. */",
        "static int run_variant(int ntasks, int nchans, const long *sizes, const long *caps,",
        "                       void (*const *tasks)(ic_chan_t **)) {",
        "  ic_chan_t **ch = ic_rt_channels(nchans, sizes, caps);",
        "  int got = ntasks;",
        "#pragma omp parallel num_threads(ntasks)",
        "  {",
        "    int team = omp_get_num_threads();",
        "    if (team != ntasks) {",
        "#pragma omp atomic write",
        "      got = team;",
        "    } else {",
        "      ic_rt_task_thread(); /* its wake-ups preempt no task (ic_chan.h) */",
        "      tasks[omp_get_thread_num()](ch);",
        "    }",
        "  }",
        "  int aborted = ic_rt_finish(nchans, ch);",
        "  if (got != ntasks) {",
        "    ic_rt_note_fallback(ntasks, got);",
        "    return -1;",
        "  }",
        "  return aborted;",
        "}", "",
        "int main(void) {",
        "  omp_set_dynamic(0);",
        "  ic_rt_set_thread_limit(omp_get_thread_limit());",
        "  int rc = -1;"]
    for v_index, v in enumerate(variants):
        lines += [f"  if (rc == -1 && ic_rt_thread_limit() >= {len(v.tasks)})",
                  f"    rc = run_variant({len(v.tasks)}, {v.nchannels}, v{v_index}_sizes, "
                  f"v{v_index}_caps, v{v_index}_tasks);"]
    lines += ["  return rc == 0 ? " + str(exit_code) + " : 1;", "}", ""]
    return "\n".join(lines)
