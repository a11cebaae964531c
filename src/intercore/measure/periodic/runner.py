"""Periodic real-time tasks on the native runner ic-periodic (docs/native-contract.md,
"Periodic runner"), or a user's program built with its runtime (ic_task.h), which speaks the
same protocol: a `PeriodicSpec` per task, launched so that several tasks share one
time origin, and their per-job results as data classes.

    with ProcessGroup() as group:
        tasks = [PeriodicTask.launch(spec, group) for spec in specs]
        start_together(tasks)          # every first release counted from one instant
        results = [t.result() for t in tasks]

`run_periodic(specs)` does exactly that. A monitor that needs a task's releases gets them
through `notify=` (a shared 4 KiB block, see intercore.mitigate.freezer.monitor).

A best-effort task may also be any program as it is (a `CommandSpec`): ic-corun puts it in
the task's cgroups, on its CPU, at its priority, starts it at the shared start and re-runs
it until the periodic tasks have finished (`launch` and `finish_together` take both kinds).
It reports no jobs: its `CommandResult.jobs` is None, progress unknown.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ...base.errors import InputError, NativeError, require
from ...base.job import JobResult
from ...base.procs import ProcessGroup, ReadyTool, from_event, one_event, optional_args

# Between the start line and the first release: enough for every runner to read its line
# (they block on stdin, so this is a pipe write and a wake-up each).
DEFAULT_START_MARGIN_NS = 50_000_000
# Runners allocate and fault in their memory before the ready line; a loaded host is slow.
READY_TIMEOUT_S = 60.0


def duration_arg(ns: int) -> str:
    """ns as the native tools' duration grammar reads it back exactly ("0.050000000")."""
    if ns < 0:
        raise ValueError(f"negative duration {ns} ns")
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


@dataclass(frozen=True)
class PeriodicSpec:
    """One periodic task as ic-periodic runs it, or as a program built with ic_task.h
    runs itself (binary "program": kind is its absolute path, args its own arguments)."""
    name: str                                  # task name, echoed in output and logs
    binary: Literal["victim", "aggr", "program"]  # which kernel family, or the user's program
    kind: str                                  # e.g. "matmul", "bw", "/home/me/ctl"
    params: tuple[tuple[str, str], ...] = ()   # kind options: (("op", "write"), ("size", "64M"))
    period_ns: int = 100_000_000
    deadline_ns: int = 100_000_000
    jobs: int = 100
    offset_ns: int = 0
    cpu: int | None = None
    priority: int = 0                          # 0 = SCHED_OTHER, 1..99 = SCHED_FIFO
    overrun: Literal["skip", "late"] = "skip"
    # aggressors only: one job's work, e.g. "passes:4" or "time:20ms"
    work: str | None = None
    seed: int = 1
    mlock: bool = False
    cgroups: tuple[str, ...] = ()              # directories the runner joins before initialising
    args: tuple[str, ...] = ()                 # a program's own arguments

    def __post_init__(self) -> None:
        checks = (
            (self.binary in ("victim", "aggr", "program"), "binary",
             "must be 'victim', 'aggr' or 'program'"),
            (self.binary == "program" or not self.args, "args", "are a program's own"),
            (self.binary != "program" or not self.params, "params",
             "a program takes its own arguments (args), not kernel options"),
            (self.period_ns > 0, "period_ns", "must be positive"),
            (self.deadline_ns > 0, "deadline_ns", "must be positive"),
            (self.jobs >= 1, "jobs", "must be at least 1"),
            (self.offset_ns >= 0, "offset_ns", "must not be negative"),
            (0 <= self.priority <= 99, "priority", "must be 0 (SCHED_OTHER) or 1..99"),
            (self.overrun in ("skip", "late"), "overrun", "must be 'skip' or 'late'"),
            (self.work is None or self.binary == "aggr", "work",
             "applies to aggressors only (a victim job is one repetition)"),
            ("," not in "".join(self.cgroups), "cgroups",
             "a directory name with ',' cannot be passed"),
        )
        require(checks, f" (task {self.name!r})")

    @property
    def executable(self) -> str:
        """The tool or the program that runs this task."""
        return self.kind if self.binary == "program" else "ic-periodic"

    def argv(self, *, start_at: int | Literal["stdin"] | None = "stdin",
             notify: str | Path | None = None) -> list[str]:
        """The runner's arguments; start_at None lets the runner start 10 ms after its ready
        line. A program takes the runner's options, then "--" and its own arguments (it has
        no kernel seed: its input is its own)."""
        args = ["--name", self.name, "--period", duration_arg(self.period_ns),
                "--deadline", duration_arg(self.deadline_ns), "--jobs", str(self.jobs),
                "--offset", duration_arg(self.offset_ns), "--overrun", self.overrun]
        args += optional_args(("--start-at", start_at), ("--cpu", self.cpu),
                              ("--rt-priority", self.priority or None), ("--mlock", self.mlock),
                              ("--notify", notify), ("--cgroup", ",".join(self.cgroups) or None))
        if self.binary == "program":
            return args + ["--", *self.args]
        args += ["--seed", str(self.seed), *optional_args(("--work", self.work))]
        args += [self.binary, self.kind]
        for key, value in self.params:
            args += [f"--{key}", value]
        return args

    def horizon_ns(self) -> int:
        """From the start time to the last job's deadline when no release is skipped."""
        return self.offset_ns + (self.jobs - 1) * self.period_ns + self.deadline_ns


@dataclass(frozen=True)
class PeriodicSummary:
    jobs: int             # jobs run
    planned: int          # --jobs
    misses: int
    skipped: int
    stopped: bool         # ended by SIGINT/SIGTERM
    rt: bool              # SCHED_FIFO was granted
    start_at_ns: int
    max_response_ns: int
    cpu_ns: int
    checksum: int | None = None  # victims
    accesses: int | None = None  # aggressors
    bytes: int | None = None
    windows_lost: int = 0        # window executions beyond the runner's record


@dataclass(frozen=True)
class WindowExecution:
    """One execution of a monitor's window region in a job (docs/native-contract.md,
    "Region windows"); CLOCK_MONOTONIC ns, as the runner published them."""
    job: int
    region: str
    enter_ns: int
    exit_ns: int


@dataclass(frozen=True)
class PeriodicResult:
    spec: PeriodicSpec
    ready: dict
    jobs: tuple[JobResult, ...]
    summary: PeriodicSummary
    windows: tuple[WindowExecution, ...] = ()

    @property
    def response_ns(self) -> list[int]:
        return [j.response_ns for j in self.jobs]


@dataclass(frozen=True)
class CommandSpec:
    """A best-effort co-runner: any program (absolute path, own arguments), re-run by
    ic-corun from the shared start (+ offset) until it is stopped."""
    name: str
    path: str
    args: tuple[str, ...] = ()
    offset_ns: int = 0
    cpu: int | None = None
    priority: int = 0
    cgroups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require(((self.offset_ns >= 0, "offset_ns", "must not be negative"),
                 (0 <= self.priority <= 99, "priority", "must be 0 (SCHED_OTHER) or 1..99"),
                 ("," not in "".join(self.cgroups), "cgroups",
                  "a directory name with ',' cannot be passed")), f" (task {self.name!r})")

    def argv(self) -> list[str]:
        return ["--name", self.name, "--offset", duration_arg(self.offset_ns),
                "--start-at", "stdin",
                *optional_args(("--cpu", self.cpu), ("--rt-priority", self.priority or None),
                               ("--cgroup", ",".join(self.cgroups) or None)),
                "--", self.path, *self.args]


@dataclass(frozen=True)
class CommandSummary:
    runs: int             # whole runs of the program: a count, not its progress
    stopped: bool
    rt: bool
    start_at_ns: int


@dataclass(frozen=True)
class CommandResult:
    spec: CommandSpec
    ready: dict
    summary: CommandSummary
    jobs: None = None     # progress unknown: the program reports no jobs


class PeriodicTask(ReadyTool):
    """One running ic-periodic, ready and waiting for its start time."""

    spec: PeriodicSpec
    start_at_ns: int | None = None

    @classmethod
    def launch(cls, spec: PeriodicSpec, group: ProcessGroup, *, notify: str | Path | None = None,
               ready_timeout: float = READY_TIMEOUT_S) -> PeriodicTask:
        """Start the runner (owned by `group`) and wait until it is initialised. With
        `notify`, the runner publishes its releases at that path; the caller removes the
        file once the monitor has mapped it too."""
        # Its SIGTERM finishes the job in hand (stop()), and it sees none while it prepares:
        # seconds, for a stop that throws the jobs away. With no block published to a
        # monitor it has nothing to undo, and the group kills it outright.
        return cls._launch(spec, group, spec.executable, spec.argv(notify=notify),
                           name=f"{Path(spec.executable).name} {spec.name}",
                           ready_timeout=ready_timeout,
                           stdin=True,
                           stop_signal=signal.SIGTERM if notify else signal.SIGKILL)

    def start(self, start_at_ns: int) -> None:
        """Releases begin at start_at_ns + offset (CLOCK_MONOTONIC, as time.monotonic_ns())."""
        self.start_at_ns = start_at_ns
        self.process.send(f"start {start_at_ns}")

    def stop(self) -> None:
        """Stop after the current job; result() still returns every job run."""
        if self.process.proc.poll() is None:
            self.process.proc.send_signal(signal.SIGTERM)

    def result(self, timeout: float | None = None) -> PeriodicResult:
        """Wait for the runner to finish and parse its jobs and summary."""
        if timeout is None:
            left = (self.start_at_ns or time.monotonic_ns()) - time.monotonic_ns()
            timeout = 60.0 + 3 * (max(0, left) + self.spec.horizon_ns()) / 1e9
        lines = self.process.finish(timeout)
        tool = self.process.name
        jobs = tuple(from_event(JobResult, e, tool) for e in lines if e.get("event") == "job")
        summary = from_event(PeriodicSummary, one_event(lines, "summary", tool), tool)
        if summary.jobs != len(jobs):
            raise NativeError(f"{tool}: summary counts {summary.jobs} jobs, printed {len(jobs)}")
        windows = tuple(from_event(WindowExecution, e, tool) for e in lines
                        if e.get("event") == "window")
        return PeriodicResult(self.spec, self.ready, jobs, summary, windows)


class CommandTask(ReadyTool):
    """One running ic-corun, ready and waiting for its start time."""

    spec: CommandSpec

    @classmethod
    def launch(cls, spec: CommandSpec, group: ProcessGroup, *,
               ready_timeout: float = READY_TIMEOUT_S) -> CommandTask:
        # SIGTERM: ic-corun kills the program's process group and reaps it before exiting.
        return cls._launch(spec, group, "ic-corun", spec.argv(), name=f"ic-corun {spec.name}",
                           ready_timeout=ready_timeout, stdin=True)

    def start(self, start_at_ns: int) -> None:
        self.process.send(f"start {start_at_ns}")

    def result(self, timeout: float = 30.0) -> CommandResult:
        """Stop the program (it runs until told) and read the summary."""
        if self.process.proc.poll() is None:
            self.process.proc.send_signal(signal.SIGTERM)
        lines = self.process.finish(timeout)
        tool = self.process.name
        summary = from_event(CommandSummary, one_event(lines, "summary", tool), tool)
        return CommandResult(self.spec, self.ready, summary)


Spec = PeriodicSpec | CommandSpec
Result = PeriodicResult | CommandResult


def launch(spec: Spec, group: ProcessGroup, *, notify: str | Path | None = None
           ) -> PeriodicTask | CommandTask:
    """The task ready to start: ic-periodic (or the user's program) for a periodic task,
    ic-corun for a command (which takes no notification block: it has no jobs)."""
    if isinstance(spec, CommandSpec):
        if notify is not None:
            raise ValueError(f"task {spec.name!r} is a command: it publishes no jobs")
        return CommandTask.launch(spec, group)
    return PeriodicTask.launch(spec, group, notify=notify)


def finish_together(tasks: list[PeriodicTask | CommandTask],
                    timeout: float | None = None) -> dict[str, Result]:
    """Every periodic task's jobs, then the commands stopped: they co-run for exactly as
    long as there are jobs to press on. Results by task name."""
    periodic = [t for t in tasks if isinstance(t, PeriodicTask)]
    if not periodic:
        raise ValueError("a run of commands alone has no jobs and no end")
    results: dict[str, Result] = {t.spec.name: t.result(timeout) for t in periodic}
    for t in tasks:
        if isinstance(t, CommandTask):
            results[t.spec.name] = t.result()
    return {t.spec.name: results[t.spec.name] for t in tasks}


def start_together(tasks: list[PeriodicTask | CommandTask],
                   margin_ns: int = DEFAULT_START_MARGIN_NS) -> int:
    """Give every task the same start time, margin_ns from now; returns it."""
    start_at = time.monotonic_ns() + margin_ns
    for task in tasks:
        task.start(start_at)
    return start_at


def run_periodic(specs: list[Spec], *, notify: dict[str, str | Path] | None = None,
                 margin_ns: int = DEFAULT_START_MARGIN_NS,
                 timeout: float | None = None) -> dict[str, Result]:
    """Run the tasks together from one time origin; results by task name."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"task names must be unique, got {names}", field="name")
    notify = notify or {}
    unknown = set(notify) - set(names)
    if unknown:
        raise InputError(f"notify names unknown tasks: {sorted(unknown)}", field="notify")
    with ProcessGroup() as group:
        tasks = [launch(s, group, notify=notify.get(s.name)) for s in specs]
        start_together(tasks, margin_ns)
        return finish_together(tasks, timeout)
