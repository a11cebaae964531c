"""A user's own program as the victim (docs/user-programs.md).

`intercore measure -- ./prog ARGS` runs the program through ic-run, once per repetition:
its whole run is region 0 ("total"), and the regions it marks with the kit's ic_user.h follow
by name. The program is named by a path (it contains a '/'), as a shell runs a file rather
than a command from PATH; a bare word is a built-in victim.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from ..errors import InputError
from .harness import VictimSpec

KIND = "program"
FIELD = "PROGRAM"


def is_program(word: str) -> bool:
    return "/" in word


def parse_program(path: str, args: tuple[str, ...] = ()) -> VictimSpec:
    """The victim spec of `path ARGS`; a program that cannot run is refused here, before any
    work starts."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", field=FIELD) from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}", field=FIELD) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path} is a directory, not a program", field=FIELD)
    if not stat.S_ISREG(st.st_mode) or not os.access(p, os.X_OK):
        raise InputError(f"{path} is not an executable file (chmod +x?)", field=FIELD)
    return VictimSpec(KIND, name=shlex.join([path, *args]), executable="ic-run",
                      command=(str(p.resolve()), *args))
