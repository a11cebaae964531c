"""Shared CLI plumbing: --json output, error and warning lines, exit codes.

On a terminal, rich colours and lays out what it prints. For a pipe or a file (CI logs,
scripts, `| grep`) every line goes out as it was written: no colour, no wrapping at 80
columns (a wrapped error moves a space into a path), and plain click help instead of rich's
boxes. The decision is made from isatty() alone, so FORCE_COLOR cannot colour a log.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, Literal

import typer
from rich.console import Console
from rich.markup import escape

from ..base.errors import HostUnsupported, InputError, NativeError
from ..base import stopping


def _is_tty(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(stderr: bool) -> Console:
    tty = _is_tty(sys.stderr if stderr else sys.stdout)
    # Piped tables get room (132 columns) instead of 80; piped text lines are never wrapped.
    return Console(stderr=stderr, force_terminal=tty, soft_wrap=not tty, emoji=False,
                   width=None if tty else 132, color_system="auto" if tty else None)


console = _console(stderr=False)
err_console = _console(stderr=True)

# Typer apps take this as rich_markup_mode: rich help and usage errors on a terminal, click's
# plain ones (wrapped by paragraph, no boxes) in a pipe.
MARKUP: Literal["rich"] | None = "rich" if _is_tty(sys.stdout) and _is_tty(sys.stderr) else None

JSON_HELP = "Print one JSON document on stdout instead of tables (for scripts)."


def _plain_usage(argument: Any) -> Callable[[], str]:
    """An argument as usage lines spell it (`PLAN.json`, `[GROUP]`, `PID...`): typer wraps a
    required one in braces and adds its own brackets and dots to ours, which read like a
    choice list (`{VICTIM}`, `[[CAMPAIGN]]`, `{CAMPAIGN...}...`)."""
    def usage() -> str:
        name = argument.metavar or argument.name.upper()
        if argument.nargs != 1 and "..." not in name:
            name += "..."
        return name if argument.required or name.startswith("[") else f"[{name}]"
    return usage


def plain_command_tree(command: Any) -> None:
    """What the help of every command shows, applied to the whole tree once it is built:
    every indented paragraph (the examples) marked with click's "\\b", so that it is printed
    line for line instead of re-wrapped into one paragraph that cannot be pasted into a
    shell; arguments in usage lines as written (_plain_usage)."""
    paragraphs = (command.help or "").split("\n\n")
    command.help = "\n\n".join(
        "\b\n" + p if p.strip() and all(line.startswith(" ") for line in p.splitlines())
        else p for p in paragraphs) or command.help
    for param in getattr(command, "params", ()):
        if hasattr(param, "_usage_display_name"):
            param._usage_display_name = _plain_usage(param)
    for sub in getattr(command, "commands", {}).values():
        plain_command_tree(sub)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def _line(out: Console, label: str, style: str, message: str) -> None:
    if out.is_terminal:
        # Messages quote user input and file paths: brackets in them are text, not markup.
        out.print(f"[{style}]{label}:[/] {escape(message)}", highlight=False)
    else:
        out.file.write(f"{label}: {message}\n")
        out.file.flush()


def fail(message: str, code: int = 2) -> None:
    """One `error: ...` line on stderr, then exit with `code`."""
    _line(err_console, "error", "bold red", " ".join(message.splitlines()))
    raise typer.Exit(code)


def warn(message: str, *, label: str = "warning", to_stderr: bool = False) -> None:
    """One `warning: ...` line, on stdout beside the results it qualifies (or on stderr)."""
    _line(err_console if to_stderr else console, label, "yellow", message)


def handle_errors(fn: Callable) -> Callable:
    """Turn the project's exceptions into a one-line message and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, HostUnsupported, NativeError) as exc:
            if stopping.stop_in(exc) is not None:
                raise  # raised by what a stop interrupted: __main__ reports the stop
            if isinstance(exc, InputError):
                fail(str(exc), InputError.exit_code)
            if isinstance(exc, HostUnsupported):
                fail(f"this host cannot do that: {exc}", HostUnsupported.exit_code)
            fail(f"native tool failed: {exc}", 1)

    return wrapper
