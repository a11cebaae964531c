"""Running a compiled program and measuring it: wall time and the child's own rusage
(involuntary context switches are the oversubscription that fusion removes)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import NativeError


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float
    nivcsw: int      # involuntary context switches (preempted), all threads
    nvcsw: int       # voluntary ones (blocked on a channel, slept)
    stdout: str


def timed_run(binary: Path | list[str], env: dict | None = None, timeout: float = 600.0,
              cpus: set[int] | None = None) -> Run:
    """Run `binary` (or an argv) once; wait4() gives exactly this child's rusage, its
    threads' and those of the children it waited for."""
    argv = [str(a) for a in binary] if isinstance(binary, list) else [str(binary)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        setup = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, preexec_fn=setup,
                                env={**os.environ, **(env or {})})
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise NativeError(f"{argv[0]} exited with {proc.returncode}: "
                              f"{err.read().decode(errors='replace')[-2000:]}")
        return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_nivcsw, usage.ru_nvcsw,
                   out.read().decode(errors="replace"))
