"""The demo's user-program stage: the control loop of examples/user-program, built by its own
Makefile against the installed kit (`intercore measure kit` through pkg-config, as a user
builds it), then measured as it is: the paired, interleaved harness runs the binary once per
repetition and reports the regions its markers name (FIR, LUT, PID) beside the whole run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from ..base import examples
from ..base.errors import HostUnsupported
from ..measure.harness.session import Request

# Enough steps that each region takes milliseconds, not so many that 100 pairs take minutes.
ARGS = ("--steps", "2000")


# Every binary the example's Makefile builds (`make` builds them all).
PROGRAMS = ("control", "control_task", "matrix_task", "image_filter")


def build(out: Path, on_phase: Callable[[str], None] | None = None,
          targets: tuple[str, ...] = ("control",)) -> Path:
    """The example's `targets` built under `out`/user-program, the directory returned: `control`,
    measured as it is, or the periodic tasks of examples/systems (PROGRAMS)."""
    source = examples.example("user-program/Makefile", "the example user program").parent
    dest = out / "user-program"
    # Binaries a user built in the checkout are not copied: the demo builds its own.
    shutil.copytree(source, dest, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*PROGRAMS, "*.o"))
    if on_phase:
        on_phase("user program: building examples/user-program with its Makefile")
    # -B: a binary left in `out` by an earlier demo (or by hand) is never taken as built.
    done = subprocess.run(["make", "-B", "-C", str(dest), *targets,
                           f"INTERCORE={sys.executable} -m intercore"],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise HostUnsupported("the example user program did not build here (it needs make, a "
                              "C11 compiler and pkg-config): " + " / ".join(tail))
    return dest


def request(binary: Path, aggressors: tuple[str, ...], runs: int) -> Request:
    return Request(str(binary.resolve()), aggressors=aggressors, runs=runs, args=ARGS)
