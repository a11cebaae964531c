"""`intercore campaign run | resume | status | report | compare | export`."""

from __future__ import annotations

import typer


def add_commands(campaign_app: typer.Typer) -> None:
    pass
