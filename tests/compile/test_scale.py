"""A generated 200-node graph (issue 23: compile time <= 5 s, which bench/fusion.py measures
on the host) compiles in bounded work, and a stop during its compile ends it at once and
leaves nothing: no compiler process, no OUT, no OUT.build, no temporary file.

The bound here is CPU time of this process, not wall time, and 30 s where the compile takes
about 2.5 s on this 2-vCPU host (the planner was cubic: minutes): load from other tenants
stretches the wall clock, not the CPU time a compile spends."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.compile import pipeline, synthetic

NODES = 200
CPU_BOUND_S = 30.0
STOP_BOUND_S = 5.0   # the goal is 1 s; this bound leaves room for a loaded host's scheduling


@pytest.mark.slow
def test_a_200_node_graph_compiles_in_bounded_cpu_time(tmp_path) -> None:
    comp, _ = synthetic.write(tmp_path, NODES)
    start = time.process_time()
    c = pipeline.compile_file(comp, pipeline.Options(cpus=2))
    for stage in ("c", "mlir"):
        assert pipeline.emit(c, stage)
    spent = time.process_time() - start
    assert len(c.graph.nodes) == NODES
    assert sorted(n for p in c.processes for n in p.nodes) == sorted(c.graph.nodes)
    assert spent < CPU_BOUND_S, f"{NODES} nodes took {spent:.1f} s of CPU"


# A compiler whose work outlives its driver, as cc1, as and ld do: a child of its own that
# the stop must kill too. It says where that child is once it runs.
SLOW_CC = """#!/bin/sh
if [ "$1" = "--version" ]; then exec cc --version; fi
sleep 300 &
echo $! > "{pidfile}"
wait
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _caught_stops(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return int(status.split("SigCgt:")[1].split()[0], 16) >> (signal.SIGTERM - 1) & 1 == 1


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["planning", "compiling"])
def test_a_stop_during_a_big_compile_is_prompt_and_leaves_nothing(tmp_path, sig,
                                                                  moment) -> None:
    comp, c_src = synthetic.write(tmp_path, NODES)
    pidfile = tmp_path / "cc.pid"
    cc = tmp_path / "slowcc"
    cc.write_text(SLOW_CC.format(pidfile=pidfile))
    cc.chmod(0o755)
    before = set(tmp_path.iterdir())
    proc = subprocess.Popen([sys.executable, "-m", "intercore", "compile", "build", str(comp), "-s",
                             str(c_src), "-o", str(tmp_path / "out"), "--cc", str(cc)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        ready = (lambda: pidfile.exists() and pidfile.read_text().strip()) \
            if moment == "compiling" else (lambda: _caught_stops(proc.pid))
        while not ready():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"never reached {moment}"
            time.sleep(0.01)
        if moment == "planning":
            time.sleep(1.0)   # past the imports, into parsing and planning
            assert not pidfile.exists(), "the compile reached the compiler: stop it earlier"
        sent = time.monotonic()
        proc.send_signal(sig)
        err = proc.communicate(timeout=60)[1]
        latency = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert err.splitlines()[-1].startswith("stopped by"), err
    assert "Traceback" not in err, err
    assert latency < STOP_BOUND_S, f"stopped {latency:.2f} s after the signal"
    if moment == "compiling":
        child = int(pidfile.read_text())
        deadline = time.monotonic() + 2
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _alive(child), "the compiler's child outlived the stop"
    assert set(tmp_path.iterdir()) - {pidfile} == before
