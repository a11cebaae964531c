"""Running a compiled program and measuring it: wall time and the child's own rusage
(involuntary context switches are the oversubscription that fusion removes)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import NativeError
from ..base.outputs import write_text


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


def stage_weights(binary: Path, out: Path, runs: int = 3) -> Path:
    """The CPU each stage of a thread-per-node build takes, as a weights file (the heatmap
    schema, `compile build --weights`): the median over `runs` runs of each stage thread's
    time on a CPU (/proc/PID/task/*/schedstat, read every 2 ms while it runs; the runtime
    names a task's thread p_<function>; what a stage runs after its last reading is missed,
    2 ms or, on a loaded host that delays the reader, more). Without them the planner
    balances node counts: on
    the signal pipeline, whose fir is 42 % of the work, it cut the chain 3 + 3 and the fused
    build ran 0.74x the unfused one; planned from these it ran 1.22x (bench/fusion.py)."""
    seen: dict[str, list[float]] = {}
    for _ in range(runs):
        last: dict[tuple[str, str], int] = {}
        with tempfile.TemporaryFile() as errors, \
                subprocess.Popen([str(binary)], stdout=subprocess.DEVNULL, stderr=errors) as proc:
            while proc.poll() is None:
                for tid in _tasks(proc.pid):
                    try:
                        task = Path(f"/proc/{proc.pid}/task/{tid}")
                        name = (task / "comm").read_text().strip()
                        last[(tid, name)] = int((task / "schedstat").read_text().split()[0])
                    except OSError:   # the thread ended between the listing and here
                        pass
                time.sleep(0.002)
            errors.seek(0)
            err = errors.read().decode(errors="replace")
        if proc.returncode != 0:
            raise NativeError(f"{binary} exited with {proc.returncode}: {err[-2000:]}")
        per: dict[str, float] = {}
        for (_, name), ns in last.items():
            if name.startswith("p_"):
                per[name[2:]] = per.get(name[2:], 0.0) + ns / 1e6
        for name, ms in per.items():
            seen.setdefault(name, []).append(ms)
    if not seen:
        raise NativeError(f"{binary} ran no stage thread (p_<function>): not a thread-per-node "
                          "build (compile build --no-fuse --schedule threads)")
    write_text(out, json.dumps({"format": "intercore.heatmap/1", "regions": [
        {"region": name, "delta": 1.0, "weight": statistics.median(ms)}
        for name, ms in sorted(seen.items())]}))
    return out


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:   # the run ended between poll() and here
        return []
