"""The composition program as the parser returns it: plain data, every node with its position."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


# ---- expressions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Num:
    text: str
    pos: Pos

    @property
    def is_float(self) -> bool:
        return any(c in self.text for c in ".eEf")


@dataclass(frozen=True)
class Bool:
    value: bool
    pos: Pos


@dataclass(frozen=True)
class Name:
    id: str
    pos: Pos


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple["Expr", ...]
    pos: Pos


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "+", "!"
    operand: "Expr"
    pos: Pos


@dataclass(frozen=True)
class Binary:
    op: str  # arithmetic, comparison, "&&", "||"
    left: "Expr"
    right: "Expr"
    pos: Pos


Expr = Num | Bool | Name | Call | Unary | Binary


# ---- statements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TypeRef:
    name: str  # a scalar (int, uint8_t, ...), a `type` name, or void
    pos: Pos


@dataclass(frozen=True)
class VarDecl:
    type: TypeRef
    name: str
    init: Expr | None
    pos: Pos


@dataclass(frozen=True)
class Assign:
    name: str
    op: str  # "=", "+=", "-=", "*=", "/="
    value: Expr
    pos: Pos


@dataclass(frozen=True)
class ExprStmt:
    expr: Expr
    pos: Pos


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...] | None
    pos: Pos


@dataclass(frozen=True)
class For:
    init: VarDecl | Assign | None
    cond: Expr | None
    step: Assign | None
    body: tuple["Stmt", ...]
    pos: Pos


@dataclass(frozen=True)
class While:
    cond: Expr
    body: tuple["Stmt", ...]
    pos: Pos


@dataclass(frozen=True)
class Return:
    value: Expr | None
    pos: Pos


@dataclass(frozen=True)
class Block:
    body: tuple["Stmt", ...]
    pos: Pos


Stmt = VarDecl | Assign | ExprStmt | If | For | While | Return | Block


# ---- top level ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class TypeDef:
    name: str
    elem: str
    size: Expr
    pos: Pos


@dataclass(frozen=True)
class ConstDef:
    type: str
    name: str
    value: Expr
    pos: Pos


@dataclass(frozen=True)
class Param:
    const: bool
    type: TypeRef
    name: str
    pos: Pos
    rate: Expr | None = None       # `x[4]`: tokens taken per firing (None: one)


@dataclass(frozen=True)
class Decl:
    """A function implemented in the user's C files."""
    name: str
    ret: TypeRef
    params: tuple[Param, ...]
    stateful: bool
    weight: float | None
    pos: Pos
    weight_pos: Pos | None = None  # where its @weight is, for errors
    states: tuple[str, ...] = ()   # `stateful(a, b)`: the state objects; () is any state
    ret_rate: Expr | None = None   # `sample[2] f(...)`: tokens made per firing (None: one)


@dataclass(frozen=True)
class FuncDef:
    """A composition function: its body composes calls."""
    name: str
    ret: TypeRef
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    pos: Pos


Item = TypeDef | ConstDef | Decl | FuncDef


@dataclass(frozen=True)
class Program:
    items: tuple[Item, ...]
    source: str
    text: str = field(repr=False)
