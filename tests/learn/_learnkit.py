"""Helpers of the learning stage's tests. They need its extra (JAX, capstone, pyelftools,
scikit-learn) and, to trace, Valgrind; CI installs both (.ci/run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from intercore.learn import tracer
from intercore.learn.programs import compiler, kit_dir

needs_tracer = pytest.mark.skipif(tracer.available() is not None,
                                  reason=f"no tracer here: {tracer.available()}")


def compile_c(source: str, into: Path, name: str = "prog", flags: tuple[str, ...] = ("-O1",)
              ) -> Path:
    """A C program built with -g against the kit's headers (ic_mark.h, ic_arch.h)."""
    src = into / f"{name}.c"
    src.write_text(source)
    exe = into / name
    subprocess.run([compiler(), "-std=gnu11", "-g", *flags, "-I", str(kit_dir() / "include"),
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    return exe


def intercore(*args: str, env: dict | None = None, timeout: float = 600
              ) -> subprocess.CompletedProcess:
    """`intercore learn ARGS` in a child process."""
    import os
    import sys

    return subprocess.run([sys.executable, "-m", "intercore", "learn", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def in_child(fn, *args):
    """fn(*args) in a fresh interpreter (spawned, not forked), its result returned."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)
