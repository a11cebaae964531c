"""The user's program of examples/user-program (FIR, LUT, PID stages marked with ic_user.h),
built with its own Makefile against the installed kit, as a user builds it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "user-program"
REGIONS = ("fir", "lut", "pid")


def need(cc: str) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed (apt-get install {cc}; .ci/run installs it)")


def build_example(cc: str, into: Path, cflags: str | None = None) -> Path:
    """The example's own Makefile, as a user runs it: pkg-config through `intercore kit`;
    `cflags` replaces its -O2 (-g for the heatmap's source lines)."""
    shutil.copytree(EXAMPLE, into, dirs_exist_ok=True)
    done = subprocess.run(["make", "-C", str(into), f"CC={cc}",
                           f"INTERCORE={sys.executable} -m intercore",
                           *([f"CFLAGS={cflags}"] if cflags else [])],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return into / "control"
