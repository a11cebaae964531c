"""The flat command names of earlier releases, kept answering for one release after the
commands were grouped by pipeline stage (issue 19), and left out of --help.

A script that ran `intercore cgroups apply plan.json`, `intercore monitor ...`, `intercore
campaign run ...` or `intercore profile-show 3` gets the same command, output and exit code
as under its new name; `intercore measure VICTIM ...`, `intercore compile APP.comp ...` and
`intercore profile -- CMD` name no command of their group, which then runs its first one
(`runs`). Removing this module (and `runs`) in the next release removes the old names.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

from . import cgroups

# Old top-level name: where its command or group now sits.
MOVED: dict[str, tuple[str, ...]] = {
    "workloads": ("measure", "workloads"),
    "matrix": ("measure", "matrix"),
    "kit": ("measure", "kit"),
    "campaign": ("measure", "campaign"),
    "profile": ("measure", "profile"),
    "profile-show": ("measure", "profile", "show"),
    "counters": ("measure", "counters"),
    "manage": ("compile", "manage"),
    "monitor": ("mitigate", "monitor"),
    "regulate": ("mitigate", "regulate"),
    "gang": ("mitigate", "gang"),
    "mba": ("mitigate", "mba"),
    "service": ("mitigate", "service"),
    "tegra": ("mitigate", "tegra"),
}
# Old groups whose commands now sit directly in a stage group: (stage, their names).
REGROUPED: dict[str, tuple[str, tuple[str, ...]]] = {
    "cgroups": ("mitigate", tuple(cgroups.COMMANDS)),
    "experiment": ("mitigate", ("protection",)),
}


def _find(group: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        group = group.commands[name]
    return group


class Root(TyperGroup):
    """The `intercore` group: its own commands, then the old names, which it does not list."""

    # ctx is click's Context, which typer vendors privately: Any names it here.
    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        if cmd_name in MOVED:
            return _find(self, MOVED[cmd_name])
        if cmd_name in REGROUPED:
            stage, names = REGROUPED[cmd_name]
            group = _find(self, (stage,))
            return TyperGroup(name=cmd_name, commands={n: group.commands[n] for n in names},
                              no_args_is_help=True, rich_markup_mode=group.rich_markup_mode,
                              help=group.help)
        return None


def runs(default: str) -> type[TyperGroup]:
    """A stage group that was one command before (`intercore measure VICTIM ...`): arguments
    that do not start with one of its commands' names go to `default`, as they went to the
    old command. Its own --help and a bare call still show the group."""

    class DefaultsTo(TyperGroup):
        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
                args = [default, *args]
            return super().parse_args(ctx, args)

    return DefaultsTo
