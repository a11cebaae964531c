"""A command line in the grouped tree as the flat CLI of earlier releases spelt it
(src/intercore/cli/legacy.py): `mitigate plan X` was `cgroups plan X`, `measure campaign run F`
was `campaign run F`, `measure run V` was `measure V`. None for a command that kept its name."""

from __future__ import annotations

from intercore.cli import legacy

# A stage group that was one command: its first command's name was not written.
_WAS_ONE_COMMAND = {("measure", "run"): ("measure",), ("compile", "build"): ("compile",),
                    ("measure", "profile", "run"): ("profile",)}


def old_form(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    for prefix, old in _WAS_ONE_COMMAND.items():
        if argv[:len(prefix)] == prefix:
            return (*old, *argv[len(prefix):])
    for old_name, path in sorted(legacy.MOVED.items(), key=lambda kv: -len(kv[1])):
        if argv[:len(path)] == path:
            return (old_name, *argv[len(path):])
    for old_name, (stage, names) in legacy.REGROUPED.items():
        if argv[0] == stage and len(argv) > 1 and argv[1] in names:
            return (old_name, *argv[1:])
    return None
