"""Fault drills for the fail-safe: inject each fault the monitor's watchdog must survive, on
real cgroups, and time what the watchdog does about it.

A drill freezes a busy best-effort group through a poll monitor (a busy critical group keeps
it frozen), injects one fault, and reports, from the watchdog's own log, how long after the
fault the group was thawed and, for the faults the monitor lives through, how long after it
resumed it froze the group again:

- `fifo99-hog`: a SCHED_FIFO 99 spinner on the monitor's CPU starves it for `hold_ns`;
- `sigstop`: the monitor is stopped for `hold_ns`, then continued;
- `pgrp-kill`: `kill -9 -PGID` of the monitor's process group (its command's);
- `monitor-kill`: SIGKILL of the monitor alone.

`experiment_drill` kills `intercore mitigate protection` in a given phase and times how
long its groups stay frozen and exist. tests/mitigate/test_failsafe.py asserts on these,
bench/watchdog.py reports their spread. Needs root, the cgroup v2 freezer and two CPUs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ...host.topology import default_placement, read_topology
from ...measure.harness.paired import pinned_to
from ...base.procs import NativeProcess, ProcessGroup, die_with_parent
from ...base.native import bin_dir, tool
from .monitor import Monitor, MonitorSpec, read_log

MS = 1_000_000
FAULTS = ("fifo99-hog", "sigstop", "pgrp-kill", "monitor-kill")
PHASES = ("calibration", "solo", "noise-alone", "interference", "protected")

# A spinner at SCHED_FIFO 99 on one CPU, reporting when it starts (CLOCK_MONOTONIC ns). It
# stays below the kernel's RT throttling budget (950 ms per second by default).
_HOG = """
import os, sys, time
cpu, hold_ns = int(sys.argv[1]), int(sys.argv[2])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(99))
start = time.monotonic_ns()
print(start, flush=True)
while time.monotonic_ns() - start < hold_ns:
    pass
"""


@dataclass(frozen=True)
class DrillResult:
    fault: str
    thaw_ns: int             # fault -> the watchdog's thaw write returned (its own clock)
    refreeze_ns: int | None  # resume -> the monitor froze the group again (hog, sigstop)
    watchdog_rt: bool        # the watchdog ran at SCHED_FIFO


def frozen(group: Path) -> bool:
    """The group is asked to be frozen (v2 cgroup.freeze, or v1 freezer.state)."""
    for name, value in (("cgroup.freeze", "1"), ("freezer.state", "FROZEN")):
        try:
            return (group / name).read_text().strip() == value
        except FileNotFoundError:
            continue
    return False


def wait_until(predicate, timeout: float, what: str, step: float = 0.0002) -> int:
    """Polls; returns the CLOCK_MONOTONIC ns at which the predicate held."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)
    return time.monotonic_ns()


def busy(group: Path, owner: ProcessGroup, size: str = "64K",
         cpu: int | None = None) -> NativeProcess:
    """A spinning ic-aggr bw over `size` bytes inside `group` from its first instruction
    (64K: cache-resident, load on a CPU only; larger than the LLC: a bandwidth aggressor),
    pinned to `cpu` when given."""
    argv = [str(tool("ic-aggr")), "bw", "--size", size,
            *([] if cpu is None else ["--cpu", str(cpu)])]
    parent = os.getpid()

    def join() -> None:
        die_with_parent(parent)
        (group / "cgroup.procs").write_text(str(os.getpid()))

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                            preexec_fn=join)
    process = owner.add(NativeProcess(f"busy in {group.name}", argv, proc))
    process.expect("ready", 30)
    return process


def monitor_spec(critical: Path, best_effort: Path, cpu: int, lease_ns: int,
                 log: Path) -> MonitorSpec:
    """A poll monitor that keeps a busy best-effort group frozen while a busy critical group
    runs (active for as long as its usage moved in the last 200 ms: a shared host may keep
    it waiting that long)."""
    return MonitorSpec(policy="poll", critical=(str(critical),), best_effort=(str(best_effort),),
                       interval_ns=5 * MS, threshold_pct=10, idle_after_ns=200 * MS, cpu=cpu,
                       priority=50, lease_ns=lease_ns, log=str(log))


def _hog(cpu: int, hold_ns: int) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", _HOG, str(cpu), str(hold_ns)],
                            stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def _watchdog_gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}/exe").exists()


def _watchdog_thaws(entries, group: Path, since_ns: int) -> list[int]:
    """When the watchdog thawed `group`, at or after `since_ns`, by its own log."""
    return [e.t_ns for e in entries if e.by == "watchdog" and e.action == "thaw"
            and e.group == str(group) and e.t_ns >= since_ns]


def _wait_for_the_watchdogs_thaw(log: Path, group: Path, since_ns: int) -> None:
    """Waits on the log, not on the group's state: the thaw lasts only until the monitor
    resumes, and a waiter that is off its CPU for that long (on the hog's CPU, or on a loaded
    host) would never see it and wait for a thaw that already happened."""
    wait_until(lambda: _watchdog_thaws(read_log(log, growing=True), group, since_ns), 5,
               "the watchdog's thaw")


def drill(fault: str, critical: Path, best_effort: Path, *, cpu: int, log: Path,
          lease_ns: int = 50 * MS, hold_ns: int = 300 * MS) -> DrillResult:
    """One fault against a monitor freezing `best_effort` (both groups must be empty v2
    cgroups); the groups are left thawed and empty of the drill's processes."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    refreeze_ns = None
    with ProcessGroup() as owner:
        busy(critical, owner)
        busy(best_effort, owner)
        monitor = Monitor.start(monitor_spec(critical, best_effort, cpu, lease_ns, log), owner,
                                session=True)
        wait_until(lambda: frozen(best_effort), 10, "the freeze")
        if fault == "fifo99-hog":
            hog, fault_ns = _hog(cpu, hold_ns)
            _wait_for_the_watchdogs_thaw(log, best_effort, fault_ns)
            hog.wait()
            hog.stdout.close()
            resumed_ns = fault_ns + hold_ns  # when it stopped spinning
            wait_until(lambda: frozen(best_effort), 10, "the monitor's refreeze")
        elif fault == "sigstop":
            fault_ns = time.monotonic_ns()
            os.kill(monitor.pid, signal.SIGSTOP)
            try:
                _wait_for_the_watchdogs_thaw(log, best_effort, fault_ns)
                time.sleep(max(0.0, (fault_ns + hold_ns - time.monotonic_ns()) / 1e9))
            finally:
                resumed_ns = time.monotonic_ns()  # before: the monitor may act at once
                os.kill(monitor.pid, signal.SIGCONT)
            wait_until(lambda: frozen(best_effort), 10, "the monitor's refreeze")
        else:
            fault_ns = time.monotonic_ns()
            if fault == "pgrp-kill":
                os.killpg(os.getpgid(monitor.pid), signal.SIGKILL)
            else:
                os.kill(monitor.pid, signal.SIGKILL)
            _wait_for_the_watchdogs_thaw(log, best_effort, fault_ns)
        if fault in ("fifo99-hog", "sigstop"):
            monitor.stop()
        else:
            monitor.process.kill()
        wait_until(lambda: _watchdog_gone(monitor.watchdog_pid), 5, "the watchdog to exit",
                   step=0.005)
    entries = read_log(log)
    thaws = _watchdog_thaws(entries, best_effort, fault_ns)
    if fault in ("fifo99-hog", "sigstop"):
        # Any freeze of the monitor's after it resumed: a re-arm of the freeze the watchdog
        # undid, or a fresh one when the critical work itself was held off its CPU as long.
        rearm = [e.t_ns for e in entries if e.action == "freeze" and e.by == "monitor"
                 and e.t_ns >= resumed_ns]
        refreeze_ns = rearm[0] - resumed_ns if rearm else None
    return DrillResult(fault=fault, thaw_ns=thaws[0] - fault_ns if thaws else None,
                       refreeze_ns=refreeze_ns, watchdog_rt=bool(monitor.ready["watchdog_rt"]))


# ---- the protection experiment ------------------------------------------------------------------

@dataclass(frozen=True)
class ExperimentDrillResult:
    phase: str
    thaw_ns: int | None    # kill -> no group frozen (None: none was frozen at the kill)
    removed_ns: int | None  # kill -> no group of its root in any hierarchy (None: it had none)
    exit_ns: int            # kill -> the killed process reaped: the kernel's share of the time
    leftovers: tuple[str, ...]  # what was still there 5 s after the kill


def _children(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        found += map(int, kids)
        todo += map(int, kids)
    return found


def _runner_names(pid: int) -> set[str]:
    """--name of every ic-periodic below pid."""
    names = set()
    for child in _children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ic-periodic") and b"--name" in argv:
            names.add(argv[argv.index(b"--name") + 1].decode())
    return names


def _phase(pid: int, roots: list[Path]) -> str | None:
    if any(r.exists() for r in roots):
        return "protected"
    names = _runner_names(pid)
    return {frozenset({"calibration"}): "calibration", frozenset({"victim"}): "solo",
            frozenset({"noise"}): "noise-alone",
            frozenset({"victim", "noise"}): "interference"}.get(frozenset(names))


def _cgroup_mounts() -> list[Path]:
    return [Path(line.split()[1]) for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[2] in ("cgroup", "cgroup2")]


def _native_left(since_pids: set[int]) -> list[str]:
    root = bin_dir().resolve()
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in since_pids:
            try:
                exe = Path(os.readlink(entry / "exe"))
            except OSError:
                continue
            if exe.parent == root:
                left.append(f"{exe.name} (pid {entry.name})")
    return left


def experiment_drill(phase: str, root_name: str, work_dir: Path, timeout: float = 300.0,
                     attempts: int = 3) -> ExperimentDrillResult:
    """Runs `intercore mitigate protection --quick --placement same-core` and SIGKILLs its
    whole process group once it reaches `phase` (in the protected phase: once the noise
    group has been frozen). Times the thaw and the removal of its cgroups by its watchdog.
    A run that ends before the kill could be aimed (the phase passed between two looks, or
    the measured interference did not call for protection) is run again, `attempts` times
    in all; then RuntimeError."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; one of {', '.join(PHASES)}")
    for attempt in range(attempts):
        try:
            return _experiment_drill(phase, root_name, work_dir, timeout)
        except _Missed:
            if attempt == attempts - 1:
                raise RuntimeError(f"the experiment ended before reaching {phase}, "
                                   f"{attempts} times") from None
    raise AssertionError("unreachable")


class _Missed(RuntimeError):
    """The run ended before it could be killed in the phase."""


def _watch(proc: subprocess.Popen, phase: str, roots: list[Path], frozen_now,
           timeout: float) -> None:
    """Until the experiment is in `phase` (in the protected phase: with the noise frozen)."""
    deadline = time.monotonic() + timeout
    while _phase(proc.pid, roots) != phase or (phase == "protected" and not frozen_now()):
        if proc.poll() is not None:
            if proc.returncode:
                raise RuntimeError(f"the experiment failed (exit {proc.returncode})")
            raise _Missed
        if time.monotonic() > deadline:
            raise TimeoutError(f"the experiment did not reach {phase} in {timeout} s")
        # Freezes last one victim job (a few ms): look often once the groups exist.
        time.sleep(0.0001 if phase == "protected" and any(r.exists() for r in roots)
                   else 0.001)


def _experiment_drill(phase: str, root_name: str, work_dir: Path,
                      timeout: float) -> ExperimentDrillResult:
    roots = [m / root_name for m in _cgroup_mounts()]
    noise = [r / "noise" for r in roots]
    before = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}
    argv = [sys.executable, "-m", "intercore", "mitigate", "protection", "--quick",
            "--placement", "same-core", "--root", root_name, "--out", str(work_dir / "out"),
            "--db", str(work_dir / "drill.db"), "--json"]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def frozen_now() -> bool:
        return any(g.exists() and frozen(g) for g in noise)

    # Watch from the CPU the same-core placement leaves to the monitor: on the victim's CPU
    # the watcher would run only while the SCHED_FIFO victim is idle, which is exactly when
    # the noise is thawed, and would never see a freeze (it missed three runs in a row
    # beside a CPU hog, which keeps the load balancer from moving it).
    _, others = default_placement(read_topology())
    try:
        with pinned_to(others[0]):
            _watch(proc, phase, roots, frozen_now, timeout)
            was_frozen = frozen_now()
            had_root = any(r.exists() for r in roots)
            killed_ns = time.monotonic_ns()
            os.killpg(proc.pid, signal.SIGKILL)
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    proc.wait()
    exit_ns = time.monotonic_ns() - killed_ns

    def poll(predicate) -> int | None:
        try:
            return wait_until(predicate, 5, "the watchdog") - killed_ns
        except TimeoutError:
            return None
    thaw = poll(lambda: not frozen_now()) if was_frozen else None
    removed = poll(lambda: not any(r.exists() for r in roots)) if had_root else None
    time.sleep(0.2)  # the children's own exit, after their parent's
    leftovers = tuple(str(r) for r in roots if r.exists()) + tuple(_native_left(before))
    return ExperimentDrillResult(phase=phase, thaw_ns=thaw, removed_ns=removed,
                                 exit_ns=exit_ns, leftovers=leftovers)
