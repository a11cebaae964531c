"""Errors in a composition program: file:line:column, the message, then the line and a caret."""

from __future__ import annotations

from ..base.errors import InputError
from .ast import Pos


class CompileError(InputError):
    """Bad composition program (exit 2). str() is the one-line `file:line:col: message`;
    `excerpt` adds the source line and a caret under the column, for people."""

    def __init__(self, message: str, source: str, text: str, pos: Pos | None):
        self.pos = pos
        self.text = text
        super().__init__(message, source=source, line=pos.line if pos else None)

    def __str__(self) -> str:
        where = self.source or "<input>"
        if self.pos is not None:
            where += f":{self.pos.line}:{self.pos.col}"
        return f"{where}: {self.message}"

    @property
    def excerpt(self) -> str:
        if self.pos is None:
            return ""
        lines = self.text.splitlines()
        if not 1 <= self.pos.line <= len(lines):
            return ""
        line = lines[self.pos.line - 1].expandtabs(1)
        return f"    {line}\n    {' ' * (self.pos.col - 1)}^"

    def full(self) -> str:
        return "\n".join(filter(None, (str(self), self.excerpt)))
