"""`intercore mitigate tegra`: the Tegra X1 memory controller's GPU throttle (paper 002 §6.3)."""

from __future__ import annotations

from typing import Optional

import typer

from ..mitigate.bandwidth.tegra import LEVELS, TegraThrottle
from .output import JSON_HELP, console, handle_errors, print_json


@handle_errors
def status_cmd(json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """The throttle level and outstanding-request limit last written."""
    state = TegraThrottle.from_system().state()
    if json_out:
        print_json(state.to_dict())
    else:
        console.print(f"level {state.level} (0..{LEVELS - 1}), limit {state.limit}",
                      highlight=False)

@handle_errors
def set_cmd(
    level: Optional[int] = typer.Option(None, "--level",
                                        help=f"Throttle level 0..{LEVELS - 1} (paper 002 "
                                             "used 20: the most that kept its DNN at "
                                             "20 Hz; 0 stops throttling)."),
    limit: Optional[int] = typer.Option(None, "--limit",
                                        help="Outstanding requests above which the level "
                                             "applies, 0..511."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Set the GPU throttle (read back after the write). The setting persists until
    changed: `intercore mitigate tegra set --level 0` undoes it."""
    if level is None and limit is None:
        from ..base.errors import InputError
        raise InputError("give --level and/or --limit", field="--level")
    state = TegraThrottle.from_system().set(level, limit)
    if json_out:
        print_json(state.to_dict())
    else:
        console.print(f"level {state.level}, limit {state.limit}", highlight=False)
