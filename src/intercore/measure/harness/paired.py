"""The paired interference harness.

One victim process runs every repetition of the invocation (`ic-victim --sync`). Every
aggressor set is started once and stays resident for the whole run. The sets take turns in
randomised blocks of a few pairs (measure/harness/schedule.py): the set whose block it is is toggled
between running and paused (a paused aggressor spins on registers, so it still holds its CPU)
before each repetition; every other set is parked (SIGSTOP), so it neither moves memory nor
competes for its CPU. Every pair is one isolated and one interfered repetition, back to back,
in a random order, so both halves of a pair see the same host placement and tenants, and the
blocks spread every set over the same stretch of time, so all sets meet the same host regimes.

Between blocks, a running canary (a resident shared-cache-sized chase and a write thrasher,
parked the rest of the time) takes a short probe; a block's regime is what the probes on both
sides of it saw, and every sample carries the regime, the block and the block's start time.
A core probe (register-only work beside a register-only spinner, `CorePlan`) does the same
for whether the victim's CPU and the aggressor CPU are hardware threads of one core.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

import numpy as np

from ...base.errors import HostUnsupported, NativeError
from ...host.features import parse_meminfo
from . import schedule as sched
from ..aggressors.control import ControlBlock
from ..aggressors.presets import AggressorSet, AggressorSpec
from ...base.procs import NativeProcess, ProcessGroup, SharedFile, die_with_parent, shm_path
from ...base.sample import INT, ISO, Condition, Sample
from .schedule import BlockSize
from .stats import compare, wilson_interval

SHARED, NOT_SHARED, UNKNOWN = "shared", "not-shared", "unknown"
REGIMES = (SHARED, NOT_SHARED, UNKNOWN)
# Whether the victim's CPU and the aggressor CPU share a physical core right now (SMT
# siblings, which a hypervisor may not show): a state of its own beside the cache regime.
SAME_CORE, SEPARATE_CORES = "same-core", "separate-cores"
CORE_STATES = (SAME_CORE, SEPARATE_CORES, UNKNOWN)
# The core probe's paired slowdown at or above which the CPUs share a core, and below which
# they do not. Register-only work on a core of its own is slowed by nothing a spinner does on
# another core (no shared resource), so its pairs read 1.0 up to the host's noise; a sibling
# spinner takes issue slots and half the core's buffers (issue 24: a busy-wait sampler slowed
# a compute-bound matmul 1.6x).
CORE_SHARED_AT = 1.2
CORE_SEPARATE_BELOW = 1.1
# Walks of the core probe's victim per half: the first lets the spinner get back onto its
# CPU after SIGCONT (and the victim's code into its caches) and is not counted; the half is
# the fastest of the others (`fastest_after_first`).
CORE_WALKS = 3
# Paired-median slowdown of the canary at or above which the cache is taken as shared, and
# below which it is taken as not shared; in between the probe does not decide. A settled
# probe's median reads 0.96-1.05 where nothing interferes (docs/canary.md); 1.2 leaves room
# for a noisy host (the simulated one in tests/measure/test_canary.py: 1.16 at p95).
SHARED_AT = 1.3
NOT_SHARED_BELOW = 1.2
# Two walks of a settled chase agree within this (a cold one is 2-4x slower, docs/canary.md);
# the first walk that may settle a half is this one.
SETTLE_TOL = 0.1
SETTLE_FROM = 3
# Unrecorded repetitions before the schedule: they warm the victim up and time a repetition.
CALIBRATION_REPS = 2
# A foreign stressor (`cmd:`) says nothing when it is ready: stress-ng forks its workers and
# faults in its buffers after it starts. It gets this long before its set is paused.
EXTERNAL_SETTLE_S = 1.0
# A repetition of any sensible victim finishes well within this; a hung one is an error.
REP_TIMEOUT_S = 600.0
# Aggressors fault in and link up to twice the LLC before they say ready.
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class VictimSpec:
    kind: str
    params: tuple[tuple[str, str], ...] = ()
    name: str = ""  # what the user called it (matrix1, ptrchase:size=8M); the label if empty
    # A program following the victim contract instead of ic-victim (generated kernels).
    executable: str = "ic-victim"
    # A user's own program and its arguments, run by ic-run once per repetition.
    command: tuple[str, ...] = ()
    # The program's sha256 when measured: which binary the stored samples are of.
    digest: str = ""

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

    def launch(self, harness: list[str]) -> list[str]:
        """The executable's arguments: the kind and its options, then the harness's; ic-run
        takes the harness's options first and the user's program after `--`."""
        return [*harness, "--", *self.command] if self.command else [*self.argv(), *harness]

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "params": dict(self.params), "label": self.label}
        if not self.command:
            return d
        return {**d, "command": list(self.command), **({"sha256": self.digest}
                                                       if self.digest else {})}


@dataclass(frozen=True)
class CanaryPlan:
    """The running canary: `pairs` pairs of `victim` against `thrasher` between blocks, and
    up to `max_pairs` when the first ones disagree (classify_probe: a probe stops as soon as
    its pairs decide unanimously). Each half of a pair walks the chase up to `settle_walks`
    times, the thrasher running or paused throughout, and records the walk that agrees with
    the one before it (`settle`); `accesses` per walk turn its time into ns per access."""

    victim: VictimSpec
    thrasher: AggressorSpec
    pairs: int = 3
    max_pairs: int | None = None  # None: exactly `pairs`
    settle_walks: int = 2
    accesses: int = 1  # 1: the probe's times are per walk

    def __post_init__(self) -> None:
        if self.settle_walks < 2 or self.accesses < 1:
            raise ValueError("a canary half needs at least two walks and one access")

    @property
    def most_pairs(self) -> int:
        return max(self.pairs, self.max_pairs or self.pairs)


@dataclass(frozen=True)
class CorePlan:
    """The core probe: `pairs` pairs (up to `max_pairs` while they disagree) of a register-only
    `victim` on the victim's CPU, alone and beside `spinner` (an aggressor left paused: it
    spins on registers and moves no memory) on the aggressor CPU. Alone, the spinner is
    parked (stopped), so the other CPU runs whatever the host puts there."""

    victim: VictimSpec
    spinner: AggressorSpec
    pairs: int = 2
    max_pairs: int = 5


@dataclass(frozen=True)
class Plan:
    """`runs` pairs per set, or adaptively at least `runs` and at most `max_runs`: with
    `until_ci` a set stops once the CI half-width of its Δ (region 0, over its pairs in
    `stop_regime` when given) is at most that fraction of Δ; with `until_pairs`, once it has
    that many pairs (in `stop_regime`); with both, once both hold. `block_pairs` None: chosen
    from the measured switch cost."""

    victim: VictimSpec
    sets: tuple[AggressorSet, ...]
    runs: int
    victim_cpu: int
    victim_priority: int = 0
    aggressor_priority: int = 0
    seed: int = 1
    block_pairs: int | None = None
    canary: CanaryPlan | None = None
    core: CorePlan | None = None
    clock: str = "cpu"
    until_ci: float | None = None
    max_runs: int | None = None
    stop_regime: str | None = None
    # Pairs per set, in set order, where sets need different numbers (a campaign's solo
    # baseline beside its interference setups); None: `runs` (or up to `max_runs`) each.
    set_runs: tuple[int, ...] | None = None
    until_pairs: int | None = None

    def __post_init__(self) -> None:
        if self.set_runs is not None and (len(self.set_runs) != len(self.sets)
                                          or self.adaptive):
            raise ValueError("set_runs needs one count per set and no adaptive stopping")

    @property
    def adaptive(self) -> bool:
        return self.until_ci is not None or self.until_pairs is not None

    @property
    def most_runs(self) -> int:
        return self.max_runs if self.adaptive and self.max_runs else self.runs

    def pairs_of(self, s: int) -> int:
        """The pairs set `s` gets at most."""
        return self.set_runs[s] if self.set_runs is not None else self.most_runs

    @property
    def total_reps(self) -> int:
        """Measured repetitions at most (adaptive stopping may end sooner)."""
        return 2 * sum(self.pairs_of(s) for s in range(len(self.sets)))


@dataclass(frozen=True)
class Probe:
    """One canary probe between blocks: its paired ratios, the isolated half's ns per access
    of each pair (the chase's own level: cache or memory speed), and what they say; it ran
    from `start_ns` to `at_ns` (ns since the run started)."""

    at_ns: int
    regime: str
    ratios: tuple[float, ...]
    start_ns: int = 0
    iso_ns: tuple[float, ...] = ()

    def to_dict(self) -> dict:
        return {"start_ns": self.start_ns, "at_ns": self.at_ns, "regime": self.regime,
                "ratios": list(self.ratios), "iso_ns": list(self.iso_ns)}


@dataclass(frozen=True)
class BlockRecord:
    index: int
    round: int
    aggressor_set: str
    start_ns: int
    end_ns: int
    pairs: int
    regime: str
    bytes_moved: dict[str, int]  # every set's byte counters over the block
    core: str = UNKNOWN  # whether the CPUs shared a core around it (CORE_STATES)

    def to_dict(self) -> dict:
        return {"index": self.index, "round": self.round, "aggressor_set": self.aggressor_set,
                "start_ns": self.start_ns, "end_ns": self.end_ns, "pairs": self.pairs,
                "regime": self.regime, "core": self.core, "bytes_moved": self.bytes_moved}


@dataclass
class Outcome:
    plan: Plan
    samples: list[Sample]
    victim_info: dict
    aggressor_stats: dict[str, list[dict]]
    started_at: float
    finished_at: float
    blocks: list[BlockRecord] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    block_size: BlockSize | None = None
    stopped: dict[str, str] = field(default_factory=dict)  # set -> why it stopped when it did
    canary_info: dict = field(default_factory=dict)
    core_probes: list[Probe] = field(default_factory=list)  # `regime`: a CORE_STATES value


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


def _wait_stopped(pid: int, timeout: float = 2.0) -> None:
    """SIGSTOP is asynchronous: return once the kernel shows the task stopped, so a parked
    aggressor is not still spinning when the next repetition starts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            state = "X"
        if state in ("T", "t"):
            return
        if state in ("Z", "X"):  # dead (the same Ctrl-C reaches it): its group reaps it
            raise NativeError(f"pid {pid} exited while being parked")
        if time.monotonic() >= deadline:
            raise NativeError(f"pid {pid} did not stop within {timeout} s (state {state})")
        time.sleep(0.0002)


class _NativeMember:
    """An ic-aggr process switched through its shared control block."""

    def __init__(self, proc: NativeProcess, path) -> None:
        self.proc = proc
        proc.expect("ready", READY_TIMEOUT_S)
        self.control = ControlBlock(path)
        path.unlink()  # both sides hold the mapping; nothing is left behind even on SIGKILL
        self.parked = False

    def running(self, on: bool) -> None:
        self.control.resume(timeout=2.0) if on else self.control.pause(timeout=2.0)

    def park(self, on: bool) -> None:
        """Parked: stopped by the kernel, so it holds no CPU; unparked it spins, paused."""
        if on == self.parked:
            return
        os.kill(self.proc.pid, signal.SIGSTOP if on else signal.SIGCONT)
        if on:
            _wait_stopped(self.proc.pid)
        self.parked = on

    def bytes_moved(self) -> int:
        return self.control.bytes

    def stop(self) -> dict:
        self.park(False)
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
        assert cpu is not None  # placed: every member of a started set has its CPU

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
            assert self.proc.stderr is not None  # started with stderr=PIPE
            raise NativeError(f"{self.spec.label} exited early: {self.proc.stderr.read()}")
        if on:
            os.kill(self.spinner.proc.pid, signal.SIGSTOP)
            os.killpg(self.proc.pid, signal.SIGCONT)
        else:
            os.killpg(self.proc.pid, signal.SIGSTOP)
            os.kill(self.spinner.proc.pid, signal.SIGCONT)

    def park(self, on: bool) -> None:
        """The stressor is already stopped while paused; parking stops its spinner too."""
        self.spinner.park(on)

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
        self.spinner.park(False)
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
            started: list[tuple[NativeProcess | None, AggressorSpec, SharedFile]] = []
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
            for native, member, path in started:
                self.members.append(_ExternalMember(member, group, path) if native is None
                                    else _NativeMember(native, path))
                if on_start and native is None:
                    on_start("aggressor", self.members[-1].proc.pid)
            if any(proc is None for proc, _, _ in started):
                time.sleep(EXTERNAL_SETTLE_S)
        except BaseException:
            self.close()
            raise

    def running(self, on: bool) -> None:
        for m in self.members:
            m.running(on)

    def park(self, on: bool) -> None:
        for m in self.members:
            m.park(on)

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


def _victim_process(group: ProcessGroup, victim: VictimSpec, reps: int, cpu: int, prio: int,
                    seed: int, clock: str, name: str) -> NativeProcess:
    return group.add(NativeProcess.start(
        victim.executable,
        victim.launch(["--reps", str(reps), "--sync", "--cpu", str(cpu), "--seed", str(seed),
                       "--clock", clock, *_priority_args(prio)]),
        name=name, stdin=True))


def _go(victim: NativeProcess) -> dict:
    victim.send("go")
    return victim.expect("rep", REP_TIMEOUT_S)


@dataclass(frozen=True)
class Rule:
    """How a probe's paired ratios (T_int / T_iso) decide a state: `yes` at or above `at`,
    `no` below `below`, unknown between. The cache canary and the core probe share the
    probe logic and differ only in this."""

    at: float
    below: float
    yes: str
    no: str


CACHE_RULE = Rule(SHARED_AT, NOT_SHARED_BELOW, SHARED, NOT_SHARED)
CORE_RULE = Rule(CORE_SHARED_AT, CORE_SEPARATE_BELOW, SAME_CORE, SEPARATE_CORES)


def decided(ratios: list[float], rule: Rule = CACHE_RULE) -> bool:
    """Whether a probe's pairs so far say one thing: all `yes` or all `no`."""
    return bool(ratios) and (all(r >= rule.at for r in ratios)
                             or all(r < rule.below for r in ratios))


def classify_probe(ratios: list[float], rule: Rule = CACHE_RULE) -> str:
    """A probe's state from the median of its paired ratios: the median, so that one
    repetition disturbed by another tenant does not decide."""
    if not ratios:
        return UNKNOWN
    median = float(np.median(ratios))
    if median >= rule.at:
        return rule.yes
    if median < rule.below:
        return rule.no
    return UNKNOWN


def settle(walk: Callable[[], float], most: int) -> float:
    """The time of a walk once the chase has settled: walks until one agrees with the one
    before it within SETTLE_TOL, at most `most`; the last one's time. A chase evicted by
    whatever ran before (the measured sets, another tenant while its CPU idled) takes 3-5
    walks to come back (docs/canary.md), and its second walk can be as slow as its first, so
    agreement counts from the third walk on; timing the first walk after one warm-up read a
    cold half as a 0.3x or 3x pair."""
    times = [walk()]
    while len(times) < most:
        times.append(walk())
        if len(times) >= SETTLE_FROM and \
                abs(times[-1] - times[-2]) <= SETTLE_TOL * min(times[-2:]):
            break
    return times[-1]


def fastest_after_first(walk: Callable[[], float], walks: int) -> float:
    """The fastest of `walks` walks but the first. Register-only work has no cache to warm;
    what else happens to it (an interrupt, another tenant, a frequency step) only slows it,
    so the fastest walk is its time, and one walk in seven slowed 1.2-2x no longer decides
    (the median of five pairs taking the last walk called separate cores shared in 2.5 % of
    probes under the simulated heavy noise of tests/measure/test_core.py)."""
    walk()
    return min(walk() for _ in range(walks - 1))


def take_probe(pair: Callable[[], tuple[float, float]], pairs: int, most_pairs: int,
               rule: Rule = CACHE_RULE) -> tuple[list[float], list[float]]:
    """`pairs` pairs (isolated, interfered time), up to `most_pairs` while they disagree
    (`decided`); their ratios and isolated times."""
    ratios: list[float] = []
    iso: list[float] = []
    while len(ratios) < most_pairs and not (len(ratios) >= pairs and decided(ratios, rule)):
        t_iso, t_int = pair()
        if t_iso > 0:
            ratios.append(t_int / t_iso)
            iso.append(t_iso)
    return ratios, iso


def block_regime(before: Probe | None, after: Probe | None) -> str:
    """A block is in a regime when the probes on both sides of it saw that regime."""
    if before is None or after is None or before.regime != after.regime:
        return UNKNOWN
    return before.regime


class _ResidentProbe:
    """A probe between blocks: its victim on the victim's CPU and one aggressor on the other,
    resident for a run, the aggressor parked between probes. A probe's pairs take their
    halves in a random order (`_pair`); what a half does is the probe's own (`_half`)."""

    def __init__(self, victim: VictimSpec, other: AggressorSpec, name: str, tag: str,
                 group: ProcessGroup, *, victim_cpu: int, victim_priority: int,
                 aggressor_priority: int, seed: int, reps: int, order_seed: int) -> None:
        self.victim = _victim_process(group, victim, reps, victim_cpu, victim_priority, seed,
                                      "cpu", f"{name} {victim.label}")
        self.ready = self.victim.expect("ready", READY_TIMEOUT_S)
        self.other = _ResidentSet(AggressorSet(name, (other,)), group, aggressor_priority, tag)
        self.other.running(False)
        self.other.park(True)
        self.order = sched.Rotation(1, 1, order_seed)

    def _half(self, condition: str) -> float:
        raise NotImplementedError

    def _pair(self) -> tuple[float, float]:
        (block,) = self.order.round({0: 1})
        times = {rep.condition: self._half(rep.condition) for rep in block.reps}
        return times[ISO], times[INT]

    def _end(self) -> list[dict]:
        """Stop both sides; the victim's lines."""
        self.other.stop()
        self.victim.send("quit")
        return self.victim.finish(timeout=60.0)

    def close(self) -> None:
        self.other.close()


class RunningCanary(_ResidentProbe):
    """The canary victim and thrasher. The harness keeps one for its blocks; the matrix
    runner opens one (`running_canary`) around its periodic runs."""

    def __init__(self, cp: CanaryPlan, group: ProcessGroup, *, victim_cpu: int,
                 victim_priority: int, aggressor_priority: int, seed: int, probes: int) -> None:
        self.plan = cp
        # At most settle_walks walks a half; one probe more than asked for, so the victim
        # always still waits for a command when told to quit.
        super().__init__(cp.victim, cp.thrasher, "canary", "canary", group,
                         victim_cpu=victim_cpu, victim_priority=victim_priority,
                         aggressor_priority=aggressor_priority, seed=seed,
                         reps=2 * cp.settle_walks * cp.most_pairs * (probes + 1),
                         order_seed=seed ^ 0x5EED)

    def _half(self, condition: str) -> float:
        """One half of a pair, in ns per access: the thrasher runs (or not) through every
        walk, so an interfered half is the chase's steady state beside it."""
        self.other.running(condition == INT)
        return settle(lambda: _go(self.victim)["cpu_ns"] / self.plan.accesses,
                      self.plan.settle_walks)

    def probe(self, t0: float) -> Probe:
        """A probe; its time is ns since the monotonic instant `t0`."""
        start = _since(t0)
        self.other.park(False)
        try:
            ratios, iso = take_probe(self._pair, self.plan.pairs, self.plan.most_pairs)
            self.other.running(False)
        finally:
            self.other.park(True)
        return Probe(_since(t0), classify_probe(ratios), tuple(ratios), start, tuple(iso))

    def stop(self) -> dict:
        lines = self._end()
        end: dict = next((ln for ln in reversed(lines) if ln.get("event") == "end"), {})
        return {"victim": self.plan.victim.to_dict(), "thrasher": self.plan.thrasher.to_dict(),
                "pairs_per_probe": self.plan.pairs, "max_pairs_per_probe": self.plan.most_pairs,
                "settle_walks": self.plan.settle_walks, "reps": end.get("reps")}


@contextmanager
def running_canary(cp: CanaryPlan, *, victim_cpu: int, probes: int, victim_priority: int = 0,
                   aggressor_priority: int = 0, seed: int = 1) -> Iterator[RunningCanary]:
    """A resident canary for at most `probes` probes; its processes end with the block."""
    with ProcessGroup() as group:
        canary = RunningCanary(cp, group, victim_cpu=victim_cpu,
                               victim_priority=victim_priority,
                               aggressor_priority=aggressor_priority, seed=seed, probes=probes)
        try:
            yield canary
            canary.stop()
        finally:
            canary.close()


class RunningCoreProbe(_ResidentProbe):
    """The core probe's register-only victim and spinner; the spinner is parked between
    probes and in every isolated half."""

    def __init__(self, cp: CorePlan, group: ProcessGroup, *, victim_cpu: int,
                 victim_priority: int, aggressor_priority: int, seed: int, probes: int) -> None:
        self.plan = cp
        super().__init__(cp.victim, cp.spinner, "core probe", "core", group,
                         victim_cpu=victim_cpu, victim_priority=victim_priority,
                         aggressor_priority=aggressor_priority, seed=seed,
                         reps=2 * CORE_WALKS * cp.max_pairs * (probes + 1),
                         order_seed=seed ^ 0xC0DE)

    def _half(self, condition: str) -> float:
        self.other.park(condition == ISO)
        return fastest_after_first(lambda: _go(self.victim)["cpu_ns"], CORE_WALKS)

    def probe(self, t0: float) -> Probe:
        """A probe; its time is ns since the monotonic instant `t0`."""
        start = _since(t0)
        try:
            ratios, iso = take_probe(self._pair, self.plan.pairs, self.plan.max_pairs,
                                     CORE_RULE)
        finally:
            self.other.park(True)
        return Probe(_since(t0), classify_probe(ratios, CORE_RULE), tuple(ratios), start,
                     tuple(iso))

    def stop(self) -> None:
        self._end()


def _since(t0: float) -> int:
    return int((time.monotonic() - t0) * 1e9)


def _half_width(plan: Plan, live: dict[int, tuple[float, float, str]]) -> float | None:
    """CI half-width of Δ as a fraction of Δ, from region 0 of a set's pairs so far (pair ->
    (iso, int, regime)), restricted to plan.stop_regime; None while it cannot be computed."""
    rows = [(a, b) for a, b, regime in live.values()
            if plan.stop_regime is None or regime == plan.stop_regime]
    if len(rows) < 2:
        return None
    res = compare([a for a, _ in rows], [b for _, b in rows], seed=plan.seed)
    lo, hi = res.delta_ci
    return None if math.isnan(lo) else (hi - lo) / 2 / res.delta


def _stop_note(plan: Plan, live: dict[int, tuple[float, float, str]], early: bool
               ) -> str | None:
    """Why a set stops: early (None while it must go on), or at --max-runs."""
    if early and len(live) < plan.runs:
        return None  # --runs is the least a set gets
    where = f" in {plan.stop_regime} blocks" if plan.stop_regime else ""
    n = sum(1 for *_, regime in live.values()
            if plan.stop_regime is None or regime == plan.stop_regime)
    half = _half_width(plan, live) if plan.until_ci is not None else None
    pairs_ok = plan.until_pairs is None or n >= plan.until_pairs
    ci_ok = plan.until_ci is None or (half is not None and half <= plan.until_ci)
    met = []
    if plan.until_pairs is not None:
        met.append(f"{n} pairs{where}" + (f" >= {plan.until_pairs}" if pairs_ok else
                                          f", {plan.until_pairs} wanted"))
    if plan.until_ci is not None:
        shown = "not computable" if half is None else f"{half:.1%}"
        met.append(f"CI half-width of Δ{where} {shown}"
                   + (" <= " if ci_ok else " > ") + f"{plan.until_ci:.1%}")
    if early:
        return f"stopped early after {len(live)} pairs: {' and '.join(met)}" \
            if pairs_ok and ci_ok else None
    if pairs_ok and ci_ok:
        return f"reached its goal at --max-runs ({plan.most_runs} pairs): {' and '.join(met)}"
    return f"ran to --max-runs ({plan.most_runs} pairs): {'; '.join(met)}"


# A set that must reach `until_pairs` pairs in a regime gives up once it has run this share of
# its cap and even the upper end of the 95 % interval of the regime's share of blocks so far,
# times the pairs it has left, falls short of the pairs it lacks. A search on a host whose
# CPUs never shared their cache waited for twelve times its pairs in vain (660 s of a 809 s
# assess); the regime comes and goes in spells, so a quarter of the cap is still waited for.
GIVE_UP_AFTER = 0.25
# How such a stop's reason begins in Outcome.stopped (a search counts them by it).
GAVE_UP = "gave up after"


def _hopeless(plan: Plan, live: dict[int, tuple[float, float, str]], left: int,
              blocks: list[BlockRecord]) -> str | None:
    """Why a set cannot reach its pairs in plan.stop_regime with the `left` pairs it has
    left, at the rate its regime has come so far (None while it may)."""
    if plan.until_pairs is None or plan.stop_regime is None or not blocks or \
            len(live) < GIVE_UP_AFTER * plan.most_runs:
        return None
    have = sum(1 for *_, regime in live.values() if regime == plan.stop_regime)
    if have >= plan.until_pairs:
        return None
    seen = sum(b.regime == plan.stop_regime for b in blocks)
    share = wilson_interval(seen, len(blocks))[1]
    if left * share >= plan.until_pairs - have:
        return None
    return (f"{GAVE_UP} {len(live)} of {plan.most_runs} pairs: {have} in "
            f"{plan.stop_regime} blocks, {plan.until_pairs} wanted; {seen} of the run's "
            f"{len(blocks)} blocks were {plan.stop_regime} (at most {share:.1%} at 95 %), so "
            f"its {left} pairs left would give about {left * share:.1f}")


# Share of MemAvailable the resident aggressors may take: the victim, the canary, the
# kernel's page cache and the other tenants need the rest.
RESIDENT_SHARE = 0.6


def resident_bytes(plan: Plan) -> int:
    """The buffers intercore's aggressors hold at once: every set stays resident (parked)
    for the whole run, so the interleaving can switch between them without restarts. An
    external stressor's memory is its own and not counted."""
    return sum(m.size for s in plan.sets for m in s.members if m.kind != "cmd")


def check_resident_memory(plan: Plan, available: int | None) -> None:
    """Refuse, before anything starts, a plan whose resident aggressors would not fit: the
    kernel's OOM killer would otherwise end one of them mid-run (a search of 79 candidates
    did here)."""
    need = resident_bytes(plan)
    if available is None or need <= RESIDENT_SHARE * available:
        return
    raise HostUnsupported(
        f"the {len(plan.sets)} aggressor sets hold {need / 2**30:.1f} GiB of buffers at once "
        f"(each stays resident, parked, so the harness can interleave them) and this host "
        f"has {available / 2**30:.1f} GiB available, of which intercore takes at most "
        f"{RESIDENT_SHARE:.0%}: measure fewer sets at once")


def mem_available() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes (None where the kernel does not say)."""
    try:
        with open("/proc/meminfo") as f:
            return parse_meminfo(f.read()).get("MemAvailable")
    except OSError:
        return None


def run(plan: Plan, on_rep: Callable[[int, int], None] | None = None,
        on_start: OnStart | None = None) -> Outcome:
    """Run the plan; `on_rep(done, total)` reports progress. `on_start(role, pid)` is called
    for every workload process right after it is spawned, while it is still initialising and
    before any measured repetition (an enforcement backend moves it into its resctrl or cgroup
    group there); role is "victim" or "aggressor". Raises on any native failure, leaving no
    child process and no control file behind."""
    check_resident_memory(plan, mem_available())
    started = time.time()
    t0 = time.monotonic()
    meta: dict[int, RepMeta] = {}
    aggressor_stats: dict[str, list[dict]] = {}
    residents: list[_ResidentSet] = []
    canary: RunningCanary | None = None
    core: RunningCoreProbe | None = None
    blocks: list[BlockRecord] = []
    probes: list[Probe] = []
    core_probes: list[Probe] = []
    stopped: dict[str, str] = {}
    canary_info: dict = {}
    measured_reps = plan.total_reps
    with ProcessGroup() as group, pinned_to(plan.victim_cpu):
        try:
            victim = _victim_process(group, plan.victim, CALIBRATION_REPS + measured_reps,
                                     plan.victim_cpu, plan.victim_priority, plan.seed,
                                     plan.clock, f"victim {plan.victim.label}")
            if on_start:
                on_start("victim", victim.pid)
            if plan.canary is not None:
                # A probe per block and one before the first; a block has at least a pair.
                canary = RunningCanary(plan.canary, group, victim_cpu=plan.victim_cpu,
                                       victim_priority=plan.victim_priority,
                                       aggressor_priority=plan.aggressor_priority,
                                       seed=plan.seed, probes=measured_reps // 2 + 1)
            if plan.core is not None:
                core = RunningCoreProbe(plan.core, group, victim_cpu=plan.victim_cpu,
                                        victim_priority=plan.victim_priority,
                                        aggressor_priority=plan.aggressor_priority,
                                        seed=plan.seed, probes=measured_reps // 2 + 1)
            ready = victim.expect("ready", READY_TIMEOUT_S)
            clock = ready.get("clock", "cpu")
            for s, aset in enumerate(plan.sets):
                # Parked as soon as it is ready: a paused aggressor spins, and the next one
                # would start (fault in its buffer) beside every set started before it.
                r = _ResidentSet(aset, group, plan.aggressor_priority, f"{s}", on_start)
                residents.append(r)
                r.running(False)
                r.park(True)
            first, switch_ns = _calibrate(plan, victim, residents,
                                          [(canary, probes), (core, core_probes)], t0)
            size = first
            rotation = sched.Rotation(len(plan.sets), size.pairs, plan.seed)
            remaining = {s: plan.pairs_of(s) for s in range(len(plan.sets))}
            live: dict[int, dict[int, tuple[float, float, str]]] = {s: {} for s in remaining}
            vrep = CALIBRATION_REPS
            while any(remaining.values()):
                for block in rotation.round(remaining):
                    blocks.append(_run_block(block, plan, victim, residents, vrep, t0, meta,
                                             live[block.set_index], clock))
                    vrep += len(block.reps)
                    remaining[block.set_index] -= block.pairs
                    if canary is not None:
                        probes.append(canary.probe(t0))
                    if core is not None:
                        core_probes.append(core.probe(t0))
                    blocks[-1] = _with_regime(blocks[-1], probes, core_probes)
                    if on_rep:
                        on_rep(vrep - CALIBRATION_REPS, measured_reps)
                _regimes_into(live, blocks, meta)
                if plan.block_pairs is None and (canary is not None or core is not None):
                    size = _resized(first, switch_ns, _fewest_pairs(plan), blocks,
                                    [probes, core_probes], rotation)
                    rotation.block_pairs = size.pairs
                if plan.adaptive:
                    for s, left in remaining.items():
                        label = plan.sets[s].label
                        why = (_stop_note(plan, live[s], early=True)
                               or _hopeless(plan, live[s], left, blocks)) if left else None
                        if why:
                            remaining[s] = 0
                        elif not left and label not in stopped:
                            why = _stop_note(plan, live[s], early=False)
                        if why:
                            stopped[label] = why
            for r, aset in zip(residents, plan.sets):
                aggressor_stats[aset.label] = r.stop()
            if canary is not None:
                canary_info = canary.stop()
            if core is not None:
                core.stop()
            if vrep < CALIBRATION_REPS + measured_reps:
                victim.send("quit")  # stopped early: the victim still waits for a command
            lines = victim.finish(timeout=60.0)
        finally:
            for r in residents:
                r.close()
            if canary is not None:
                canary.close()
            if core is not None:
                core.close()
    regimes = {b.index: b for b in blocks}
    samples = parse_samples(lines, meta, regimes, clock, cache=canary is not None,
                            core=core is not None)
    end: dict = next((ln for ln in reversed(lines) if ln.get("event") == "end"), {})
    info = {"ready": ready, "end": end}
    return Outcome(plan, samples, info, aggressor_stats, started, time.time(), blocks, probes,
                   size, stopped, canary_info, core_probes)


def _calibrate(plan: Plan, victim: NativeProcess, residents: list[_ResidentSet],
               probers: list[tuple[RunningCanary | RunningCoreProbe | None, list[Probe]]],
               t0: float) -> tuple[BlockSize, float]:
    """Warm the victim up and time a repetition, a set switch and the probes between blocks
    (each first probe is also the one before the first block); give the first round's block
    size and the switch's ns."""
    reps = [_go(victim)["wall_ns"] for _ in range(CALIBRATION_REPS)]
    t = time.monotonic()
    residents[0].park(False)
    residents[0].park(True)
    switch = (time.monotonic() - t) * 1e9
    probe = 0.0
    for prober, probes in probers:
        if prober is not None:
            t = time.monotonic()
            probes.append(prober.probe(t0))
            probe += (time.monotonic() - t) * 1e9
    if plan.block_pairs is not None:
        return BlockSize(plan.block_pairs, "as given"), switch
    return sched.choose_block_pairs(switch, 2 * min(reps), _fewest_pairs(plan), probe), switch


def _fewest_pairs(plan: Plan) -> int:
    return min(plan.pairs_of(s) for s in range(len(plan.sets)))


def _resized(first: BlockSize, switch_ns: float, fewest_pairs: int, blocks: list[BlockRecord],
             probers: list[list[Probe]], rotation: sched.Rotation) -> BlockSize:
    """The block size for the next round from the mean pair and the mean probes so far: the
    first probe alone, timed at calibration, misjudged the rest by up to 2.3x."""
    pair_ns = sum(b.end_ns - b.start_ns for b in blocks) / sum(b.pairs for b in blocks)
    probe_ns = sum(statistics.fmean(p.at_ns - p.start_ns for p in probes)
                   for probes in probers if probes)
    return sched.resized_block_pairs(first, switch_ns, pair_ns, fewest_pairs, probe_ns,
                                     rotation.rounds_drawn)


def _run_block(block: sched.Block, plan: Plan, victim: NativeProcess,
               residents: list[_ResidentSet], vrep: int, t0: float, meta: dict,
               live: dict[int, tuple[float, float, str]], clock: str) -> BlockRecord:
    resident = residents[block.set_index]
    label = plan.sets[block.set_index].label
    before = [r.bytes_moved() for r in residents]
    start = _since(t0)
    resident.park(False)
    times: dict[int, dict[str, float | None]] = {}
    try:
        for rep in block.reps:
            resident.running(rep.condition == INT)
            moved = resident.bytes_moved()
            line = _go(victim)
            meta[vrep] = RepMeta(vrep - CALIBRATION_REPS, rep.pair, rep.condition, label,
                                 resident.bytes_moved() - moved, block.index, start)
            if clock == "wall" and line.get("nivcsw", 0) != 0:
                metric = None  # descheduled: its wall time is not the victim's alone
            else:
                metric = line["wall_ns"] if clock == "wall" else line["cpu_ns"]
            times.setdefault(rep.pair, {})[rep.condition] = metric
            vrep += 1
        resident.running(False)
    finally:
        resident.park(True)
    for pair, t in times.items():
        iso, intf = t[ISO], t[INT]
        if iso and intf:
            live[pair] = (iso, intf, UNKNOWN)
    moved_by = {plan.sets[i].label: r.bytes_moved() - b
                for i, (r, b) in enumerate(zip(residents, before))}
    return BlockRecord(block.index, block.round, label, start, _since(t0), block.pairs,
                       UNKNOWN, moved_by)


def _with_regime(block: BlockRecord, probes: list[Probe], core_probes: list[Probe]
                 ) -> BlockRecord:
    """The block's cache regime and core state once the probes after it are in (the one
    before each last came before it)."""
    def around(ps: list[Probe]) -> str:
        return block_regime(ps[-2], ps[-1]) if len(ps) >= 2 else UNKNOWN
    return replace(block, regime=around(probes), core=around(core_probes))


def _regimes_into(live: dict[int, dict[int, tuple[float, float, str]]],
                  blocks: list[BlockRecord], meta: dict) -> None:
    """Tag the live pair times with their block's regime (for --until-ci in one regime)."""
    regime_of = {b.index: b.regime for b in blocks}
    block_of_pair = {m.pair: m.block for m in meta.values()}
    for pairs in live.values():
        for pair, (a, b, _) in list(pairs.items()):
            pairs[pair] = (a, b, regime_of.get(block_of_pair.get(pair, -1), UNKNOWN))


@dataclass(frozen=True)
class RepMeta:
    """What the controller knows of one victim repetition (keyed by the victim's own number)."""

    rep: int  # among measured repetitions
    pair: int
    condition: Condition
    aggressor_set: str
    bytes_moved: int
    block: int
    block_start_ns: int


def parse_samples(lines: list[dict], meta: dict[int, RepMeta],
                 blocks: dict[int, BlockRecord], clock: str, *, cache: bool = True,
                 core: bool = False) -> list[Sample]:
    """The victim's sample lines joined with what the controller recorded per repetition;
    repetitions without a record (calibration) are not samples. `blocks` gives the cache
    regime (where `cache`: a canary ran) and the core state (where `core`: a core probe ran);
    a sample measured without the probe has None."""
    out = []
    for ln in lines:
        if ln.get("event") != "sample" or ln["rep"] not in meta:
            continue
        m = meta[ln["rep"]]
        cond, label, block, start = m.condition, m.aggressor_set, m.block, m.block_start_ns
        counters = dict(ln.get("counters") or {})
        if ln["region"] == 0 and cond == INT:
            counters["aggressor_bytes"] = m.bytes_moved
        regime = blocks[block].regime if cache and blocks else None
        core_state = blocks[block].core if core and blocks else None
        out.append(Sample(victim=0, rep=m.rep, pair=m.pair, condition=cond,
                          aggressor_set=label if cond == INT else "", region=ln["region"],
                          region_name=ln["name"], wall_ns=ln["wall_ns"], cpu_ns=ln["cpu_ns"],
                          nivcsw=ln.get("nivcsw", -1), cpu=ln.get("cpu", -1),
                          regime=regime, core=core_state, counters=counters, block=block,
                          block_start_ns=start, clock=clock,
                          descheduled=bool(ln.get("descheduled", False))))
    return out
