"""What the comp IR of `main` means as a dataflow graph.

Every task of the generated program runs the *control skeleton* of main (its loops, ifs and
the scalar bookkeeping they need) and performs only its own nodes' ops; a value computed by a
node in another task arrives over a channel at the point where it was defined. All tasks
therefore take the same path through the program, so every channel sees exactly as many
pushes as pulls, and blocking channels cannot deadlock while every task has a thread.

- A **node** is a call of a user or recursive function, or an array copy. Scalar stores
  are *control*, even where their value is computed from call results (`x = level(f) * 2`):
  every task that needs one (for a condition, or as a call's argument) computes it itself
  from the call results it receives, so an expression of results costs no node of its own.
- A **def** is a node op writing a variable: a call's result, its mutable array arguments,
  a copy's destination. Reaching definitions on the structured program (a fixpoint over
  loops) give, for every use, the defs it may see.
- An **edge** D -> N carries the variable D defines to node N when one of N's uses is
  reached by D's def, or when a condition or a store N must compute to follow the program
  is (`control`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from .dialects import comp
from .irgen import Module, is_array


EFFECTS = "effects"  # the pseudo-variable that orders stateful calls


def state_var(state: str) -> str:
    """The pseudo-variable of a named state object (a name no program variable can have)."""
    return f"{EFFECTS}.{state}"


@dataclass(frozen=True)
class Edge:
    src: int          # defining node op id
    dst: int          # consuming node op id
    var: str          # the variable carried
    control: bool     # read by a condition the consumer follows
    conditional: bool  # def and use are not under the same if-branches

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.src, self.dst, self.var)


@dataclass
class Node:
    id: int
    op: Operation
    label: str                       # callee name, or what a copy/store writes
    callee: str | None
    loops: tuple[int, ...]           # ids of the enclosing loops, outermost first
    guards: tuple[tuple[int, str], ...]  # enclosing (if id, branch)
    rate: str                        # firings per run: product of trip counts, "?" if unknown
    stateful: bool                   # calls a stateful function, or carries its own state
    replicable: bool                 # data-parallel: may run as several instances
    line: int


@dataclass
class Graph:
    module: Module
    nodes: dict[int, Node]
    edges: list[Edge]
    # For code generation: what each node's task must execute besides its own op.
    control_ops: dict[int, frozenset[int]]   # node -> control stores it computes
    constructs: dict[int, frozenset[int]]    # node -> loops/ifs it enters
    pulls: dict[int, frozenset[int]]         # node -> def ops whose values it receives
    defs_of: dict[int, tuple[SSAValue, ...]]  # node op -> refs it defines
    refs: dict[str, SSAValue]                  # main's variables by name
    weights: dict = field(default_factory=dict)  # node -> weights.NodeWeight (the pipeline's)

    @property
    def var_types(self) -> dict[str, object]:
        return {name: ref.type.elem for name, ref in self.refs.items()}

    def succ(self, n: int) -> set[int]:
        return {e.dst for e in self.edges if e.src == n}


def var_label(ref: SSAValue) -> str:
    return ref.owner.var_name.data if isinstance(ref.owner, comp.VarOp) else "arg"


def _op_id(op: Operation) -> int:
    return op.id.value.data


class _Walk:
    """Positions, defs and uses of main's ops; reaching definitions by fixpoint."""

    def __init__(self, module: Module):
        self.module = module
        self.decls = module.decls
        self.parent: dict[int, int | None] = {}     # op id -> enclosing loop/if id
        self.branch: dict[int, str] = {}             # op id -> region of its parent
        self.order: dict[int, int] = {}              # op id -> preorder position
        self.loops: dict[int, comp.LoopOp] = {}
        self.ifs: dict[int, comp.IfOp] = {}
        self.node_ops: dict[int, Operation] = {}
        self.stores: dict[int, comp.StoreOp] = {}
        self.load_parent: dict[Operation, int | None] = {}
        self.cond_of: dict[int, list[SSAValue]] = {}  # construct -> its condition value(s)
        self.ret_values: list[SSAValue] = []
        # reaching defs, unioned over loop iterations: load op / node op -> ref -> def ids
        self.reach: dict[Operation, dict[SSAValue, set[int]]] = {}
        # Each loop's last fixed point: an enclosing loop's next iteration starts it from
        # there, so a nest of d loops costs O(d^2) body passes, not 2^d (16 deep took 32 s).
        self.loop_heads: dict[comp.LoopOp, dict[SSAValue, set[int]]] = {}
        # Stateful functions may share hidden state (C globals, files, stdout): each one
        # reads and writes a pseudo-variable per state object it declares (`stateful(s)`),
        # so functions sharing one keep their program order and the others are not ordered.
        # Undeclared state may be any: it is every pseudo-variable, `effects` included.
        named = sorted({s.data for d in self.decls.values() if d.states is not None
                        for s in d.states.data})
        self.state_refs = {EFFECTS: comp.VarOp(EFFECTS, IntegerType(8)).ref} | {
            state_var(s): comp.VarOp(state_var(s), IntegerType(8)).ref for s in named}

    def states(self, op: Operation) -> tuple[SSAValue, ...]:
        """The state pseudo-variables a call reads and writes (none for a pure one)."""
        if not isinstance(op, comp.CallOp):
            return ()
        callee = op.callee.root_reference.data
        decl = self.decls.get(callee)
        if decl is not None and decl.states is not None:
            return tuple(self.state_refs[state_var(s.data)] for s in decl.states.data)
        if (decl is not None and decl.stateful is not None) or callee in self.module.recursive:
            return tuple(self.state_refs.values())
        return ()

    # -- structure
    def index(self, block, parent: int | None, branch: str) -> None:
        for op in block.ops:
            if isinstance(op, comp.LoadOp):
                self.load_parent[op] = parent
            if not hasattr(op, "id") or op.id is None:
                if isinstance(op, comp.ReturnOp) and op.value is not None:
                    self.ret_values.append(op.value)
                continue
            i = _op_id(op)
            self.parent[i], self.branch[i], self.order[i] = parent, branch, len(self.order)
            if isinstance(op, comp.LoopOp):
                self.loops[i] = op
                self.cond_of[i] = [op.cond.block.last_op.cond]
                self.index(op.cond.block, i, "cond")
                self.index(op.body.block, i, "body")
            elif isinstance(op, comp.IfOp):
                self.ifs[i] = op
                self.cond_of[i] = [op.cond]
                self.index(op.then.block, i, "then")
                self.index(op.orelse.block, i, "else")
            elif isinstance(op, (comp.CallOp, comp.CopyOp)):
                self.node_ops[i] = op
            elif isinstance(op, comp.StoreOp):
                self.stores[i] = op

    def enclosing(self, i: int | None) -> list[int]:
        out = []
        while i is not None:
            out.append(i)
            i = self.parent.get(i)
        return out

    # -- defs and uses
    def defs(self, op: Operation) -> tuple[SSAValue, ...]:
        if isinstance(op, comp.CallOp):
            out = [op.out] if op.out is not None else []
            decl = self.decls.get(op.callee.root_reference.data)
            if decl is not None:
                out += [op.args[k.value.data] for k in decl.mutates.data]
            elif op.out is None and op.args and isinstance(op.args[-1].type, comp.RefType) \
                    and op.callee.root_reference.data in self.module.recursive:
                out.append(op.args[-1])  # a recursive function's array result
            return (*out, *self.states(op))
        if isinstance(op, comp.CopyOp):
            return (op.dst,)
        if isinstance(op, comp.StoreOp):
            return (op.ref,)
        return ()

    def array_reads(self, op: Operation) -> tuple[SSAValue, ...]:
        if isinstance(op, comp.CallOp):
            refs = tuple(a for a in op.args if isinstance(a.type, comp.RefType))
            return refs + self.states(op)
        if isinstance(op, comp.CopyOp):
            return (op.src,)
        return ()

    @staticmethod
    def loads(values) -> list[comp.LoadOp]:
        """The comp.load ops a set of SSA values is computed from."""
        out, todo, seen = [], list(values), set()
        while todo:
            v = todo.pop()
            if v in seen or not isinstance(v, SSAValue) or v.owner is None:
                continue
            seen.add(v)
            owner = v.owner
            if isinstance(owner, comp.LoadOp):
                out.append(owner)
            elif isinstance(owner, Operation) and not isinstance(owner, comp.VarOp):
                todo.extend(owner.operands)
        return out

    def scalar_operands(self, op: Operation) -> list[SSAValue]:
        if isinstance(op, comp.CallOp):
            return [a for a in op.args if not isinstance(a.type, comp.RefType)]
        if isinstance(op, comp.StoreOp):
            return [op.value]
        return []

    # -- reaching definitions
    def run_reach(self, block, state: dict) -> dict:
        for op in block.ops:
            if isinstance(op, comp.LoadOp):
                self.record(op, {op.ref: state.get(op.ref, set())})
            elif isinstance(op, comp.LoopOp):
                # Sound because states only grow: the cached head is below this entry's
                # least fixed point, so iterating from it reaches the same one.
                head = _join(self.loop_heads.get(op, {}), state)
                while True:
                    after_cond = self.run_reach(op.cond.block, _copy(head))
                    after_body = self.run_reach(op.body.block, _copy(after_cond))
                    new_head = _join(head, after_body)
                    if new_head == head:
                        break
                    head = new_head
                self.loop_heads[op] = head
                state = after_cond
            elif isinstance(op, comp.IfOp):
                a = self.run_reach(op.then.block, _copy(state))
                b = self.run_reach(op.orelse.block, _copy(state))
                state = _join(a, b)
            elif isinstance(op, (comp.CallOp, comp.CopyOp, comp.StoreOp)):
                reads = self.array_reads(op)
                self.record(op, {r: state.get(r, set()) for r in reads})
                for r in self.defs(op):
                    state[r] = {_op_id(op)}
        return state

    def record(self, op: Operation, seen: dict) -> None:
        mine = self.reach.setdefault(op, {})
        for ref, ds in seen.items():
            mine.setdefault(ref, set()).update(ds)


def _copy(state: dict) -> dict:
    return {k: set(v) for k, v in state.items()}


def _join(a: dict, b: dict) -> dict:
    out = _copy(a)
    for k, v in b.items():
        out.setdefault(k, set()).update(v)
    return out


def analyse(module: Module) -> Graph:
    main = module.main()
    w = _Walk(module)
    w.index(main.body.block, None, "body")
    w.run_reach(main.body.block, {})

    # Data refs: written by a node op, or by a store whose value reads a data ref.
    data_refs: set[SSAValue] = set()
    for op in w.node_ops.values():
        data_refs.update(w.defs(op))
    changed = True
    while changed:
        changed = False
        for st in w.stores.values():
            if st.ref not in data_refs and any(ld.ref in data_refs
                                               for ld in w.loads([st.value])):
                data_refs.add(st.ref)
                changed = True
    control_stores = w.stores
    for v in w.ret_values:
        if any(ld.ref in data_refs for ld in w.loads([v])):
            raise module_error(module, "main's return value must not depend on call "
                               "results: print or store them from a function instead")

    owner = {i: i for i in w.node_ops}  # def id -> node id (control stores: none)

    def uses_of(ops_loads, reach_ops) -> dict[SSAValue, set[int]]:
        seen: dict[SSAValue, set[int]] = {}
        for ld in ops_loads:
            for ref, ds in w.reach.get(ld, {}).items():
                seen.setdefault(ref, set()).update(ds)
        for op in reach_ops:
            for ref, ds in w.reach.get(op, {}).items():
                seen.setdefault(ref, set()).update(ds)
        return seen

    guards = {i: tuple((p, w.branch[c]) for c, p in _pairs(w, i) if p in w.ifs)
              for i in w.parent}

    # Edges from the nodes' own uses.
    edges: dict[tuple[int, int, str], Edge] = {}
    self_carried: set[int] = set()

    def add_edge(d: int, n: int, ref: SSAValue, control: bool) -> None:
        key = (d, n, var_label(ref))
        cond = guards[d] != guards[n]
        old = edges.get(key)
        if old is not None:
            control = control and old.control
            cond = cond or old.conditional
        edges[key] = Edge(d, n, var_label(ref), control, cond)

    for n, op in w.node_ops.items():
        seen = uses_of(w.loads(w.scalar_operands(op)), [op])
        for ref, ds in seen.items():
            for d in ds:
                if d == n:
                    self_carried.add(n)
                elif d in owner:
                    add_edge(d, n, ref, control=False)

    # What each node's task executes to follow the control flow: a fixpoint over the
    # constructs it enters, the control stores it needs and the values it pulls.
    control_ops: dict[int, set[int]] = {}
    constructs: dict[int, set[int]] = {}
    pulls: dict[int, set[int]] = {}
    data_in = {}
    for e in edges.values():
        data_in.setdefault(e.dst, set()).add(e.src)
    for n in w.node_ops:
        cons: set[int] = set()
        ctl: set[int] = set()
        pl = set(data_in.get(n, ()))
        control_in: set[tuple[int, SSAValue]] = set()
        todo_pos = [n, *pl]
        todo_loads = list(w.loads(w.scalar_operands(w.node_ops[n])))
        while todo_pos or todo_loads:
            while todo_pos:
                p = todo_pos.pop()
                for c in w.enclosing(w.parent.get(p)):
                    if c not in cons:
                        cons.add(c)
                        todo_loads.extend(w.loads(w.cond_of[c]))
            while todo_loads:
                ld = todo_loads.pop()
                for ref, ds in w.reach.get(ld, {}).items():
                    for d in ds:
                        if d in control_stores and d not in ctl:
                            ctl.add(d)
                            todo_pos.append(d)
                            todo_loads.extend(w.loads([control_stores[d].value]))
                        elif d in owner and d != n:
                            control_in.add((d, ref))
                            if d not in pl:
                                pl.add(d)
                                todo_pos.append(d)
        constructs[n], control_ops[n], pulls[n] = cons, ctl, pl
        for d, ref in control_in:
            if (d, n, var_label(ref)) not in edges:
                add_edge(d, n, ref, control=True)

    nodes = {}
    for n, op in w.node_ops.items():
        loops = tuple(reversed([c for c in w.enclosing(w.parent.get(n)) if c in w.loops]))
        rate = _rate(w, loops)
        callee = op.callee.root_reference.data if isinstance(op, comp.CallOp) else None
        decl = module.decls.get(callee) if callee else None
        stateful = (decl is not None and decl.stateful is not None) or n in self_carried \
            or (callee is not None and callee in module.recursive)
        nodes[n] = Node(n, op, _label(op, callee), callee, loops, guards[n], rate, stateful,
                        False, module.positions[n].line)
    graph = Graph(module, nodes, sorted(edges.values(), key=lambda e: e.key),
                  {k: frozenset(v) for k, v in control_ops.items()},
                  {k: frozenset(v) for k, v in constructs.items()},
                  {k: frozenset(v) for k, v in pulls.items()},
                  {n: w.defs(op) for n, op in w.node_ops.items()},
                  {op.var_name.data: op.ref for op in main.walk() if isinstance(op, comp.VarOp)}
                  | w.state_refs)
    for n in nodes.values():
        n.replicable = _replicable(w, graph, n)
    return graph


def _pairs(w: _Walk, i: int):
    """(child, parent) pairs from op i up to main."""
    c, p = i, w.parent.get(i)
    while p is not None:
        yield c, p
        c, p = p, w.parent.get(p)


def _rate(w: _Walk, loops: tuple[int, ...]) -> str:
    trips = []
    for lid in loops:
        trip = w.loops[lid].trip
        if trip is None:
            return "?"
        trips.append(trip.value.data)
    prod = 1
    for t in trips:
        prod *= t
    return str(prod)


def _label(op: Operation, callee: str | None) -> str:
    if callee is not None:
        return callee
    if isinstance(op, comp.CopyOp):
        return f"{var_label(op.dst)} = {var_label(op.src)}"
    return f"{var_label(op.ref)} = ..."


def _replicable(w: _Walk, g: Graph, n: Node) -> bool:
    """Data-parallel: a pure call (or copy) in a counted `for`, whose inputs from the loop
    are all defined earlier in the same iteration, whose outputs are used only later in the
    same iteration and by no condition, and which carries no state of its own."""
    if n.stateful or not n.loops or not isinstance(n.op, (comp.CallOp, comp.CopyOp)):
        return False
    loop = n.loops[-1]
    if w.loops[loop].kind.data != "for":
        return False
    inside = {i for i in w.parent if loop in w.enclosing(w.parent.get(i))}
    for e in g.edges:
        if e.dst == n.id and e.src in inside and not (
                w.order[e.src] < w.order[n.id] and not e.conditional):
            return False
        if e.src == n.id and (e.control or e.dst not in inside or e.conditional
                              or w.order[e.dst] < w.order[n.id]):
            return False
    return True


def module_error(module: Module, message: str):
    from .errors import CompileError
    return CompileError(message, module.source, "", None)


__all__ = ["analyse", "Graph", "Node", "Edge", "is_array"]
