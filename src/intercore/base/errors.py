"""Errors the CLI turns into exit codes: bad input is 2, a host that lacks a feature is 3."""

from __future__ import annotations

from typing import Iterable


class InputError(Exception):
    """Bad user input. Names where it came from: an option, or a file, line and field."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.source:
            where = self.source + (f":{self.line}" if self.line is not None else "") + ": "
        if self.field:
            where += f"{self.field}: "
        return where + self.message


def require(checks: Iterable[tuple[bool, str, str]], context: str = "") -> None:
    """A spec's field checks, each (holds, field, message): the first that does not hold is
    an InputError naming its field (`context`, such as the task, follows the message)."""
    for ok, field, message in checks:
        if not ok:
            raise InputError(message + context, field=field)


class HostUnsupported(Exception):
    """The host cannot do what was asked (no PMU, no resctrl, pagemap unreadable ...)."""

    exit_code = 3


class NativeError(RuntimeError):
    """A native tool failed or broke its output contract (docs/native-contract.md)."""
