"""Where the compiled native tools live: inside the installed package, at intercore/_bin."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import NativeError

TOOLS = ("ic-aggr", "ic-victim", "ic-region-bench", "ic-periodic", "ic-monitor", "ic-watchdog",
         "ic-profile", "ic-manage", "ic-regulate", "ic-gang", "ic-trace-stats")


def bin_dir() -> Path:
    override = os.environ.get("INTERCORE_BIN_DIR")
    return Path(override) if override else Path(__file__).resolve().parent / "_bin"


def tool(name: str) -> Path:
    """Path of a native tool; fails loudly when the package was installed without its build."""
    if name not in TOOLS:
        raise ValueError(f"unknown native tool {name!r}")
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        raise NativeError(f"{path} is missing: reinstall intercore with `pip install .` "
                          "so that the native tools are compiled")
    return path
