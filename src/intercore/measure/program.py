"""A user's own program as the victim or as a periodic task (docs/user-programs.md).

`intercore measure -- ./prog ARGS` runs the program through ic-run, once per repetition:
its whole run is region 0 ("total"), and the regions it marks with the kit's ic_user.h follow
by name. The program is named by a path (it contains a '/'), as a shell runs a file rather
than a command from PATH; a bare word is a built-in victim.

A program built with the kit's task runtime (ic_task.h) is a periodic task of its own: it
speaks ic-periodic's protocol, so a task set names it (`program: [./ctl, ARGS]`) where it
would name a built-in workload, and `TaskProgram` is that workload.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from dataclasses import dataclass

from ..errors import InputError
from .harness import VictimSpec

KIND = "program"
FIELD = "PROGRAM"
# Every program linked with ic_task.h carries it (native/runtime/task.c prints it in its
# ready line): a file without it cannot speak the periodic protocol.
RUNTIME_SIGNATURE = b"intercore-task-runtime/1"
_CHUNK = 1 << 20


def is_program(word: str) -> bool:
    return "/" in word


def executable(path: str | Path, field: str = FIELD) -> Path:
    """`path` resolved, once it is known to be an executable regular file; a program that
    cannot run is refused before any work starts."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", field=field) from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}", field=field) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path} is a directory, not a program", field=field)
    if not stat.S_ISREG(st.st_mode) or not os.access(p, os.X_OK):
        raise InputError(f"{path} is not an executable file (chmod +x?)", field=field)
    return p.resolve()


def parse_program(path: str, args: tuple[str, ...] = ()) -> VictimSpec:
    """The victim spec of `path ARGS` (ic-run runs it once per repetition)."""
    return VictimSpec(KIND, name=shlex.join([path, *args]), executable="ic-run",
                      command=(str(executable(path)), *args))


def built_with_runtime(path: Path) -> bool:
    """Whether the file carries the task runtime's signature (a read, never a run: a task
    set is checked before anything starts)."""
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            if RUNTIME_SIGNATURE in tail + chunk:
                return True
            tail = chunk[-len(RUNTIME_SIGNATURE):]
    return False


@dataclass(frozen=True)
class TaskProgram:
    """A task's workload that is the user's program, built with ic_task.h: run as it is,
    with the runner's options before its own arguments."""

    path: str                    # absolute
    args: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.path

    @property
    def label(self) -> str:
        return shlex.join([Path(self.path).name, *self.args])
