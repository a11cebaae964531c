"""Entry point: `intercore COMMAND`. Each command group lives in its own module."""

from __future__ import annotations

import typer

from .. import __version__
from . import (assess, campaign, cgroups, demo, doctor, dossier, experiment, learn, matrix,
               measure, model, monitor, results, workloads)
from . import compile as compile_cli
from . import manage
from . import counters, gang, kit, mba, regulate, tegra
from . import service as service_cli
from . import profile as profile_cli
from .output import MARKUP, plain_command_tree

app = typer.Typer(
    name="intercore",
    rich_markup_mode=MARKUP,
    help=(
        "Find, measure, predict and mitigate interference between tasks on multi-core "
        "machines.\n\nStart with `intercore doctor` (what this host can show), then "
        "`intercore measure` (slowdown of a victim under aggressors), or `intercore demo` "
        "for the whole tour. Every command takes --json."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"intercore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    pass


for module in (doctor, workloads, measure, kit, results, model, matrix, cgroups, monitor,
               experiment, campaign, compile_cli, manage, learn, demo):
    module.register(app)
# Every stage on one system, into a certification dossier (issue 21).
assess.register(app)
# A dossier measured again here, or beside another (issue 21).
dossier.register(app)
# The monitor as a systemd service (issue 14).
service_cli.register(app)
# Bandwidth: profiling, counters, regulation, gang scheduling, MBA (issue 12).
for module in (profile_cli, counters, regulate, gang, mba, tegra):
    module.register(app)



def command():
    """The click command tree of `app`, its help plain (output.plain_command_tree)."""
    tree = typer.main.get_command(app)
    plain_command_tree(tree)
    return tree


if __name__ == "__main__":
    command()()
