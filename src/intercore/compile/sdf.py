"""Multi-token rates, lowered to the one-token program the rest of the compiler knows.

`sample decimate(const sample x[4]);` takes four `sample` tokens per firing and
`sample[2] up(const sample x);` makes two. A counted `for` whose body calls such a function
is a synchronous-dataflow graph: its body may only declare streams (`sample x = f(...);`)
and call functions of the user's C files, and rates.repetition gives how often each call
fires per period. The busiest call fires once per iteration of the loop as written, so the
trip count must be a whole number of periods.

The lowering, on the syntax tree before any IR: each stream becomes one array variable
holding a period's tokens (a `T_xN` type, N tokens of T); each call fired q > 1 times per
period becomes one call of an *adapter* (`f_xq`, a C function written by adapters_c.py and
compiled with the user's files) that fires it q times over consecutive windows of those
arrays, so that every call fires once per period: a single-appearance schedule whose inner
loops live in the adapters. The loop steps by a whole period. A call's counter argument
counts that call's own firings: the k-th firing of a call of the loop
`for (i = A; ...; i += C)` sees A + k*C. The dataflow analysis, the fusion and both back
ends then see an ordinary loop of calls at one rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from . import ast, rates
from .errors import CompileError


@dataclass(frozen=True)
class Actor:
    """One call of a loop with rates, and its firings per period."""
    label: str
    line: int
    fires: int


@dataclass(frozen=True)
class Adapter:
    """A C function firing `callee` `fires` times per call. `args` says, per parameter of
    the callee, what firing k passes: ("counter", step) the adapter's argument + k*step,
    ("same", 0) the argument itself, ("token", 0) element k of the argument,
    ("window", n) the argument + k*n elements. `result` likewise for what the callee
    makes: None, ("token", 0) or ("window", n)."""
    name: str
    callee: str
    fires: int
    args: tuple[tuple[str, int], ...]
    result: tuple[str, int] | None


@dataclass(frozen=True)
class LoopRates:
    line: int
    trip: int
    periods: int
    actors: tuple[Actor, ...]


@dataclass(frozen=True)
class Lowered:
    program: ast.Program
    loops: tuple[LoopRates, ...] = ()
    adapters: tuple[Adapter, ...] = ()


@dataclass
class _Stream:
    type: str          # the token type's name
    producer: int      # actor index
    produced: int      # tokens per firing


@dataclass
class _Actor:
    call: ast.Call
    decl: ast.Decl
    kinds: list[tuple[str, ast.Expr]] = field(default_factory=list)  # per parameter
    out: str | None = None        # the stream it makes, if any
    inputs: list[tuple[str, int, ast.Pos]] = field(default_factory=list)  # stream, taken


def lower(prog: ast.Program, const_int: Callable[[ast.Expr], int],
          trip_count: Callable[[ast.For], int | None]) -> Lowered:
    """`prog` with its rates lowered, or `prog` itself where no function has a rate above
    one. `const_int` evaluates a constant expression (raising CompileError)."""
    return _Lowering(prog, const_int, trip_count).run()


class _Lowering:
    def __init__(self, prog, const_int, trip_count):
        self.prog, self.const_int, self.trip_count = prog, const_int, trip_count
        self.decls = {d.name: d for d in prog.items if isinstance(d, ast.Decl)}
        self.arrays = {t.name: t for t in prog.items if isinstance(t, ast.TypeDef)}
        self.taken = {item.name for item in prog.items}
        self.rates: dict[str, tuple[list[int], int]] = {}   # decl -> (param rates, result)
        self.buffers: dict[str, ast.TypeDef] = {}
        self.adapters: list[Adapter] = []
        self.loops: list[LoopRates] = []
        self.anonymous = 0

    def err(self, msg: str, pos: ast.Pos | None) -> CompileError:
        return CompileError(msg, self.prog.source, self.prog.text, pos)

    def rate(self, e: ast.Expr | None) -> int:
        if e is None:
            return 1
        n = self.const_int(e)
        if not isinstance(n, int) or n < 1:
            raise self.err("a rate is a positive integer constant: the tokens one firing "
                           "takes or makes", e.pos)
        return n

    def run(self) -> Lowered:
        for d in self.decls.values():
            self.rates[d.name] = ([self.rate(p.rate) for p in d.params], self.rate(d.ret_rate))
            if d.ret_rate is not None and d.ret.name == "void":
                raise self.err("a void function makes no tokens: no rate on its result",
                               d.ret_rate.pos)
        self.rated = {n for n, (ins, out) in self.rates.items()
                      if out > 1 or max(ins, default=1) > 1}
        if not self.rated:
            return Lowered(self.prog)
        items = []
        for item in self.prog.items:
            if isinstance(item, ast.FuncDef):
                item = replace(item, body=self.stmts(item.body))
            elif isinstance(item, ast.Decl) and item.name in self.rated:
                item = self.rated_decl(item)
            items.append(item)
        items[:0] = self.buffers.values()   # before the declarations that use them
        items += [self.adapter_decl(a) for a in self.adapters]
        return Lowered(replace(self.prog, items=tuple(items)), tuple(self.loops),
                       tuple(self.adapters))

    # ---- types
    def elems(self, type_name: str) -> tuple[str, int]:
        """A token type's element type and elements per token."""
        t = self.arrays.get(type_name)
        return (type_name, 1) if t is None else (t.elem, self.const_int(t.size))

    def buffer(self, type_name: str, tokens: int, pos: ast.Pos) -> ast.TypeRef:
        """The array type holding `tokens` tokens of `type_name` (the type itself for one)."""
        if tokens == 1:
            return ast.TypeRef(type_name, pos)
        name = f"{type_name}_x{tokens}"
        if name in self.taken and name not in self.buffers:
            raise self.err(f"the rates need a type '{name}' ({tokens} tokens of "
                           f"{type_name}): rename yours", pos)
        elem, n = self.elems(type_name)
        self.buffers[name] = ast.TypeDef(name, elem, ast.Num(str(n * tokens), pos), pos)
        return ast.TypeRef(name, pos)

    def rated_decl(self, d: ast.Decl) -> ast.Decl:
        ins, out = self.rates[d.name]
        params = tuple(replace(p, type=self.buffer(p.type.name, r, p.pos), rate=None)
                       for p, r in zip(d.params, ins))
        return replace(d, params=params, ret=self.buffer(d.ret.name, out, d.ret.pos),
                       ret_rate=None)

    # ---- statements outside loops with rates
    def stmts(self, stmts) -> tuple:
        return tuple(self.stmt(s) for s in stmts)

    def stmt(self, s):
        if isinstance(s, ast.For) and any(self.rated_calls(b) for b in s.body):
            return self.loop(s)
        call = next(iter(self.rated_calls(s)), None)   # in s, or in its condition
        if call is not None:
            raise self.err(f"'{call.func}' takes or makes several tokens per firing: call "
                           "it directly in the body of a counted for loop", call.pos)
        if isinstance(s, ast.If):
            return replace(s, then=self.stmts(s.then),
                           orelse=None if s.orelse is None else self.stmts(s.orelse))
        if isinstance(s, (ast.For, ast.While, ast.Block)):
            return replace(s, body=self.stmts(s.body))
        return s

    def rated_calls(self, node) -> list[ast.Call]:
        """The calls of rated functions in `node`, outside nested statements' bodies."""
        found, todo = [], [node]
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Call) and n.func in self.rated:
                found.append(n)
            if isinstance(n, (ast.If, ast.For, ast.While, ast.Block)) and n is not node:
                continue
            if isinstance(n, tuple):
                todo.extend(n)
            elif hasattr(n, "__dataclass_fields__"):
                todo.extend(getattr(n, f) for f in n.__dataclass_fields__
                            if not (n is node and f in ("body", "then", "orelse")))
        return found

    # ---- a loop with rates
    def loop(self, s: ast.For) -> ast.For:
        trip, init, inc = self.trip_count(s), s.init, s.step
        if trip is None or init is None or inc is None:
            raise self.err("a loop whose calls have rates needs a constant trip count: "
                           "for (i = A; i < B; i += C) with constants A, B, C", s.pos)
        counter = init.name
        first = self.const_int(init.init if isinstance(init, ast.VarDecl) else init.value)
        step = self.const_int(inc.value) * (1 if inc.op == "+=" else -1)
        streams: dict[str, _Stream] = {}
        actors: list[_Actor] = []
        for st in s.body:
            if isinstance(st, ast.VarDecl) and isinstance(st.init, ast.Call):
                self.actor(st.init, streams, actors, counter, (st.name, st.type, st.pos))
            elif isinstance(st, ast.ExprStmt) and isinstance(st.expr, ast.Call):
                self.actor(st.expr, streams, actors, counter, None)
            else:
                raise self.err(f"a loop whose calls have rates (line {s.pos.line}) holds only "
                               "declarations initialised by a call, and calls", st.pos)
        flows, where = [], {}
        for k, a in enumerate(actors):
            for name, taken, pos in a.inputs:
                made_by = streams[name]
                flow = rates.Flow(made_by.producer, k, made_by.produced, taken)
                flows.append(flow)
                where[flow] = (name, pos)
        declared = {st.name for st in s.body if isinstance(st, ast.VarDecl)}
        try:
            fires = rates.repetition(len(actors), flows)
        except rates.Unbalanced as exc:
            f = exc.flow
            name, pos = where[f]
            src, dst = actors[f.src].call.func, actors[f.dst].call.func
            what = f"'{name}'" if name in declared else f"what '{src}' returns"
            raise self.err(
                f"rates do not balance: '{dst}' takes {f.consumed} of {what} per firing and "
                f"'{src}' makes {f.produced}, but the other streams between them fire "
                f"'{src}' {exc.src_fires} time(s) for {exc.dst_fires} of '{dst}'",
                pos) from None
        try:
            periods = rates.periods(trip, fires)
        except rates.NotDivisible as exc:
            busiest = ", ".join(a.call.func for a, q in zip(actors, fires) if q == exc.period)
            raise self.err(f"the loop runs {trip} times, but its rates repeat every "
                           f"{exc.period} firings of {busiest} (" + _vector(actors, fires)
                           + f"): make the trip count a multiple of {exc.period}",
                           s.pos) from None
        period = max(fires)
        body = []
        for a, q in zip(actors, fires):
            body.append(self.fire(a, q, period, streams, fires, counter, first, step))
        self.loops.append(LoopRates(s.pos.line, trip, periods, tuple(
            Actor(a.call.func, a.call.pos.line, q) for a, q in zip(actors, fires))))
        whole = ast.Num(str(abs(step) * period), inc.pos)
        return replace(s, body=tuple(body),
                       step=replace(inc, op="+=" if step > 0 else "-=", value=whole))

    def actor(self, call: ast.Call, streams, actors, counter: str, declared) -> str | None:
        """Record `call` (after the calls nested in its arguments) as an actor; the name of
        the stream it makes, if any."""
        d = self.decls.get(call.func)
        if d is None:
            raise self.err(f"'{call.func}': a loop whose calls have rates calls only "
                           "functions of your C files", call.pos)
        if len(call.args) != len(d.params):
            raise self.err(f"'{call.func}' takes {len(d.params)} argument(s), "
                           f"{len(call.args)} given", call.pos)
        a = _Actor(call, d)
        ins, _ = self.rates[d.name]
        for p, arg, taken in zip(d.params, call.args, ins):
            if isinstance(arg, ast.Call):
                arg = ast.Name(str(self.actor(arg, streams, actors, counter, ())), arg.pos)
            if isinstance(arg, ast.Name) and arg.id in streams:
                if streams[arg.id].type != p.type.name:
                    raise self.err(f"'{arg.id}' is a stream of {streams[arg.id].type}, but "
                                   f"'{call.func}' takes {p.type.name} for '{p.name}'", arg.pos)
                a.kinds.append(("stream", arg))
                a.inputs.append((arg.id, taken, arg.pos))
                continue
            if taken > 1:
                raise self.err(f"'{call.func}' takes {taken} tokens per firing for "
                               f"'{p.name}': pass a stream of this loop (a variable declared "
                               "in it from a call)", arg.pos)
            mentions = _names(arg)
            stream = next((n for n in mentions if n in streams), None)
            if stream is not None:
                raise self.err(f"'{stream}' is a stream: pass it alone, not in an "
                               "expression (tokens cross the loop only between calls)",
                               arg.pos)
            if counter in mentions and not (isinstance(arg, ast.Name) and arg.id == counter):
                raise self.err(f"pass the counter '{counter}' alone: in a loop with rates "
                               "each call sees its own firing number in it", arg.pos)
            a.kinds.append(("counter" if counter in mentions else "same", arg))
        _, made = self.rates[d.name]
        k = len(actors)
        actors.append(a)
        if d.ret.name == "void":
            if declared is not None:
                raise self.err(f"'{call.func}' returns void", call.pos)
            return None
        if not declared:    # nested in an argument, or a statement: an unnamed stream
            self.anonymous += 1
            name, type_name = f"{call.func}.tokens{self.anonymous}", d.ret.name
        else:
            name, ref, pos = declared
            if ref.name != d.ret.name:
                raise self.err(f"'{call.func}' makes {d.ret.name} tokens, not {ref.name}", pos)
            if name in streams:
                raise self.err(f"'{name}' is already defined (shadowing is not allowed)", pos)
            type_name = ref.name
        streams[name] = _Stream(type_name, k, made)
        a.out = name
        return name

    def fire(self, a: _Actor, q: int, period: int, streams, fires, counter: str, first: int,
             step: int):
        """The statement firing actor `a` q times per period: a call, or its adapter's."""
        pos = a.call.pos
        args: list[ast.Expr] = []
        for kind, what in a.kinds:
            if kind == "counter" and q != period:   # its own firings: first + k*step
                since = ast.Binary("-", ast.Name(counter, pos), _int(first, pos), pos)
                mine = ast.Binary("*", ast.Binary("/", since, _int(period, pos), pos),
                                  _int(q, pos), pos)
                args.append(ast.Binary("+", _int(first, pos), mine, pos))
            else:
                args.append(what)
        callee = a.call.func if q == 1 else self.adapter(a, q, step).name
        call = ast.Call(callee, tuple(args), pos)
        if a.out is None:
            return ast.ExprStmt(call, pos)
        s = streams[a.out]
        return ast.VarDecl(self.buffer(s.type, fires[s.producer] * s.produced, pos), a.out,
                           call, pos)

    def adapter(self, a: _Actor, q: int, step: int) -> Adapter:
        ins, made = self.rates[a.decl.name]
        args = []
        for (kind, _), p, taken in zip(a.kinds, a.decl.params, ins):
            elem_n = self.elems(p.type.name)[1]
            if kind == "counter":
                args.append(("counter", step))
            elif kind == "same":
                args.append(("same", 0))
            elif taken == 1 and p.type.name not in self.arrays:
                args.append(("token", 0))
            else:
                args.append(("window", taken * elem_n))
        result = None
        if a.decl.ret.name != "void":
            scalar = made == 1 and a.decl.ret.name not in self.arrays
            result = ("token", 0) if scalar else ("window", made * self.elems(a.decl.ret.name)[1])
        name, n = f"{a.decl.name}_x{q}", 1
        while name in self.taken:
            n += 1
            name = f"{a.decl.name}_x{q}_{n}"
        self.taken.add(name)
        adapter = Adapter(name, a.decl.name, q, tuple(args), result)
        self.adapters.append(adapter)
        return adapter

    def adapter_decl(self, a: Adapter) -> ast.Decl:
        d = self.decls[a.callee]
        ins, made = self.rates[d.name]
        params = []
        for p, (kind, _), taken in zip(d.params, a.args, ins):
            if kind in ("token", "window"):
                params.append(replace(p, type=self.buffer(p.type.name, a.fires * taken, p.pos),
                                      rate=None))
            else:
                params.append(replace(p, rate=None))
        ret = d.ret if d.ret.name == "void" else self.buffer(d.ret.name, a.fires * made,
                                                             d.ret.pos)
        # q firings weigh q times one: the cost model sees the period, not the firing
        weight = a.fires * (d.weight if d.weight is not None else 1.0)
        return replace(d, name=a.name, params=tuple(params), ret=ret, ret_rate=None,
                       weight=weight)


def _int(v: int, pos: ast.Pos) -> ast.Expr:
    n = ast.Num(str(abs(v)), pos)
    return n if v >= 0 else ast.Unary("-", n, pos)


def _names(e) -> set[str]:
    found, todo = set(), [e]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Unary):
            todo.append(n.operand)
        elif isinstance(n, ast.Binary):
            todo += [n.left, n.right]
        elif isinstance(n, ast.Call):
            todo.extend(n.args)
    return found


def _vector(actors, fires) -> str:
    return "repetition vector " + ", ".join(f"{a.call.func} {q}"
                                            for a, q in zip(actors, fires))
