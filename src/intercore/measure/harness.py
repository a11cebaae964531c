"""The paired interference harness.

One victim process runs every repetition of the invocation (`ic-victim --sync`). For each
aggressor set, its aggressors are started once, stay resident, and are toggled between
running and paused (a paused aggressor spins on registers, so it still holds its CPU) before
each repetition. Every pair is one isolated and one interfered repetition, back to back, in an
order drawn at random, so both halves of a pair see the same host placement and tenants.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from ..errors import NativeError
from .control import ControlBlock
from .presets import AggressorSet, AggressorSpec
from .procs import NativeProcess, ProcessGroup, die_with_parent, shm_path
from .sample import INT, ISO, Sample

# A repetition of any sensible victim finishes well within this; a hung one is an error.
REP_TIMEOUT_S = 600.0
# Aggressors fault in and link up to twice the LLC before they say ready.
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class VictimSpec:
    kind: str
    params: tuple[tuple[str, str], ...] = ()
    name: str = ""  # what the user called it (matrix1, ptrchase:size=8M); the label if empty

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        args = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.kind}({args})" if args else self.kind

    def argv(self) -> list[str]:
        out = [self.kind]
        for k, v in self.params:
            out += [f"--{k}", v]
        return out

    def to_dict(self) -> dict:
        return {"kind": self.kind, "params": dict(self.params), "label": self.label}


@dataclass(frozen=True)
class Plan:
    victim: VictimSpec
    sets: tuple[AggressorSet, ...]
    runs: int
    victim_cpu: int
    victim_priority: int = 0
    aggressor_priority: int = 0
    seed: int = 1

    @property
    def total_reps(self) -> int:
        return 2 * self.runs * len(self.sets)


@dataclass
class Outcome:
    plan: Plan
    samples: list[Sample]
    victim_info: dict
    aggressor_stats: dict[str, list[dict]]
    started_at: float
    finished_at: float


@contextmanager
def pinned_to(cpu: int) -> Iterator[None]:
    """Keep the harness itself off the aggressor CPUs while it waits for the victim."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _priority_args(prio: int) -> list[str]:
    return ["--rt-priority", str(prio)] if prio > 0 else []


class _NativeMember:
    """An ic-aggr process switched through its shared control block."""

    def __init__(self, proc: NativeProcess, path) -> None:
        self.proc = proc
        proc.expect("ready", READY_TIMEOUT_S)
        self.control = ControlBlock(path)
        path.unlink()  # both sides hold the mapping; nothing is left behind even on SIGKILL

    def running(self, on: bool) -> None:
        self.control.resume(timeout=2.0) if on else self.control.pause(timeout=2.0)

    def bytes_moved(self) -> int:
        return self.control.bytes

    def stop(self) -> dict:
        self.control.stop()
        lines = self.proc.finish(timeout=10.0)
        final = [ln for ln in lines if ln.get("event") == "stats"]
        if not final:
            raise NativeError(f"{self.proc.name} stopped without its statistics line")
        return final[-1]

    def close(self) -> None:
        self.control.close()


class _ExternalMember:
    """A foreign stressor (stress-ng ...): SIGSTOP/SIGCONT on its process group, with a paused
    ic-aggr as the register-only spinner that holds the CPU while it is stopped."""

    def __init__(self, spec: AggressorSpec, group: ProcessGroup, path) -> None:
        self.spec = spec
        cpu, parent = spec.cpu, os.getpid()

        def child_setup() -> None:
            die_with_parent(parent)
            os.sched_setaffinity(0, {cpu})

        self.proc = subprocess.Popen(spec.argv(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True,
                                     start_new_session=True, preexec_fn=child_setup)
        group.adopt(self.proc)
        spinner = group.add(NativeProcess.start(
            "ic-aggr", ["bw", "--op", "read", "--size", "4K", "--cpu", str(cpu),
                        "--control", str(path)], name=f"spinner for {spec.label}"))
        self.spinner = _NativeMember(spinner, path)
        self.spinner.running(False)
        self.started = time.monotonic()

    def running(self, on: bool) -> None:
        if self.proc.poll() is not None:
            raise NativeError(f"{self.spec.label} exited early: {self.proc.stderr.read()}")
        if on:
            os.kill(self.spinner.proc.pid, signal.SIGSTOP)
            os.killpg(self.proc.pid, signal.SIGCONT)
        else:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            os.kill(self.spinner.proc.pid, signal.SIGCONT)

    def bytes_moved(self) -> int:
        return 0  # not observable from outside without a PMU

    def stop(self) -> dict:
        os.killpg(self.proc.pid, signal.SIGCONT)
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.kill(self.spinner.proc.pid, signal.SIGCONT)
        self.spinner.stop()
        return {"event": "stats", "kind": "cmd", "command": list(self.spec.command),
                "cpu": self.spec.cpu, "duration_s": time.monotonic() - self.started}

    def close(self) -> None:
        self.spinner.close()


OnStart = Callable[[str, int], None]


class _ResidentSet:
    """The aggressors of one set, started once and switched between running and paused."""

    def __init__(self, aset: AggressorSet, group: ProcessGroup, prio: int, tag: str,
                 on_start: OnStart | None = None):
        self.aset = aset
        self.members: list[_NativeMember | _ExternalMember] = []
        self.paths = [shm_path(f"{tag}-{i}") for i in range(len(aset.members))]
        try:
            started = []
            for member, path in zip(aset.members, self.paths):
                if member.kind == "cmd":
                    started.append((None, member, path))
                    continue
                args = member.argv() + ["--cpu", str(member.cpu), "--control", str(path),
                                        *_priority_args(prio)]
                proc = group.add(NativeProcess.start(
                    "ic-aggr", args, name=f"aggressor {member.label}"))
                if on_start:
                    on_start("aggressor", proc.pid)
                started.append((proc, member, path))
            # Start every process first, then wait: their initialisations overlap.
            for proc, member, path in started:
                self.members.append(_ExternalMember(member, group, path) if proc is None
                                    else _NativeMember(proc, path))
                if on_start and proc is None:
                    on_start("aggressor", self.members[-1].proc.pid)
        except BaseException:
            self.close()
            raise

    def running(self, on: bool) -> None:
        for m in self.members:
            m.running(on)

    def bytes_moved(self) -> int:
        return sum(m.bytes_moved() for m in self.members)

    def stop(self) -> list[dict]:
        stats = [m.stop() for m in self.members]
        self.close()
        return stats

    def close(self) -> None:
        for m in self.members:
            m.close()
        for path in self.paths:
            path.unlink(missing_ok=True)


def run(plan: Plan, on_rep: Callable[[int, int], None] | None = None,
        on_start: OnStart | None = None) -> Outcome:
    """Run the plan; `on_rep(done, total)` reports progress. `on_start(role, pid)` is called
    for every workload process right after it is spawned, while it is still initialising and
    before any measured repetition (an enforcement backend moves it into its resctrl or cgroup
    group there); role is "victim" or "aggressor". Raises on any native failure, leaving no
    child process and no control file behind."""
    rng = random.Random(plan.seed)
    started = time.time()
    meta: dict[int, tuple[int, str, str, int]] = {}
    aggressor_stats: dict[str, list[dict]] = {}
    residents: list[_ResidentSet] = []
    with ProcessGroup() as group, pinned_to(plan.victim_cpu):
        try:
            victim = group.add(NativeProcess.start(
                "ic-victim",
                plan.victim.argv() + ["--reps", str(plan.total_reps), "--sync",
                                      "--cpu", str(plan.victim_cpu), "--seed", str(plan.seed),
                                      *_priority_args(plan.victim_priority)],
                name=f"victim {plan.victim.label}", stdin=True))
            if on_start:
                on_start("victim", victim.pid)
            ready = victim.expect("ready", READY_TIMEOUT_S)
            rep = 0
            for s, aset in enumerate(plan.sets):
                resident = _ResidentSet(aset, group, plan.aggressor_priority, f"{s}", on_start)
                residents.append(resident)
                for pair in range(plan.runs):
                    order = [ISO, INT]
                    rng.shuffle(order)
                    for cond in order:
                        resident.running(cond == INT)
                        before = resident.bytes_moved()
                        victim.send("go")
                        victim.expect("rep", REP_TIMEOUT_S)
                        meta[rep] = (s * plan.runs + pair, cond, aset.label,
                                     resident.bytes_moved() - before)
                        rep += 1
                        if on_rep:
                            on_rep(rep, plan.total_reps)
                aggressor_stats[aset.label] = resident.stop()
            lines = victim.finish(timeout=60.0)
        finally:
            for r in residents:
                r.close()
    samples = parse_samples(lines, meta)
    end = next((ln for ln in reversed(lines) if ln.get("event") == "end"), {})
    info = {"ready": ready, "end": end}
    return Outcome(plan, samples, info, aggressor_stats, started, time.time())


def parse_samples(lines: list[dict], meta: dict[int, tuple[int, str, str, int]]
                  ) -> list[Sample]:
    """The victim's sample lines as samples; `meta[rep]` is (pair, condition, aggressor set,
    bytes the aggressors moved) of repetition `rep`."""
    out = []
    for ln in lines:
        if ln.get("event") != "sample":
            continue
        pair, cond, label, moved = meta[ln["rep"]]
        counters = dict(ln.get("counters") or {})
        if ln["region"] == 0 and cond == INT:
            counters["aggressor_bytes"] = moved
        out.append(Sample(victim=0, rep=ln["rep"], pair=pair, condition=cond,
                          aggressor_set=label if cond == INT else "", region=ln["region"],
                          region_name=ln["name"], wall_ns=ln["wall_ns"], cpu_ns=ln["cpu_ns"],
                          nivcsw=ln.get("nivcsw", -1), cpu=ln.get("cpu", -1),
                          counters=counters))
    return out
