"""Parse a composition program (grammar.lark, LALR(1)) into `ast.Program`.

Syntax errors name the file, line and column and say what was expected in words, not in
lark's terminal names.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

from ..base import yamlfile
from . import ast
from .errors import CompileError

# Nesting bounds, far above any real program, below what the recursive passes (lark's
# transformer, irgen, the back ends' expression writers) can take within Python's
# recursion limit: the syntax tree's depth (a parenthesis costs about 5 levels, a braced
# block 2 to 3) and the depth of one expression after its operator chains are built.
MAX_TREE_DEPTH = 400
MAX_EXPR_DEPTH = 256

# What lark's terminal names mean to a user, for "expected ..." messages.
_WORDS = {
    "SEMICOLON": "';'", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "EQUAL": "'='", "NAME": "a name",
    "NUMBER": "a number", "SCALAR": "a type", "VOID": "'void'", "CONST": "'const'",
    "STATEFUL": "'stateful'", "ELSE": "'else'", "RETURN": "'return'", "$END": "end of file",
    "BANG": "'!'", "ADD_OP": "'+' or '-'", "MUL_OP": "'*', '/' or '%'", "CMP_OP": "a comparison",
    "COMPOUND": "'+=', '-=', '*=' or '/='", "INCDEC": "'++' or '--'", "AT": "'@'",
    "TRUE": "'true'", "FALSE": "'false'", "IF": "'if'", "FOR": "'for'", "WHILE": "'while'",
    "TYPE": "'type'", "OR": "'||'", "AND": "'&&'",
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("intercore.compile").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _pos(meta_or_token) -> ast.Pos:
    return ast.Pos(meta_or_token.line, meta_or_token.column)


class _Refused(Exception):
    """A construct that parses but means nothing (raised inside the transformer)."""

    def __init__(self, message: str, pos: ast.Pos):
        super().__init__(message)
        self.pos = pos


@v_args(meta=True)
class _Build(Transformer):
    """lark tree -> ast. Each method gets the rule's meta (position) and its children."""

    def start(self, meta, items):
        return tuple(items)

    # ---- top level
    def type_def(self, meta, c):
        return ast.TypeDef(str(c[0]), str(c[1]), c[2], _pos(meta))

    def const_def(self, meta, c):
        return ast.ConstDef(str(c[0]), str(c[1]), c[2], _pos(meta))

    def stateful(self, meta, c):
        return ("stateful", () if c[1] is None else c[1])

    def state_names(self, meta, c):
        names = [str(n) for n in c]
        twice = next((n for i, n in enumerate(c) if str(n) in names[:i]), None)
        if twice is not None:
            raise _Refused(f"state '{twice}' named twice", _pos(twice))
        return tuple(names)

    def weight(self, meta, c):
        return ("weight", (float(str(c[0]).rstrip("f")), _pos(meta)))

    def decl(self, meta, c):
        *notes, ret, ret_rate, name, params = c
        weights = [v for k, v in notes if k == "weight"]
        if len(weights) > 1:  # the first would be dropped without a word
            raise _Refused("@weight given twice: one weight per function", weights[1][1])
        weight, at = weights[0] if weights else (None, None)
        states = [v for k, v in notes if k == "stateful"]
        if len(states) > 1:
            raise _Refused("'stateful' given twice: list every state object in one "
                           "'stateful(...)'", _pos(name))
        return ast.Decl(str(name), ret, params, bool(states), weight, _pos(name), at,
                        states[0] if states else (), ret_rate)

    def func_def(self, meta, c):
        ret, name, params, body = c
        rated = next((p for p in params if p.rate is not None), None)
        if rated is not None:  # a composition function is inlined: it has no firings
            raise _Refused("a rate belongs on a function of your C files, not on a "
                           "composition function", rated.rate.pos)
        return ast.FuncDef(str(name), ret, params, body.body, _pos(name))

    def params(self, meta, c):
        return tuple(p for p in c if p is not None)

    def no_params(self, meta, c):
        return ()

    def param(self, meta, c):
        const, typ, name, rate = c
        return ast.Param(const is not None, typ, str(name), _pos(name), rate)

    def rate(self, meta, c):
        return c[0]

    def type(self, meta, c):
        return ast.TypeRef(str(c[0]), _pos(c[0]))

    # ---- statements
    def block(self, meta, c):
        return ast.Block(tuple(c), _pos(meta))

    def var_decl(self, meta, c):
        typ, name, init = c
        return ast.VarDecl(typ, str(name), init, _pos(name))

    def assign(self, meta, c):
        return ast.Assign(str(c[0]), "=", c[1], _pos(c[0]))

    def compound(self, meta, c):
        return ast.Assign(str(c[0]), str(c[1]), c[2], _pos(c[0]))

    def incdec(self, meta, c):
        one = ast.Num("1", _pos(c[1]))
        return ast.Assign(str(c[0]), "+=" if str(c[1]) == "++" else "-=", one, _pos(c[0]))

    def expr_stmt(self, meta, c):
        return ast.ExprStmt(c[0], _pos(meta))

    def return_stmt(self, meta, c):
        return ast.Return(c[0], _pos(meta))

    def if_stmt(self, meta, c):
        cond, then, orelse = c
        if isinstance(orelse, ast.If):
            orelse = (orelse,)
        elif orelse is not None:
            orelse = orelse.body
        return ast.If(cond, then.body, orelse, _pos(meta))

    def for_stmt(self, meta, c):
        init, cond, step, body = c
        return ast.For(init, cond, step, body.body, _pos(meta))

    def while_stmt(self, meta, c):
        return ast.While(c[0], c[1].body, _pos(meta))

    # ---- expressions
    def _chain(self, c, op=None):
        out = c[0]
        rest = c[1:]
        if op is None:  # operands interleaved with operator tokens
            for tok, rhs in zip(rest[::2], rest[1::2]):
                out = ast.Binary(str(tok), out, rhs, _pos(tok))
        else:
            for rhs in rest:
                out = ast.Binary(op, out, rhs, out.pos)
        return out

    def arith_chain(self, meta, c):
        return self._chain(c)

    def compare(self, meta, c):
        return c[0] if len(c) == 1 else ast.Binary(str(c[1]), c[0], c[2], _pos(c[1]))

    def or_chain(self, meta, c):
        return self._chain(c, "||")

    def and_chain(self, meta, c):
        return self._chain(c, "&&")

    def sign(self, meta, c):
        return ast.Unary(str(c[0]), c[1], _pos(meta))

    def not_(self, meta, c):
        return ast.Unary("!", c[0], _pos(meta))

    def number(self, meta, c):
        return ast.Num(str(c[0]), _pos(c[0]))

    def true(self, meta, c):
        return ast.Bool(True, _pos(meta))

    def false(self, meta, c):
        return ast.Bool(False, _pos(meta))

    def name(self, meta, c):
        return ast.Name(str(c[0]), _pos(c[0]))

    def call(self, meta, c):
        name, *args = c
        return ast.Call(str(name), tuple(a for a in args if a is not None), _pos(name))


_OPERATORS = {"ADD_OP", "MUL_OP", "CMP_OP", "OR", "AND", "__ANON_0", "__ANON_1"}


def _expected(names) -> str:
    if "SEMICOLON" in names and set(names) - {"SEMICOLON"} <= _OPERATORS:
        return " (expected ';')"  # after a complete expression
    if {"NAME", "NUMBER"} <= set(names) and "SEMICOLON" not in names:
        return " (expected an expression)"
    words = sorted({_WORDS.get(n, f"'{n.lower()}'" if n.isupper() and "_" not in n else n)
                    for n in names if not n.startswith("__")})
    if len(words) > 6:  # after a complete expression: the usual slip is a missing ';'
        return " (expected ';')" if "SEMICOLON" in names else ""
    return " (expected " + " or ".join(words) + ")" if words else ""


def parse(text: str, source: str = "<input>") -> ast.Program:
    """Parse `text`; raise CompileError naming source:line:col on any syntax error."""
    try:
        tree = _lark().parse(text)
        _check_depth(tree, source, text)
        items = _Build().transform(tree)
    except UnexpectedEOF as exc:
        lines = text.splitlines() or [""]
        pos = ast.Pos(len(lines), len(lines[-1]) + 1)
        raise CompileError("unexpected end of file" + _expected(exc.expected), source, text,
                           pos) from None
    except UnexpectedToken as exc:
        tok: Token = exc.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            pos = ast.Pos(len(lines), len(lines[-1]) + 1)
            what = "unexpected end of file"
        else:
            pos = ast.Pos(tok.line, tok.column)
            what = f"unexpected {str(tok)!r}"
        try:  # LALR's merged lookaheads overstate; ask the parser what it really accepts
            expected = exc.interactive_parser.accepts()
        except Exception:
            expected = exc.expected
        raise CompileError(what + _expected(expected), source, text, pos) from None
    except UnexpectedCharacters as exc:
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        raise CompileError(f"unexpected character {ch!r}", source, text,
                           ast.Pos(exc.line, exc.column)) from None
    except VisitError as exc:  # a literal the transformer could not convert, or _Refused
        raise CompileError(str(exc.orig_exc), source, text,
                           getattr(exc.orig_exc, "pos", None)) from None
    _check_expressions(items, source, text)
    return ast.Program(items, source, text)


def _check_depth(tree: Tree, source: str, text: str) -> None:
    """Refuse a syntax tree deeper than MAX_TREE_DEPTH, at the first node past it."""
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        if not isinstance(node, Tree):
            continue
        if depth > MAX_TREE_DEPTH:
            raise CompileError(f"nested too deeply (a syntax tree deeper than "
                               f"{MAX_TREE_DEPTH} levels)", source, text, _first_pos(node))
        todo.extend((c, depth + 1) for c in node.children)


def _first_pos(node) -> ast.Pos | None:
    while isinstance(node, Tree):
        if not node.meta.empty:
            return ast.Pos(node.meta.line, node.meta.column)
        node = next((c for c in node.children if c is not None), None)
    return ast.Pos(node.line, node.column) if isinstance(node, Token) else None


def _check_expressions(items, source: str, text: str) -> None:
    """Refuse an expression nested deeper than MAX_EXPR_DEPTH (a long operator chain
    nests one level per operator)."""
    todo = [(item, 0) for item in items]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, tuple):
            todo.extend((x, depth) for x in node)
            continue
        if not hasattr(node, "__dataclass_fields__"):
            continue
        if isinstance(node, (ast.Unary, ast.Binary, ast.Call)):
            depth += 1
            if depth > MAX_EXPR_DEPTH:
                raise CompileError(f"expression nested deeper than {MAX_EXPR_DEPTH} "
                                   "operators or calls: split it into variables", source,
                                   text, node.pos)
        todo.extend((getattr(node, f), depth) for f in node.__dataclass_fields__)


def parse_file(path: str | Path) -> ast.Program:
    """Read `path` with the project's input bounds (size, UTF-8, no NUL; yamlfile) and
    parse it."""
    return parse(yamlfile.read_text(path), str(path))
