"""Compile generated code with the user's C files and the dataflow runtime into a binary."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from ..errors import HostUnsupported, InputError


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


def compile_c(c_file: Path, sources: list[Path], out: Path, cc: str | None = None,
              cflags: tuple[str, ...] = ("-O2",), extra: tuple[Path, ...] = ()) -> list[str]:
    """cc -fopenmp: the generated file, the runtime, the user's files. Returns the command."""
    rt = runtime_dir()
    compiler = find_cc(cc)
    cmd = [*shlex.split(compiler), "-std=c11", *cflags, "-fopenmp", "-I", str(rt),
           "-I", str(c_file.parent), str(c_file), *map(str, extra), str(rt / "ic_chan.c"),
           *map(str, sources), "-o", str(out), "-lm"]
    run(cmd)
    return cmd


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"`{' '.join(cmd[:1])}` failed:\n{proc.stderr.strip()[-4000:]}",
                         field="--sources")
