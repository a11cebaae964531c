"""Shared CLI plumbing: --json output, error reporting and exit codes."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import HostUnsupported, InputError, NativeError

# Piped output (CI logs, `| less`) gets room for the wide result tables instead of 80 columns.
console = Console(width=None if sys.stdout.isatty() else 132)
err_console = Console(stderr=True)

JSON_HELP = "Print one JSON document on stdout instead of tables (for scripts)."


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def fail(message: str, code: int = 2) -> None:
    # Messages quote user input and file paths: brackets in them are text, not markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def handle_errors(fn: Callable) -> Callable:
    """Turn the project's exceptions into a one-line message and the documented exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            fail(str(exc), InputError.exit_code)
        except HostUnsupported as exc:
            fail(f"this host cannot do that: {exc}", HostUnsupported.exit_code)
        except NativeError as exc:
            fail(f"native tool failed: {exc}", 1)

    return wrapper
