"""`intercore campaign ...`: plan, run, resume and report experiment campaigns (SP-IMPact)."""

from __future__ import annotations

import typer

from . import campaign_run

campaign_app = typer.Typer(
    help="Experiment campaigns: a configuration space generated from one YAML file, run "
         "resumably, reported as one HTML file.",
    no_args_is_help=True)


def register(app: typer.Typer) -> None:
    campaign_run.add_commands(campaign_app)
    app.add_typer(campaign_app, name="campaign")
