"""Compile generated code with the user's C files and the dataflow runtime into a binary."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import HostUnsupported, InputError
from ..base import stopping
from ..base.procs import ProcessGroup, die_with_parent


def runtime_dir() -> Path:
    """ic_chan.c/.h, installed with the package (CMake puts them in intercore/_runtime)."""
    override = os.environ.get("INTERCORE_RUNTIME_DIR")
    path = Path(override) if override else Path(__file__).resolve().parent.parent / "_runtime"
    if not (path / "ic_chan.c").is_file():
        raise HostUnsupported(f"the dataflow runtime is missing from {path}: reinstall "
                              "intercore with `pip install .`")
    return path


def find_cc(preferred: str | None = None) -> str:
    """The compiler asked for (it must exist: a build with another one would not be what was
    asked), else $CC, cc, gcc or clang, the first found."""
    if preferred is not None:
        if not preferred.strip() or not shutil.which(preferred.split()[0]):
            raise InputError(f"no C compiler {preferred!r} on this host", field="--cc")
        return preferred
    for cc in filter(None, (os.environ.get("CC"), "cc", "gcc", "clang")):
        if shutil.which(cc.split()[0]):
            return cc
    raise HostUnsupported("no C compiler found (install gcc or clang, or set CC)")


def check_sources(sources) -> list[Path]:
    out = []
    for s in sources:
        p = Path(s)
        if not p.is_file():
            raise InputError(f"{p}: no such file", field="--sources")
        if p.suffix not in (".c", ".o", ".a", ".so"):
            raise InputError(f"{p}: expected C sources or objects (.c .o .a .so)",
                             field="--sources")
        out.append(p)
    return out


# Every C file of a program - the user's, the runtime, the C back end's output - is compiled
# with the one compiler find_cc picks and these flags, whichever the back end: the MLIR path
# once compiled the user's C with clang-19 where the C path used gcc, and was "35 % faster"
# for that reason alone (issue 23).
CFLAGS = ("-std=c11", "-O2", "-fopenmp")


@dataclass(frozen=True)
class Compiler:
    command: str      # as given (--cc, $CC) or found
    version: str      # the first line of its --version

    @property
    def said(self) -> str:
        return f"{self.command} {' '.join(CFLAGS)} [{self.version}]"


def compiler(preferred: str | None = None) -> Compiler:
    cc = find_cc(preferred)
    code, out, _ = _run([*shlex.split(cc), "--version"])
    lines = out.strip().splitlines()
    if code != 0 or not lines:  # a build record must say what built the program
        raise InputError(f"`{cc} --version` failed: cannot record which compiler this is",
                         field="--cc")
    return Compiler(cc, lines[0].strip())


def compile_c(c_file: Path, sources: list[Path], out: Path, cc: Compiler) -> list[str]:
    """The C back end: the generated file, the runtime and the user's files in one command."""
    rt = runtime_dir()
    cmd = [*shlex.split(cc.command), *CFLAGS, "-I", str(rt), "-I", str(c_file.parent),
           str(c_file), str(rt / "ic_chan.c"), *map(str, sources), "-o", str(out), "-lm"]
    run(cmd)
    return cmd


def compile_objects(sources: list[Path], work: Path, cc: Compiler) -> tuple[list[Path],
                                                                             list[list[str]]]:
    """For a back end that generates no C: the runtime and the user's .c files as objects,
    by the compiler and flags the C back end uses; objects and libraries pass through."""
    rt = runtime_dir()
    objects, cmds = [], []
    for k, src in enumerate([rt / "ic_chan.c", *sources]):
        if src.suffix != ".c":
            objects.append(src)
            continue
        obj = work / f"{k}-{src.stem}.o"
        cmd = [*shlex.split(cc.command), *CFLAGS, "-I", str(rt), "-I", str(work), "-c",
               str(src), "-o", str(obj)]
        run(cmd)
        objects.append(obj)
        cmds.append(cmd)
    return objects, cmds


def run(cmd: list[str]) -> None:
    code, _, err = _run(cmd)
    if code != 0:
        raise InputError(f"`{' '.join(cmd[:1])}` failed:\n{err.strip()[-4000:]}",
                         field="--sources")


def _run(cmd: list[str]) -> tuple[int, str, str]:
    """Run a compiler in a session of its own, so that a stop kills all it started: the
    driver's cc1, as and ld run on when only the driver is killed, and ld would write the
    binary after the stop removed its temporary name."""
    parent = os.getpid()
    with ProcessGroup() as group:
        # a stop between the fork and adopt() would leave the session to run on unowned:
        # it waits, blocked, until the group has it (the child starts with our usual mask)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping.SIGNALS)

        def child() -> None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            die_with_parent(parent)
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True, preexec_fn=child)
            group.adopt(proc)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        out, err = proc.communicate()
    return proc.returncode, out, err
