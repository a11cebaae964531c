"""Where the compiled native tools live: inside the installed package, at intercore/_bin, with
the kit a program compiles against (headers, libraries, intercore.pc) at intercore/_bin/kit."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import NativeError

TOOLS = ("ic-aggr", "ic-victim", "ic-region-bench", "ic-periodic", "ic-monitor", "ic-watchdog",
         "ic-profile", "ic-manage", "ic-regulate", "ic-gang", "ic-trace-stats", "ic-run",
         "ic-corun")


def bin_dir() -> Path:
    override = os.environ.get("INTERCORE_BIN_DIR")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "_bin"


def tool(name: str) -> Path:
    """Path of a native tool; fails loudly when the package was installed without its build."""
    if name not in TOOLS:
        raise ValueError(f"unknown native tool {name!r}")
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        raise NativeError(f"{path} is missing: reinstall intercore with `pip install .` "
                          "so that the native tools are compiled")
    return path


def kit_dir() -> Path:
    return bin_dir() / "kit"


def kit_pc_dir() -> Path:
    """The directory of intercore.pc, for PKG_CONFIG_PATH."""
    return kit_dir() / "lib" / "pkgconfig"


_PC_VAR = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")


def kit_flags(field: str) -> list[str]:
    """A field of intercore.pc ("Cflags", "Libs") expanded as pkg-config would, so the flags
    have one definition, the .pc file, whether pkg-config is installed or not."""
    pc = kit_pc_dir() / "intercore.pc"
    try:
        text = pc.read_text()
    except OSError:
        raise NativeError(f"{pc} is missing: reinstall intercore with `pip install .`") from None
    variables = {"pcfiledir": str(pc.parent)}
    fields: dict[str, str] = {}

    def expand(value: str) -> str:
        return _PC_VAR.sub(lambda m: variables.get(m.group(1), ""), value.strip())

    for line in text.splitlines():
        line = line.split("#", 1)[0]
        key, sep, value = line.partition("=")
        if sep and ":" not in key and key.strip():
            variables[key.strip()] = expand(value)
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip()] = expand(value)
    if field not in fields:
        raise NativeError(f"{pc} has no {field} field")
    # -I<kit>/lib/pkgconfig/../../include printed as the directory it names.
    return [_normalised(flag) for flag in fields[field].split()]


def _normalised(flag: str) -> str:
    for prefix in ("-I", "-L"):
        if flag.startswith(prefix) and len(flag) > 2:
            return prefix + os.path.normpath(flag[2:])
    return flag
