"""Definite assignment: a variable is read only where every path to the read assigns it.

A declaration may leave a variable without a value (`float sum;`). What such a variable
holds differs between back ends (the C build's stack, the MLIR build's alloca, a channel's
last token) and between fusions, so a program that reads one on some path has no single
meaning: the MLIR build printed `sum -nan` where the C build printed a number. The check runs
on the checked AST of every composition function, before any IR or back end, and names the
read's line, the variable and the path that leaves it without a value.

The analysis is C#/Java's, on the structured program: a forward must-analysis where an `if`
assigns what both branches assign, and a loop what its body assigns only when the body
surely runs (a counted `for` with a trip count of at least 1, or a `for` with no
condition). Every name in an expression is a read, a mutable array argument included: the
function may read what it modifies.
"""

from __future__ import annotations

from typing import Callable

from . import ast
from .errors import CompileError

# name -> why it may have no value here; a name absent from the state is assigned
State = dict[str, str]


def check(prog: ast.Program, trip_count: Callable[[ast.For], int | None]) -> None:
    """Raise CompileError at the first read that some path reaches unassigned.
    `trip_count` is the generator's, so "surely runs" means what the rates mean."""
    walk = _Walk(prog, trip_count)
    for item in prog.items:
        if isinstance(item, ast.FuncDef):
            walk.stmts(item.body, {})


class _Walk:
    def __init__(self, prog: ast.Program, trip_count):
        self.prog = prog
        self.trip_count = trip_count

    def read(self, e, state: State) -> None:
        if isinstance(e, ast.Name):
            if e.id in state:
                raise CompileError(
                    f"'{e.id}' may be read before it has a value: {state[e.id]}; give it "
                    "a value where it is declared, or on every path to this use",
                    self.prog.source, self.prog.text, e.pos)
        elif isinstance(e, ast.Call):
            for a in e.args:
                self.read(a, state)
        elif isinstance(e, ast.Unary):
            self.read(e.operand, state)
        elif isinstance(e, ast.Binary):
            self.read(e.left, state)
            self.read(e.right, state)

    def stmts(self, stmts, state: State) -> State:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def stmt(self, s, state: State) -> State:
        if isinstance(s, ast.VarDecl):
            if s.init is None:
                state[s.name] = f"declared at line {s.pos.line} with no value"
            else:
                self.read(s.init, state)
                state.pop(s.name, None)
        elif isinstance(s, ast.Assign):
            if s.op != "=":  # x += e reads x
                self.read(ast.Name(s.name, s.pos), state)
            self.read(s.value, state)
            state.pop(s.name, None)
        elif isinstance(s, ast.ExprStmt):
            self.read(s.expr, state)
        elif isinstance(s, ast.Return):
            self.read(s.value, state)
        elif isinstance(s, ast.Block):
            state = self.stmts(s.body, state)
        elif isinstance(s, ast.If):
            state = self.branch(s, state)
        elif isinstance(s, (ast.For, ast.While)):
            state = self.loop(s, state)
        return state

    def branch(self, s: ast.If, state: State) -> State:
        self.read(s.cond, state)
        then = self.stmts(s.then, dict(state))
        orelse = self.stmts(s.orelse or (), dict(state))
        out = {}
        for name in then.keys() | orelse.keys():
            if name in then and name in orelse:
                out[name] = then[name]
            else:
                when = "false" if name in then else "true"
                out[name] = f"the if at line {s.pos.line} assigns it only when its " \
                            f"condition is {when}"
        return out

    def loop(self, s, state: State) -> State:
        surely_runs = False
        if isinstance(s, ast.For):
            if s.init is not None:
                state = self.stmt(s.init, state)
            surely_runs = s.cond is None or (self.trip_count(s) or 0) >= 1
        if s.cond is not None:
            self.read(s.cond, state)
        # The first iteration sees the fewest assignments: later ones only add to them.
        after = self.stmts(s.body, dict(state))
        if isinstance(s, ast.For) and s.step is not None:
            after = self.stmt(s.step, after)
        if surely_runs:
            return after
        return {name: why if name in after else
                f"the loop at line {s.pos.line} assigns it but may run zero times"
                for name, why in state.items()}
