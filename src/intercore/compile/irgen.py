"""ast.Program -> `comp` IR: names resolved, types checked, non-recursive composition
functions inlined, calls nested in expressions hoisted into temporaries.

Recursive composition functions stay functions (`comp.func`): their dataflow unfolding has
no bound, so each call of one is a single sequential node. `main` is the entry point.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import (ArrayAttr, FloatAttr, FunctionType, IntegerAttr,
                                   IntegerType, ModuleOp, StringAttr, UnitAttr, f32, f64, i1,
                                   i32, i64, Float32Type, Float64Type)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from . import ast, definite, sdf
from .dialects import comp
from .errors import CompileError

SCALARS: dict[str, Attribute] = {
    "bool": i1, "int": i32, "long": i64, "float": f32, "double": f64,
    "int8_t": IntegerType(8), "int16_t": IntegerType(16), "int32_t": i32, "int64_t": i64,
}
# Unsigned types only as array elements: composition arithmetic is signed (MLIR's arith is
# signless, and the C and MLIR back ends must agree on every result).
ELEMENTS: dict[str, Attribute] = {
    **SCALARS, "uint8_t": IntegerType(8), "uint16_t": IntegerType(16),
    "uint32_t": IntegerType(32), "uint64_t": IntegerType(64),
}
_INT_OPS = {"+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "/": arith.DivSIOp,
            "%": arith.RemSIOp}
_FLOAT_OPS = {"+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp}
MAX_INLINE_DEPTH = 32  # calls of composition functions inlined inside each other
F32_MAX = 3.4028234663852886e38
# One array token; the runtime allocates --capacity (8) of them per channel, so 64 MiB is
# 512 MiB a channel: far above a real program's blocks (float[256]), far below a host's memory.
MAX_ARRAY_BYTES = 64 * 2**20
_ICMP = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_FCMP = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float32Type, Float64Type))


def is_array(t: Attribute) -> bool:
    return isinstance(t, comp.ArrayType)


def _rank(t: Attribute) -> int:
    if is_float(t):
        return 100 + (64 if t == f64 else 32)
    return t.width.data


def type_label(t: Attribute) -> str:
    if is_array(t):
        return t.type_name.data
    for name, s in SCALARS.items():
        if s == t:
            return name
    return str(t)


@dataclass
class Binding:
    ref: SSAValue
    type: Attribute
    const: bool = False      # a `const` array parameter: may not be written


@dataclass
class Module:
    """The comp IR plus what later stages need to talk about it in source terms."""
    module: ModuleOp
    source: str
    positions: dict[int, ast.Pos]          # op id -> where in the source
    decls: dict[str, comp.DeclOp]
    array_types: dict[str, comp.ArrayType]
    recursive: tuple[str, ...]             # composition functions kept as functions
    exit_code: int                         # main's `return CONSTANT;` (0 for void)
    rates: sdf.Lowered | None = None       # the loops with rates, and their adapters

    def main(self) -> comp.FuncOp:
        return next(op for op in self.module.ops
                    if isinstance(op, comp.FuncOp) and op.sym_name.data == "main")


@dataclass
class _Fn:
    """Generation state of one comp.func being built."""
    scopes: list[dict[str, Binding]] = field(default_factory=lambda: [{}])
    names: set[str] = field(default_factory=lambda: {"effects"})  # dataflow.EFFECTS


class _Gen:
    def __init__(self, prog: ast.Program):
        self.prog = prog
        self.next_id = 0
        self.positions: dict[int, ast.Pos] = {}
        self.consts: dict[str, tuple[Attribute, int | float]] = {}
        self.types: dict[str, comp.ArrayType] = {}
        self.decls: dict[str, ast.Decl] = {}
        self.decl_ops: dict[str, comp.DeclOp] = {}
        self.funcs: dict[str, ast.FuncDef] = {}
        self.recursive: set[str] = set()
        self.block: Block | None = None
        self.fn = _Fn()
        self.inlining: list[str] = []

    # ---- errors and ids
    def err(self, msg: str, pos: ast.Pos | None) -> CompileError:
        return CompileError(msg, self.prog.source, self.prog.text, pos)

    def new_id(self, pos: ast.Pos) -> int:
        self.next_id += 1
        self.positions[self.next_id] = pos
        return self.next_id

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    # ---- top level
    def collect(self) -> None:
        """The program's names: what constant expressions and trip counts need."""
        for item in self.prog.items:
            name = item.name
            if name in self.consts or name in self.types or name in self.decls \
                    or name in self.funcs or name in SCALARS:
                raise self.err(f"'{name}' is defined twice", item.pos)
            if isinstance(item, ast.TypeDef):
                self.types[name] = self.type_def(item)
            elif isinstance(item, ast.ConstDef):
                self.consts[name] = self.const_def(item)
            elif isinstance(item, ast.Decl):
                self.decls[name] = item
            else:
                self.funcs[name] = item

    def run(self) -> Module:
        self.collect()
        if "main" not in self.funcs:
            raise self.err("no 'main' composition function", ast.Pos(1, 1))
        main = self.funcs["main"]
        if main.params:
            raise self.err("main takes no parameters", main.pos)
        if main.ret.name not in ("int", "void"):
            raise self.err("main returns int (the exit code) or void", main.ret.pos)
        for d in self.decls.values():
            self.decl_ops[d.name] = self.decl_op(d)
        self.recursive = self.find_recursion()
        ops: list[Operation] = list(self.decl_ops.values())
        for name in sorted(self.recursive):
            ops.append(self.function(self.funcs[name]))
        ops.append(self.function(main))
        module = ModuleOp(ops)
        module.verify()
        return Module(module, self.prog.source, self.positions, self.decl_ops, self.types,
                      tuple(sorted(self.recursive)), self.exit_code(main))

    def exit_code(self, main: ast.FuncDef) -> int:
        """Every task computes main's control flow, none its data: the exit code is a
        constant, and results leave through the functions the program calls."""
        last = main.body[-1] if main.body else None
        if not isinstance(last, ast.Return) or last.value is None:
            if main.ret.name == "int":
                raise self.err("main must end with `return CONSTANT;`", main.pos)
            return 0
        try:
            t, v = self.const_value(last.value)
        except CompileError:
            raise self.err("main's exit code must be a constant: print results from a "
                           "function instead", last.pos) from None
        if is_float(t) or not 0 <= v <= 255:
            raise self.err("main's exit code must be an integer 0..255", last.pos)
        return int(v)

    def const_value(self, e: ast.Expr) -> tuple[Attribute, int | float]:
        """Evaluate a constant expression (literals, earlier consts, arithmetic)."""
        if isinstance(e, ast.Num):
            return self.literal_type(e), self.literal_value(e)
        if isinstance(e, ast.Name) and e.id in self.consts:
            return self.consts[e.id]
        if isinstance(e, ast.Unary) and e.op in "+-":
            t, v = self.const_value(e.operand)
            return t, self.fits(t, -v, e.pos) if e.op == "-" else v
        if isinstance(e, ast.Binary) and e.op in "+-*/%":
            (ta, a), (tb, b) = self.const_value(e.left), self.const_value(e.right)
            t = ta if _rank(ta) >= _rank(tb) else tb
            if e.op in "/%" and b == 0:
                raise self.err("division by zero in a constant", e.pos)
            if is_float(t):
                if e.op == "%":
                    raise self.err("'%' needs integers", e.pos)
                v = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[e.op]
            else:
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1) if b else 0
                v = {"+": a + b, "-": a - b, "*": a * b, "/": q, "%": a - q * b}[e.op]
            return t, self.fits(t, v, e.pos)
        raise self.err("not a constant expression", getattr(e, "pos", None))

    def fits(self, t: Attribute, v: int | float, pos: ast.Pos | None) -> int | float:
        """`v` as a value of `t`, or an error where it is not one. Checked at each step, this
        also bounds the folding: a chain of squarings stops at 64 bits, not at memory."""
        if is_float(t):
            limit = F32_MAX if isinstance(t, Float32Type) else sys.float_info.max
            if not math.isfinite(v) or abs(v) > limit:
                raise self.err(f"constant {v:g} is beyond {type_label(t)}'s range", pos)
        elif not -2 ** (t.width.data - 1) <= v < 2 ** (t.width.data - 1):
            raise self.err(f"constant overflows {type_label(t)}", pos)
        return v

    def type_def(self, item: ast.TypeDef) -> comp.ArrayType:
        if item.elem not in ELEMENTS or item.elem == "bool":
            raise self.err(f"array elements must be a number type, not '{item.elem}'", item.pos)
        t, n = self.const_value(item.size)
        if is_float(t) or n < 1:
            raise self.err("array size must be a positive integer constant", item.size.pos)
        size = n * ELEMENTS[item.elem].bitwidth // 8
        if size > MAX_ARRAY_BYTES:
            raise self.err(f"array of {size} bytes: a token has at most {MAX_ARRAY_BYTES} "
                           f"(a channel holds --capacity of them)", item.size.pos)
        return comp.ArrayType(item.name, ELEMENTS[item.elem], int(n))

    def const_def(self, item: ast.ConstDef) -> tuple[Attribute, int | float]:
        if item.type not in SCALARS or item.type == "bool":
            raise self.err(f"a constant is a number, not '{item.type}'", item.pos)
        t, v = self.const_value(item.value)
        want = SCALARS[item.type]
        return want, float(v) if is_float(want) else int(v)

    def resolve(self, ref: ast.TypeRef, allow_void: bool = False) -> Attribute | None:
        if ref.name == "void":
            if allow_void:
                return None
            raise self.err("'void' is not a value type", ref.pos)
        if ref.name in SCALARS:
            return SCALARS[ref.name]
        if ref.name in self.types:
            return self.types[ref.name]
        if ref.name.startswith("uint"):
            raise self.err(f"'{ref.name}' is only allowed as an array element type: "
                           "composition arithmetic is signed", ref.pos)
        raise self.err(f"unknown type '{ref.name}'", ref.pos)

    def signature(self, params, ret) -> tuple[list[Attribute], list[Attribute]]:
        ins = []
        for p in params:
            t = self.resolve(p.type)
            ins.append(comp.RefType(t) if is_array(t) else t)
        r = self.resolve(ret, allow_void=True)
        return ins, [] if r is None else [r]

    def decl_op(self, d: ast.Decl) -> comp.DeclOp:
        self.check_params(d.params)
        ins, outs = self.signature(d.params, d.ret)
        mutates = [IntegerAttr(i, 64) for i, p in enumerate(d.params)
                   if is_array(self.resolve(p.type)) and not p.const]
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(d.name), "function_type": FunctionType.from_lists(ins, outs),
            "mutates": ArrayAttr(mutates)}
        if d.stateful:
            props["stateful"] = UnitAttr()
        if d.states:
            props["states"] = ArrayAttr([StringAttr(s) for s in d.states])
        if d.weight is not None:
            if not 0 < d.weight < math.inf:
                raise self.err("@weight must be a positive finite number: one firing's cost "
                               "in calls without @weight", d.weight_pos)
            props["weight"] = FloatAttr(d.weight, f64)
        return comp.DeclOp(properties=props)

    def check_params(self, params) -> None:
        seen = set()
        for p in params:
            if p.name in seen:
                raise self.err(f"parameter '{p.name}' given twice", p.pos)
            seen.add(p.name)

    def find_recursion(self) -> set[str]:
        calls = {name: _calls(f.body, self.funcs) for name, f in self.funcs.items()}
        reach = {}
        for start in self.funcs:
            seen, todo = set(), list(calls[start])
            while todo:
                n = todo.pop()
                if n not in seen:
                    seen.add(n)
                    todo.extend(calls[n])
            reach[start] = seen
        rec = {f for f in self.funcs if f in reach[f]}  # a function that reaches itself
        if "main" in rec:
            raise self.err("main cannot be recursive", self.funcs["main"].pos)
        for f in sorted(rec):
            cycle = {g for g in reach[f] if f in reach[g]}
            if not _ends_without(self.funcs[f].body, cycle, self.funcs):
                raise self.err(f"'{f}' has no base case: every path through it calls "
                               f"{', '.join(sorted(cycle))} again, so it never returns",
                               self.funcs[f].pos)
        return rec

    # ---- functions
    def function(self, f: ast.FuncDef) -> comp.FuncOp:
        self.check_params(f.params)
        ins, outs = self.signature(f.params, f.ret)
        ret = outs[0] if outs else None
        arg_types = list(ins) + ([comp.RefType(ret)] if ret is not None and is_array(ret) else [])
        block = Block(arg_types=arg_types)
        saved = self.block, self.fn
        # The state pseudo-variables (dataflow.state_var) become C variables `v_effects_S`:
        # a program variable `effects_S` would be the same C name, so it is renamed.
        self.block, self.fn = block, _Fn(names={"effects", *(
            f"effects_{s}" for d in self.prog.items if isinstance(d, ast.Decl)
            for s in d.states)})
        for p, arg in zip(f.params, block.args):
            t = self.resolve(p.type)
            if is_array(t):
                self.bind(p.name, Binding(arg, t, const=p.const), p.pos)
            else:
                ref = self.new_var(p.name, t, p.pos)
                self.add(comp.StoreOp(arg, ref, self.new_id(p.pos)))
        ret_ref = None
        if ret is not None:
            ret_ref = block.args[-1] if is_array(ret) else self.new_var("ret", ret, f.pos)
        self.body(f.body, (ret, ret_ref), f)
        if ret is not None and not is_array(ret):
            value = self.add(comp.LoadOp(ret_ref)).value
            self.add(comp.ReturnOp(operands=[[value]]))
        else:
            self.add(comp.ReturnOp(operands=[[]]))
        self.block, self.fn = saved
        fn_outs = [] if ret is None or is_array(ret) else [ret]
        return comp.FuncOp(properties={"sym_name": StringAttr(f.name),
                                       "function_type": FunctionType.from_lists(arg_types,
                                                                                fn_outs)},
                           regions=[Region(block)])

    def body(self, stmts, ret, f: ast.FuncDef) -> None:
        """A function body: `return` may only end it (or end both branches of a final
        if/else), so a return is a store into the result and the end of the body."""
        self.check_returns(stmts, f, tail=True)
        if f.ret.name != "void" and not self.ends_in_return(stmts):
            raise self.err(f"'{f.name}' must end in a return", f.pos)
        self.stmts(stmts, ret)

    def check_returns(self, stmts, f, tail: bool) -> None:
        for i, s in enumerate(stmts):
            last = tail and i == len(stmts) - 1
            if isinstance(s, ast.Return):
                if not last:
                    raise self.err("return must be the last statement of the function",
                                   s.pos)
                if (s.value is None) != (f.ret.name == "void"):
                    raise self.err("return value does not match the function's type", s.pos)
            elif isinstance(s, ast.If):
                self.check_returns(s.then, f, last)
                self.check_returns(s.orelse or (), f, last)
            elif isinstance(s, (ast.For, ast.While)):
                self.check_returns(s.body, f, False)
            elif isinstance(s, ast.Block):
                self.check_returns(s.body, f, last)

    def ends_in_return(self, stmts) -> bool:
        if not stmts:
            return False
        s = stmts[-1]
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If):
            return s.orelse is not None and self.ends_in_return(s.then) \
                and self.ends_in_return(s.orelse)
        if isinstance(s, ast.Block):
            return self.ends_in_return(s.body)
        return False

    # ---- scopes
    def lookup(self, name: str, pos: ast.Pos) -> Binding:
        for scope in reversed(self.fn.scopes):
            if name in scope:
                return scope[name]
        raise self.err(f"unknown variable '{name}'", pos)

    def bind(self, name: str, b: Binding, pos: ast.Pos) -> None:
        if any(name in s for s in self.fn.scopes) or name in self.consts:
            raise self.err(f"'{name}' is already defined (shadowing is not allowed)", pos)
        self.fn.scopes[-1][name] = b

    def new_var(self, name: str, t: Attribute, pos: ast.Pos, bind: bool = True) -> SSAValue:
        unique, n = name, 1
        while unique in self.fn.names:
            n += 1
            unique = f"{name}.{n}"
        self.fn.names.add(unique)
        ref = self.add(comp.VarOp(unique, t)).ref
        if bind:
            self.bind(name, Binding(ref, t), pos)
        return ref

    def temp(self, t: Attribute, hint: str) -> SSAValue:
        return self.new_var(f"{hint}.r", t, ast.Pos(0, 0), bind=False)

    # ---- statements
    def stmts(self, stmts, ret) -> None:
        for s in stmts:
            self.stmt(s, ret)

    def scoped(self, fn, *args) -> None:
        self.fn.scopes.append({})
        try:
            fn(*args)
        finally:
            self.fn.scopes.pop()

    def region(self, stmts, ret, terminator: Operation | None = None) -> Region:
        block = Block()
        saved = self.block
        self.block = block
        self.scoped(self.stmts, stmts, ret)
        self.add(terminator or comp.YieldOp())
        self.block = saved
        return Region(block)

    def stmt(self, s, ret) -> None:
        if isinstance(s, ast.VarDecl):
            t = self.resolve(s.type)
            if s.init is not None:
                self.check_no_self_use(s)
            ref = self.new_var(s.name, t, s.pos)
            if s.init is not None:
                self.assign_to(Binding(ref, t), s.init, s.pos)
        elif isinstance(s, ast.Assign):
            b = self.lookup(s.name, s.pos)
            if s.op == "=":
                self.assign_to(b, s.value, s.pos)
            else:
                if is_array(b.type):
                    raise self.err(f"'{s.op}' needs a number, '{s.name}' is an array", s.pos)
                expr = ast.Binary(s.op[0], ast.Name(s.name, s.pos), s.value, s.pos)
                self.assign_to(b, expr, s.pos)
        elif isinstance(s, ast.ExprStmt):
            if not isinstance(s.expr, ast.Call):
                raise self.err("a statement that is not a call has no effect", s.pos)
            self.call(s.expr, want_result=False)
        elif isinstance(s, ast.If):
            cond = self.to_bool(self.expr(s.cond), s.cond)
            then = self.region(s.then, ret)
            orelse = self.region(s.orelse or (), ret)
            self.add(comp.IfOp(operands=[cond], properties={"id": self.id_attr(s.pos)},
                               regions=[then, orelse]))
        elif isinstance(s, (ast.For, ast.While)):
            self.scoped(self.loop, s, ret)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                rtype, rref = ret
                self.assign_to(Binding(rref, rtype), s.value, s.pos)
        elif isinstance(s, ast.Block):
            self.scoped(self.stmts, s.body, ret)
        else:  # pragma: no cover - the parser makes nothing else
            raise self.err(f"unsupported statement {type(s).__name__}", getattr(s, "pos", None))

    def check_no_self_use(self, s: ast.VarDecl) -> None:
        def uses(e) -> bool:
            if isinstance(e, ast.Name):
                return e.id == s.name
            if isinstance(e, ast.Call):
                return any(uses(a) for a in e.args)
            if isinstance(e, ast.Unary):
                return uses(e.operand)
            if isinstance(e, ast.Binary):
                return uses(e.left) or uses(e.right)
            return False
        if uses(s.init):
            raise self.err(f"'{s.name}' is used in its own initialiser", s.pos)

    def id_attr(self, pos: ast.Pos) -> IntegerAttr:
        return IntegerAttr(self.new_id(pos), 64)

    def loop(self, s, ret) -> None:
        trip = None
        if isinstance(s, ast.For):
            if s.init is not None:
                self.stmt(s.init, ret)
            trip = self.trip_count(s)
        cond_block = Block()
        saved = self.block
        self.block = cond_block
        cond = self.to_bool(self.expr(s.cond), s.cond) if s.cond is not None else \
            self.add(arith.ConstantOp.from_int_and_width(1, 1)).result
        self.add(comp.ConditionOp(operands=[cond]))
        self.block = saved
        body = list(s.body) + ([s.step] if isinstance(s, ast.For) and s.step else [])
        props = {"kind": StringAttr("for" if isinstance(s, ast.For) else "while"),
                 "id": self.id_attr(s.pos)}
        if trip is not None:
            props["trip"] = IntegerAttr(trip, 64)
        self.add(comp.LoopOp(properties=props,
                             regions=[Region(cond_block), self.region(body, ret)]))

    def trip_count(self, s: ast.For) -> int | None:
        """Trip count of `for (i = A; i < B; i += C)` with constant A, B, C and i not
        assigned in the body; None otherwise (the loop's rate is then unknown)."""
        init, cond, step = s.init, s.cond, s.step
        if init is None or cond is None or step is None:
            return None
        var = init.name
        start = init.init if isinstance(init, ast.VarDecl) else init.value
        if not (isinstance(cond, ast.Binary) and cond.op in ("<", "<=", ">", ">=")
                and isinstance(cond.left, ast.Name) and cond.left.id == var
                and step.name == var and step.op in ("+=", "-=")):
            return None
        if self.assigns(s.body, var):
            return None
        try:
            a = self.const_value(start)[1]
            b = self.const_value(cond.right)[1]
            c = self.const_value(step.value)[1]
        except CompileError:
            return None
        if any(isinstance(v, float) for v in (a, b, c)):
            return None
        c = c if step.op == "+=" else -c
        if c == 0:
            return None
        if cond.op in ("<=", ">="):
            b = b + (1 if c > 0 else -1)
        n = -(-(b - a) // c) if c > 0 else -(-(a - b) // -c)
        if (c > 0) != (cond.op in ("<", "<=")):
            return None
        return max(0, n)

    def assigns(self, stmts, var: str) -> bool:
        for s in stmts:
            if isinstance(s, ast.Assign) and s.name == var:
                return True
            for sub in ("then", "orelse", "body"):
                inner = getattr(s, sub, None)
                if isinstance(inner, tuple) and self.assigns(inner, var):
                    return True
            if isinstance(s, ast.For) and s.step is not None and s.step.name == var:
                return True
        return False

    def assign_to(self, b: Binding, value: ast.Expr, pos: ast.Pos) -> None:
        if b.const:
            raise self.err("cannot assign to a const parameter", pos)
        if is_array(b.type):
            if isinstance(value, ast.Call) and self.returns_array(value):
                self.call(value, want_result=True, into=b)
                return
            src = self.array_ref(value)
            if src.type.elem != b.type:
                raise self.err(f"cannot assign {type_label(src.type.elem)} to "
                               f"{type_label(b.type)}", pos)
            self.add(comp.CopyOp(src, b.ref, self.new_id(pos)))
            return
        if isinstance(value, ast.Call) and value.func not in self.funcs:
            target = self.decls.get(value.func)
            if target is not None and self.resolve(target.ret, allow_void=True) == b.type:
                self.call(value, want_result=True, into=b)  # straight into the variable
                return
        v = self.convert(self.expr(value), b.type, value)
        self.add(comp.StoreOp(v, b.ref, self.new_id(pos)))

    # ---- expressions
    def literal_type(self, e: ast.Num) -> Attribute:
        if e.is_float:
            t = f32 if e.text.endswith("f") else f64
            self.fits(t, self.literal_value(e), e.pos)
            return t
        if len(e.text.lstrip("0")) > 19 or int(e.text) >= 2**63:  # before int() of 10^6 digits
            raise self.err("integer literal too large", e.pos)
        return i32 if int(e.text) < 2**31 else i64

    def literal_value(self, e: ast.Num) -> int | float:
        return float(e.text.rstrip("f")) if e.is_float else int(e.text)

    def constant(self, t: Attribute, v: int | float) -> SSAValue:
        if is_float(t):
            return self.add(arith.ConstantOp(FloatAttr(float(v), t))).result
        return self.add(arith.ConstantOp.from_int_and_width(int(v), t)).result

    def expr(self, e: ast.Expr) -> SSAValue:
        """A scalar expression's value."""
        if isinstance(e, ast.Num):
            return self.constant(self.literal_type(e), self.literal_value(e))
        if isinstance(e, ast.Bool):
            return self.constant(i1, int(e.value))
        if isinstance(e, ast.Name):
            if e.id in self.consts:
                return self.constant(*self.consts[e.id])
            b = self.lookup(e.id, e.pos)
            if is_array(b.type):
                raise self.err(f"'{e.id}' is an array: pass it to a function", e.pos)
            return self.add(comp.LoadOp(b.ref)).value
        if isinstance(e, ast.Call):
            v = self.call(e, want_result=True)
            if is_array(v.type.elem if isinstance(v.type, comp.RefType) else v.type):
                raise self.err(f"'{e.func}' returns an array: it cannot be used in arithmetic",
                               e.pos)
            return v
        if isinstance(e, ast.Unary):
            v = self.expr(e.operand)
            if e.op == "!":
                b = self.to_bool(v, e.operand)
                return self.add(arith.XOrIOp(b, self.constant(i1, 1))).result
            if v.type == i1:
                v = self.convert(v, i32, e)
            if e.op == "+":
                return v
            if is_float(v.type):
                return self.add(arith.NegfOp(v)).result
            return self.add(arith.SubiOp(self.constant(v.type, 0), v)).result
        if isinstance(e, ast.Binary):
            if e.op in ("&&", "||"):
                if self.has_call(e.right):
                    raise self.err(f"a call on the right of '{e.op}' would always run (no "
                                   "short-circuit here): assign it to a variable first",
                                   e.right.pos)
                a = self.to_bool(self.expr(e.left), e.left)
                b = self.to_bool(self.expr(e.right), e.right)
                cls = arith.AndIOp if e.op == "&&" else arith.OrIOp
                return self.add(cls(a, b)).result
            a, b = self.expr(e.left), self.expr(e.right)
            t = self.common(a.type, b.type)
            a, b = self.convert(a, t, e.left), self.convert(b, t, e.right)
            if e.op in _ICMP:
                if is_float(t):
                    return self.add(arith.CmpfOp(a, b, _FCMP[e.op])).result
                return self.add(arith.CmpiOp(a, b, _ICMP[e.op])).result
            if is_float(t):
                if e.op == "%":
                    raise self.err("'%' needs integers", e.pos)
                return self.add(_FLOAT_OPS[e.op](a, b)).result
            return self.add(_INT_OPS[e.op](a, b)).result
        raise self.err("unsupported expression", getattr(e, "pos", None))

    def has_call(self, e) -> bool:
        if isinstance(e, ast.Call):
            return True
        if isinstance(e, ast.Unary):
            return self.has_call(e.operand)
        if isinstance(e, ast.Binary):
            return self.has_call(e.left) or self.has_call(e.right)
        return False

    def common(self, a: Attribute, b: Attribute) -> Attribute:
        a = i32 if a == i1 else a
        b = i32 if b == i1 else b
        return a if _rank(a) >= _rank(b) else b

    def to_bool(self, v: SSAValue, e) -> SSAValue:
        if v.type == i1:
            return v
        zero = self.constant(v.type, 0)
        if is_float(v.type):
            return self.add(arith.CmpfOp(v, zero, "une")).result
        return self.add(arith.CmpiOp(v, zero, "ne")).result

    def convert(self, v: SSAValue, t: Attribute, e) -> SSAValue:
        s = v.type
        if s == t:
            return v
        if is_array(s) or is_array(t):
            raise self.err(f"cannot convert {type_label(s)} to {type_label(t)}",
                           getattr(e, "pos", None))
        if t == i1:
            return self.to_bool(v, e)
        if is_float(t) and is_float(s):
            cls = arith.ExtFOp if _rank(t) > _rank(s) else arith.TruncFOp
            return self.add(cls(v, t)).result
        if is_float(t):
            if s == i1:
                v = self.add(arith.ExtUIOp(v, i32)).result
            return self.add(arith.SIToFPOp(v, t)).result
        if is_float(s):
            return self.add(arith.FPToSIOp(v, t)).result
        if s == i1:
            return self.add(arith.ExtUIOp(v, t)).result
        cls = arith.ExtSIOp if t.width.data > s.width.data else arith.TruncIOp
        return self.add(cls(v, t)).result

    def array_ref(self, e: ast.Expr) -> SSAValue:
        """An array-valued expression: a variable, or a call returning an array (into a
        fresh temporary)."""
        if isinstance(e, ast.Name):
            b = self.lookup(e.id, e.pos) if e.id not in self.consts else None
            if b is None or not is_array(b.type):
                raise self.err(f"'{e.id}' is not an array", e.pos)
            return b.ref
        if isinstance(e, ast.Call) and e.func not in self.decls and e.func not in self.funcs:
            raise self.err(f"unknown function '{e.func}'", e.pos)
        if isinstance(e, ast.Call) and self.returns_array(e):
            return self.call(e, want_result=True)
        raise self.err("expected an array (a variable or a call returning one)",
                       getattr(e, "pos", None))

    def returns_array(self, e: ast.Call) -> bool:
        target = self.decls.get(e.func) or self.funcs.get(e.func)
        return target is not None and target.ret.name in self.types

    def call(self, e: ast.Call, want_result: bool, into: Binding | None = None):
        """Emit a call; return its scalar value, or the ref holding its array result."""
        if e.func in self.decls:
            target = self.decls[e.func]
        elif e.func in self.funcs:
            target = self.funcs[e.func]
        else:
            raise self.err(f"unknown function '{e.func}'", e.pos)
        if len(e.args) != len(target.params):
            raise self.err(f"'{e.func}' takes {len(target.params)} argument(s), "
                           f"{len(e.args)} given", e.pos)
        rtype = self.resolve(target.ret, allow_void=True)
        if want_result and rtype is None:
            raise self.err(f"'{e.func}' returns void", e.pos)
        args = []
        for p, a in zip(target.params, e.args):
            pt = self.resolve(p.type)
            if is_array(pt):
                ref = self.array_ref(a)
                if ref.type.elem != pt:
                    raise self.err(f"argument '{p.name}' of '{e.func}' is "
                                   f"{type_label(pt)}, not {type_label(ref.type.elem)}",
                                   a.pos)
                if not p.const:
                    if not isinstance(a, ast.Name):
                        raise self.err(f"'{e.func}' modifies '{p.name}': pass a variable",
                                       a.pos)
                    if self.lookup(a.id, a.pos).const:
                        raise self.err(f"'{e.func}' modifies '{p.name}', but '{a.id}' is "
                                       "const", a.pos)
                args.append(ref)
            else:
                args.append(self.convert(self.expr(a), pt, a))
        if e.func in self.funcs and e.func not in self.recursive:
            return self.inline(self.funcs[e.func], args, rtype, into, e)
        out = None
        if rtype is not None:
            out = into.ref if into is not None else self.temp(rtype, e.func)
        if e.func in self.recursive and rtype is not None and is_array(rtype):
            self.add(comp.CallOp(e.func, args + [out], None, self.new_id(e.pos)))
        else:
            self.add(comp.CallOp(e.func, args, out, self.new_id(e.pos)))
        if rtype is None:
            return None
        if is_array(rtype):
            return out
        return self.add(comp.LoadOp(out)).value

    def inline(self, f: ast.FuncDef, args, rtype, into: Binding | None, e: ast.Call):
        if f.name in self.inlining:  # pragma: no cover - recursion is caught earlier
            raise self.err(f"'{f.name}' is recursive", e.pos)
        if len(self.inlining) >= MAX_INLINE_DEPTH:
            raise self.err(f"composition functions call each other more than "
                           f"{MAX_INLINE_DEPTH} deep: inlining stops here", e.pos)
        self.inlining.append(f.name)
        saved_scopes = self.fn.scopes
        self.fn.scopes = [{}]
        try:
            for p, a in zip(f.params, args):
                t = self.resolve(p.type)
                if is_array(t):
                    self.fn.scopes[-1][p.name] = Binding(a, t, const=p.const)
                else:
                    ref = self.new_var(f"{f.name}.{p.name}", t, p.pos, bind=False)
                    self.fn.scopes[-1][p.name] = Binding(ref, t)
                    self.add(comp.StoreOp(a, ref, self.new_id(p.pos)))
            out = None
            if rtype is not None:
                out = into.ref if into is not None else self.temp(rtype, f.name)
            self.body(f.body, (rtype, out), f)
        finally:
            self.fn.scopes = saved_scopes
            self.inlining.pop()
        if rtype is None:
            return None
        return out if is_array(rtype) else self.add(comp.LoadOp(out)).value


def generate(prog: ast.Program) -> Module:
    """Check `prog` and build its comp IR; raise CompileError on the first problem."""
    names = _Gen(prog)
    names.collect()
    lowered = sdf.lower(prog, lambda e: names.const_value(e)[1], names.trip_count)
    gen = _Gen(lowered.program)
    module = gen.run()  # names and types first: a read of an unknown name is that error
    definite.check(lowered.program, gen.trip_count)
    module.rates = lowered
    return module


def _calls(node, funcs) -> set[str]:
    """The functions of `funcs` that `node` (a statement, expression or tuple) calls."""
    found, todo = set(), [node]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and node.func in funcs:
            found.add(node.func)
        if isinstance(node, tuple):
            todo.extend(node)
        elif hasattr(node, "__dataclass_fields__"):
            todo.extend(getattr(node, f) for f in node.__dataclass_fields__)
    return found


def _ends_without(stmts, cycle: set[str], funcs) -> bool:
    """Whether some path through `stmts` returns (or runs off their end) without calling a
    function of `cycle`: a recursion's base case. Loops may run zero times."""
    returns, through = _paths(stmts, cycle, funcs)
    return returns or through


def _paths(stmts, cycle: set[str], funcs) -> tuple[bool, bool]:
    """(some path returns without a call into `cycle`, some path falls through without)."""
    returns = False
    for s in stmts:
        if isinstance(s, ast.Return):
            return returns or not (_calls(s.value, funcs) & cycle), False
        if isinstance(s, ast.If):
            if _calls(s.cond, funcs) & cycle:
                return returns, False
            r1, t1 = _paths(s.then, cycle, funcs)
            r2, t2 = _paths(s.orelse or (), cycle, funcs)
            returns = returns or r1 or r2
            if not (t1 or t2):
                return returns, False
        elif isinstance(s, (ast.For, ast.While)):
            head = (s.init, s.cond) if isinstance(s, ast.For) else (s.cond,)
            if _calls(head, funcs) & cycle:
                return returns, False
            returns = returns or _paths(s.body, cycle, funcs)[0]
        elif isinstance(s, ast.Block):
            r, t = _paths(s.body, cycle, funcs)
            returns = returns or r
            if not t:
                return returns, False
        elif _calls(s, funcs) & cycle:
            return returns, False
    return returns, True

