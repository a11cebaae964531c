"""`intercore measure kit`: the compiler flags a program of one's own needs for the region
markers and the periodic task runtime.

The flags come from intercore.pc, installed with the package, so `pkg-config --cflags --libs
intercore` (with PKG_CONFIG_PATH=$(intercore measure kit --pc-path)) and `intercore measure
kit --cflags --libs` print the same thing.
"""

from __future__ import annotations

import typer

from ..base.errors import InputError
from ..base.native import kit_flags, kit_pc_dir
from .output import JSON_HELP, handle_errors, print_json


@handle_errors
def kit_cmd(
    cflags: bool = typer.Option(False, "--cflags", help="Print the include flags."),
    libs: bool = typer.Option(False, "--libs", help="Print the link flags."),
    pc_path: bool = typer.Option(False, "--pc-path",
                                 help="Print the directory of intercore.pc, for "
                                      "PKG_CONFIG_PATH."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Compile a program of your own against intercore's region markers (ic_user.h) and
    periodic task runtime (ic_task.h).

    cc -std=c11 prog.c $(intercore measure kit --cflags --libs), or with pkg-config:
    PKG_CONFIG_PATH=$(intercore measure kit --pc-path) pkg-config --cflags --libs intercore.
    Then `intercore measure run -- ./prog ARGS` reports the slowdown of each marked region;
    a program whose job function runs under ic_task_run is a periodic task that a task
    set names with `program: [./prog, ARGS]` (docs/user-programs.md).

    --json prints {"cflags": [...], "libs": [...], "pc_path": "..."}.
    """
    if json_out:
        print_json({"cflags": kit_flags("Cflags"), "libs": kit_flags("Libs"),
                    "pc_path": str(kit_pc_dir())})
        return
    if pc_path and (cflags or libs):
        raise InputError("prints a directory alone; ask for the flags separately",
                         field="--pc-path")
    if pc_path:
        typer.echo(str(kit_pc_dir()))
        return
    if not (cflags or libs):
        raise InputError("give --cflags, --libs (or both), --pc-path or --json",
                         field="kit")
    flags = (kit_flags("Cflags") if cflags else []) + (kit_flags("Libs") if libs else [])
    typer.echo(" ".join(flags))
