"""A user's own program as the victim or as a periodic task (docs/user-programs.md).

`intercore measure run -- ./prog ARGS` runs the program through ic-run, once per repetition:
its whole run is region 0 ("total"), and the regions it marks with the kit's ic_user.h follow
by name. The program is named by a path (it contains a '/'), as a shell runs a file rather
than a command from PATH; a bare word is a built-in victim.

A program built with the kit's task runtime (ic_task.h) is a periodic task of its own: it
speaks ic-periodic's protocol, so a task set names it (`program: [./ctl, ARGS]`) where it
would name a built-in workload, and `TaskProgram` is that workload. Any other program may
still be a best-effort task's workload as it is (`command: [./filter, ARGS]`, a
`TaskCommand`): ic-corun runs it again and again beside the others, with no jobs to report.
"""

from __future__ import annotations

import os
import shlex
import stat
import struct
from pathlib import Path
from typing import Any, Sequence

from dataclasses import dataclass

from ..base.artefact import file_sha256
from ..base.errors import InputError
from .harness.paired import VictimSpec
from .harness.comparison import comparisons

KIND = "program"
FIELD = "PROGRAM"
# Every program linked with ic_task.h carries it (native/runtime/task.c prints it in its
# ready line): a file without it cannot speak the periodic protocol.
RUNTIME_SIGNATURE = b"intercore-task-runtime/1"
_CHUNK = 1 << 20

# The block ic-run shares with the program (native/common/ic_run_block.h): same machine, same
# ABI. Handing a program one is how its declared region names are learnt without ic-run
# (the tracer runs it under Valgrind).
BLOCK_FD_ENV = "IC_RUN_FD"
_MAGIC, _VERSION = 0x31525449, 1
_NREGIONS_AT, _NAMES_AT, _MAX_REGIONS, _NAME_LEN = 8, 24, 15, 48
_BLOCK_BYTES = 4096  # at least sizeof(ic_run_block_t): the program maps only that much


def names_block() -> int:
    """An empty block (a memfd, nothing on disk) for a program's IC_RUN_FD."""
    fd = os.memfd_create("intercore-regions", 0)
    os.ftruncate(fd, _BLOCK_BYTES)
    os.pwrite(fd, struct.pack("<II", _MAGIC, _VERSION), 0)
    return fd


def block_names(fd: int) -> dict[int, str]:
    """The region names a program declared into the block with ic_user_regions(), by id."""
    data = os.pread(fd, _NAMES_AT + _MAX_REGIONS * _NAME_LEN, 0)
    (n,) = struct.unpack_from("<I", data, _NREGIONS_AT)
    names = {}
    for i in range(min(n, _MAX_REGIONS)):
        raw = data[_NAMES_AT + i * _NAME_LEN:_NAMES_AT + (i + 1) * _NAME_LEN]
        names[i] = raw.split(b"\0", 1)[0].decode(errors="replace")
    return names


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
    p = executable(path)
    return VictimSpec(KIND, name=shlex.join([path, *args]), executable="ic-run",
                      command=(str(p), *args), digest=file_sha256(p))


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
class _Command:
    """A program file and its own arguments, as a task set names a workload."""

    path: str                    # absolute
    args: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.path

    @property
    def label(self) -> str:
        return shlex.join([Path(self.path).name, *self.args])


@dataclass(frozen=True)
class TaskProgram(_Command):
    """A task's workload that is the user's program, built with ic_task.h: run as it is,
    with the runner's options before its own arguments."""


@dataclass(frozen=True)
class TaskCommand(_Command):
    """A best-effort task's workload that is any program, unmodified: ic-corun re-runs it
    until the other tasks end. Its progress is unknown (it reports no jobs)."""


def measured_regions(store, argv: Sequence[str]) -> dict[str, dict[str, Any]]:
    """What `intercore measure run -- PROG ARGS` measured of this very binary (same sha256) with
    the same arguments, from its newest such run in `store`: per region name, Δ under the
    aggressor set that slowed it most, over the shared regime's pairs where it has any (the
    regime a prediction is for), else over all. Empty when the store holds no such run."""
    exe = Path(argv[0])
    digest = file_sha256(exe)
    command = [str(exe.resolve()), *argv[1:]]
    for inv in sorted(store.invocations(), key=lambda i: -i.id):
        if inv.command != "measure":
            continue
        victims = {w.id: w.name for w in store.workloads_for(inv.id)
                   if w.role == "victim" and w.kind == KIND
                   and w.params.get("sha256") == digest and w.params.get("command") == command}
        if not victims:
            continue
        worst: dict[str, dict[str, Any]] = {}
        for c in comparisons(store.samples_for(inv.id), victims):
            shared = c.by_regime.get("shared")
            r, regime = (shared, "shared") if shared is not None and shared.n else \
                (c.result, None)
            row = {**{k: v for k, v in r.to_dict().items() if k in ("n", "delta", "delta_ci")},
                   "aggressor_set": c.aggressor_set, "regime": regime, "invocation": inv.id}
            if c.region_name not in worst or row["delta"] > worst[c.region_name]["delta"]:
                worst[c.region_name] = row
        return worst
    return {}
