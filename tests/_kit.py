"""The example user program (examples/user-program/) built as a user builds it: its own
Makefile, the kit found through `intercore measure kit`, strict C11. Shared by the tests that
measure it (tests/cli/test_user_program.py) and run it as a periodic task (tests/mitigate)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.tour.user_program import PROGRAMS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "user-program"
COMPILERS = ("gcc", "clang-19")
REGIONS = ("fir", "lut", "pid")  # what control.c's markers name
STRICT = ("-std=c11", "-Wall", "-Wextra", "-Werror")


def need(cc: str) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (apt-get install {cc}; .ci/run installs it)")


def build_example(cc: str, into: Path, cflags: str | None = None) -> Path:
    """The example's programs, by its own Makefile as a user runs it (pkg-config through
    `intercore measure kit`); returns the directory that holds them (`control`, `control_task`
    and PROGRAMS' others). `cflags` replaces the Makefile's -O2 (-g for the heatmap's lines)."""
    # Not the binaries of a build in the checkout (`make -C examples/user-program`): make
    # would take them as up to date, built from the checkout's sources, not these.
    shutil.copytree(EXAMPLE, into, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*PROGRAMS))
    done = subprocess.run(["make", "-C", str(into), f"CC={cc}",
                           f"INTERCORE={sys.executable} -m intercore",
                           *([f"CFLAGS={cflags}"] if cflags else [])],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return into
