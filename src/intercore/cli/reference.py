"""docs/cli-reference.md, generated from the command tree itself: every visible command with its
usage line, what it does, its options (names, value, default) and its examples, so that the
reference cannot drift from what `--help` says. `python -m intercore.cli.reference` prints it;
tests/cli/test_reference.py fails when the page in docs/ is not what this prints."""

from __future__ import annotations

import sys
import textwrap
from typing import Any, Iterator

import typer

HEADER = """# Command reference

Generated from the commands themselves by `python -m intercore.cli.reference >
docs/cli-reference.md` (a test fails when this page is out of date). What each command is for
and what it needs of the host: [cli.md](cli.md). Back to the map: [README](../README.md).
"""


# typer carries its own copy of click: the tree's objects are duck-typed here, not imported.
Command = Any


def _commands(command: Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...],
                                                                        Command]]:
    if getattr(command, "hidden", False):
        return
    if hasattr(command, "commands"):
        if command.callback is not None and command.invoke_without_command:
            yield path, command
        for name in sorted(command.commands):
            yield from _commands(command.commands[name], path + (name,))
    else:
        yield path, command


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(param: Any) -> str:
    if param.is_flag or param.count:
        return ""
    default = param.default
    if default is None or default == () or callable(default):
        return ""
    return f"`{default}`"


def _option_rows(command: Command, ctx: typer.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        if param.param_type_name != "option" or param.hidden:
            continue
        names, value = param.get_help_record(ctx) or ("", "")
        names = names if isinstance(names, str) else " ".join(names)
        rows.append(f"| `{_cell(names)}` | {_cell(param.help or '')} | {_default(param)} |")
    return rows


def _section(path: tuple[str, ...], command: Command, root: Command) -> list[str]:
    ctx = typer.Context(root, info_name="intercore")
    node = root
    for name in path:
        node = node.commands[name]
        ctx = typer.Context(node, parent=ctx, info_name=name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    out = [f"## intercore {' '.join(path)}", "", f"    intercore {' '.join(path)} {usage}", ""]
    paragraphs = [p.lstrip("\b\n") for p in (command.help or "").split("\n\n")]
    for p in paragraphs:
        lines = p.splitlines()
        if lines and all(line.startswith(" ") for line in lines):
            out += ["```sh", *textwrap.dedent(p).strip("\n").splitlines(), "```", ""]
        elif p.strip():
            out += [" ".join(p.split()), ""]
    rows = _option_rows(command, ctx)
    if rows:
        out += ["| option | what it sets | default |", "|---|---|---|", *rows, ""]
    return out


def markdown(root: Command) -> str:
    lines = [HEADER]
    for path, command in _commands(root, ()):
        if path:
            lines += _section(path, command, root)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Any = None) -> None:
    from .main import command

    sys.stdout.write(markdown(command()))


if __name__ == "__main__":
    main()
