"""Task sets: the periodic tasks of one system, read from YAML and checked against the host.

A task set names each task's workload (a victim kernel, an aggressor kernel, a preset, or the
user's own program built with the kit's task runtime, ic_task.h), its
timing (period, deadline, offset), where and how it is scheduled (CPU, SCHED_FIFO priority,
CPU weight) and its role: `critical` tasks are protected, `best-effort` tasks may be frozen.
Two steps, so that errors point at the right line:

1. `TaskSetFile` (pydantic) checks the shape of the file: types, durations, ranges, unique
   names, deadline <= period.
2. `resolve()` checks what depends on the host: the workload against the native tools' own
   option tables, sizes relative to the detected caches, CPUs against the topology. It is a
   pure function of the document and a `Topology`, so tests pass a synthetic machine.

    name: paper-000
    tasks:
      - name: victim
        workload: matrix1
        period: 100ms
        deadline: 30ms
        cpu: 1
        priority: 10
        role: critical
      - name: noise
        workload: bw
        params: {op: write, size: 2xLLC}
        period: 200ms
        work: time:40ms
        cpu: 1
        priority: 10
        role: best-effort
      - name: ctl                       # the user's program: path (relative to this file)
        program: [./control_task, --steps-per-job, "200"]    # and its own arguments
        period: 10ms
        deadline: 5ms
        role: critical
      - name: filter                    # any program, unmodified, as a best-effort co-runner:
        command: [./filter, --in, x.pgm]   # re-run until the others end; no period, no jobs
        cpu: 1
        role: best-effort
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo,
                      field_validator, model_validator)

from ...base import yamlfile
from ...base.errors import InputError
from ...host.topology import Topology, read_topology, validate_cpu
from ..aggressors.catalog import parse_victim
from ..harness.paired import VictimSpec
from .runner import CommandSpec, PeriodicSpec
from ..aggressors.presets import KINDS, PRESETS, AggressorSpec, Footprints, parse_set, preset
from ..program import TaskCommand, TaskProgram, built_with_runtime, executable
from ...base.units import parse_duration_ns

# ---- durations ---------------------------------------------------------------------------------

def _duration(value: object) -> int:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration: give a unit (examples: 100ms, 1.5s)")
    return parse_duration_ns(value)


Duration = Annotated[int, BeforeValidator(_duration)]  # nanoseconds

# ---- the file ----------------------------------------------------------------------------------

# Task names become cgroup directory names (one sub-cgroup per separated task), so they must be
# valid, unambiguous path components. "root" is the plan's group for unseparated tasks.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
RESERVED_NAMES = frozenset({"root"})

_WORK = re.compile(r"^(passes|time):(.+)$")

Role = Literal["critical", "best-effort"]
Overrun = Literal["skip", "late"]


def _param(value: object) -> str:
    # YAML reads `size: 4096` as an int and `on: yes` as a bool; the native tools take text.
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{value!r} is not a number or a string; quote it")
    return str(value)


ParamValue = Annotated[str, BeforeValidator(_param)]


def _words(value: object) -> object:
    # A program's command line, as exec takes it: every word a string, none read as a number.
    if isinstance(value, list):
        return [_param(v) for v in value]
    return value


ProgramWords = Annotated[list[str], BeforeValidator(_words), Field(min_length=1)]


class TaskEntry(BaseModel):
    """One task as the file spells it (durations already in nanoseconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    workload: str | None = None
    # The user's program built with ic_task.h: its path (relative to the task set's
    # directory) and its own arguments. Instead of `workload`.
    program: ProgramWords | None = None
    # Any program as it is (no markers, no runtime), for a best-effort task only: re-run
    # from the shared start until the other tasks end. It has no jobs, so no period.
    command: ProgramWords | None = None
    params: dict[str, ParamValue] = Field(default_factory=dict)
    period: Duration | None = None  # required, except for a command
    arbitrary_deadline: bool = False  # allow deadline > period (before deadline: it checks it)
    deadline: Duration | None = None  # default: the period (implicit deadline)
    offset: Duration = 0
    cpu: int | None = Field(None, ge=0)
    priority: int = Field(0, ge=0, le=99)  # 0 = SCHED_OTHER, 1..99 = SCHED_FIFO
    role: Role
    weight: int = Field(100, ge=1, le=10000)  # cgroup v2 cpu.weight scale
    overrun: Overrun = "skip"
    work: str | None = None  # aggressors: one job's work, "passes:N" or "time:DURATION"
    # Gang scheduling (RT-Gang++): critical tasks naming one gang run together (a virtual
    # gang); within a partition at most one gang runs at a time. Default: a gang of one, in
    # partition "default".
    gang: str | None = None
    partition: str | None = None

    @field_validator("gang", "partition")
    @classmethod
    def _gang_name(cls, name: str | None) -> str | None:
        if name is not None and (not _NAME.match(name) or name in RESERVED_NAMES):
            raise ValueError(f"{name!r} must start with a letter or digit and use only "
                             "letters, digits, '_', '.', '-' (at most 63): it names a cgroup")
        return name

    @field_validator("name")
    @classmethod
    def _cgroup_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"{name!r} must start with a letter or digit and use only letters, "
                             "digits, '_', '.', '-' (at most 63): it names a cgroup")
        if name in RESERVED_NAMES:
            raise ValueError(f"{name!r} is reserved for the plan's root group")
        return name

    @field_validator("period")
    @classmethod
    def _positive_period(cls, period: int | None) -> int | None:
        if period is not None and period <= 0:
            raise ValueError("the period must be positive")
        return period

    @field_validator("deadline")
    @classmethod
    def _deadline(cls, deadline: int | None, info: ValidationInfo) -> int | None:
        if deadline is None:
            return None
        if deadline <= 0:
            raise ValueError("the deadline must be positive")
        period = info.data.get("period")  # absent when the period itself was invalid
        if period is not None and deadline > period and not info.data.get("arbitrary_deadline"):
            raise ValueError("the deadline is longer than the period; set arbitrary_deadline: "
                             "true if that is meant")
        return deadline

    @model_validator(mode="after")
    def _one_workload(self) -> "TaskEntry":
        given = [key for key in ("workload", "program", "command") if getattr(self, key)]
        if len(given) != 1:
            raise ValueError("give one of `workload` (a built-in kernel or preset), `program` "
                             "(your program built with ic_task.h) or `command` (any program, "
                             "as a best-effort co-runner), not "
                             + (" and ".join(given) if given else "none"))
        if self.command is None and self.period is None:
            raise ValueError("`period` is required (only a command, which has no jobs, "
                             "runs without one)")
        return self

    @property
    def deadline_ns(self) -> int | None:
        return self.period if self.deadline is None else self.deadline


class TaskSetFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    tasks: list[TaskEntry] = Field(min_length=1)


# ---- resolved task set -------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """A task with its workload resolved for this host."""

    name: str
    role: Role
    workload: VictimSpec | AggressorSpec | TaskProgram | TaskCommand
    period_ns: int | None       # None: a command, which has no jobs
    deadline_ns: int | None
    offset_ns: int
    cpu: int | None
    priority: int
    weight: int
    overrun: Overrun
    work: str | None
    gang: str | None = None
    partition: str | None = None

    @property
    def binary(self) -> Literal["victim", "aggr", "program", "command"]:
        if isinstance(self.workload, TaskCommand):
            return "command"
        if isinstance(self.workload, TaskProgram):
            return "program"
        return "victim" if isinstance(self.workload, VictimSpec) else "aggr"

    @property
    def kind(self) -> str:
        return self.workload.kind

    @property
    def reports_jobs(self) -> bool:
        """False for a command: its progress is unknown, every figure of its jobs is None."""
        return not isinstance(self.workload, TaskCommand)

    @property
    def args(self) -> tuple[str, ...]:
        """A program's or a command's own arguments."""
        return self.workload.args if isinstance(self.workload, (TaskProgram, TaskCommand)) \
            else ()

    @property
    def params(self) -> tuple[tuple[str, str], ...]:
        """Options of the native kernel, as ic-victim / ic-aggr take them (without dashes)."""
        if isinstance(self.workload, (TaskProgram, TaskCommand)):
            return ()
        if isinstance(self.workload, VictimSpec):
            return self.workload.params
        argv = self.workload.argv()[1:]  # ["--op", "write", "--size", "N", ...]
        return tuple((flag.removeprefix("--"), value) for flag, value in zip(argv[::2],
                                                                               argv[1::2]))

    def periodic_spec(self, jobs: int, cgroups: tuple[str, ...] = (), seed: int = 1
                      ) -> PeriodicSpec | CommandSpec:
        """What runs `jobs` jobs of this task (ic-periodic, or the program itself), or, for a
        command, what re-runs it until stopped (jobs unused); `cgroups` are the directories
        it joins first (`CgroupPlan.directories_of(task)` once a plan is applied); `seed`
        is a built-in kernel's."""
        if isinstance(self.workload, TaskCommand):
            return CommandSpec(name=self.name, path=self.workload.path, args=self.args,
                               offset_ns=self.offset_ns, cpu=self.cpu, priority=self.priority,
                               cgroups=tuple(cgroups))
        return PeriodicSpec(name=self.name, binary=self.binary, kind=self.kind,
                            params=self.params, args=self.args, period_ns=self.period_ns,
                            deadline_ns=self.deadline_ns, jobs=jobs, offset_ns=self.offset_ns,
                            cpu=self.cpu, priority=self.priority, overrun=self.overrun,
                            work=self.work, cgroups=tuple(cgroups),
                            seed=seed)

    def to_dict(self) -> dict:
        return {"name": self.name, "role": self.role, "binary": self.binary, "kind": self.kind,
                "label": self.workload.label, "params": dict(self.params),
                "args": list(self.args),
                "period_ns": self.period_ns, "deadline_ns": self.deadline_ns,
                "offset_ns": self.offset_ns, "cpu": self.cpu, "priority": self.priority,
                "weight": self.weight, "overrun": self.overrun, "work": self.work,
                "gang": self.gang, "partition": self.partition}


@dataclass(frozen=True)
class TaskSet:
    name: str
    source: str
    tasks: tuple[Task, ...]
    description: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tasks)

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "description": self.description,
                "tasks": [t.to_dict() for t in self.tasks]}


# ---- resolving against the host ----------------------------------------------------------------

# A size may be given relative to the caches detected on the host: LLC (the shared last-level
# cache) or PRIVATE (the largest cache private to the task's CPU), optionally scaled: 2xLLC,
# 0.5xLLC, 4xPRIVATE. The same task set then means the same thing on a Pi and on a server.
_RELATIVE_SIZE = re.compile(r"^(?:(\d+(?:\.\d+)?)\s*x\s*)?(LLC|PRIVATE)$", re.IGNORECASE)


def relative_size(text: str, fp: Footprints) -> int | None:
    """Bytes for `2xLLC`-style sizes (whole cache lines, at least one); None if not relative."""
    match = _RELATIVE_SIZE.match(text.strip())
    if not match:
        return None
    factor = Fraction(match.group(1) or "1")
    base = fp.shared if match.group(2).upper() == "LLC" else fp.private
    lines = max(1, int(factor * base // fp.line))
    return lines * fp.line


class _Resolver:
    """Host-dependent checks of one document; every error points at the task's line."""

    def __init__(self, doc: yamlfile.Document, topo: Topology):
        self.doc = doc
        self.topo = topo

    def footprints(self, cpu: int | None, loc: yamlfile.Loc) -> Footprints:
        try:
            return Footprints.for_host(self.topo, cpu)
        except InputError as exc:
            raise self.doc.error(exc.message, loc) from None

    def task(self, index: int, entry: TaskEntry) -> Task:
        loc = ("tasks", index)
        cpu = entry.cpu
        if cpu is not None:
            try:
                validate_cpu(self.topo, cpu)
            except InputError as exc:
                raise self.doc.error(exc.message, loc + ("cpu",)) from None
        if entry.command is not None:
            workload = self.command(entry, loc)
        elif entry.program is not None:
            workload = self.program(entry, loc)
        else:
            fp = self.footprints(cpu, loc + ("workload",))
            params = {key: self._size(value, fp) for key, value in entry.params.items()}
            workload = self.workload(entry, params, fp, loc)
        is_aggressor = isinstance(workload, AggressorSpec)
        if is_aggressor and entry.work is None:
            raise self.doc.error("an aggressor task needs `work`: one job's work, e.g. "
                                 "passes:4 or time:20ms", loc + ("work",))
        if not is_aggressor and entry.work is not None:
            raise self.doc.error("`work` is for aggressor tasks; a victim's job is one run of "
                                 "its kernel (size it with params), a program's one call of "
                                 "its job function", loc + ("work",))
        if entry.work is not None:
            self.check_work(entry, loc + ("work",))
        if entry.role == "best-effort":
            for key in ("gang", "partition"):
                if getattr(entry, key) is not None:
                    raise self.doc.error(f"`{key}` is for critical tasks: best-effort work is "
                                         "throttled while gangs run, never scheduled as one",
                                         loc + (key,))
        return Task(name=entry.name, role=entry.role, workload=workload,
                    period_ns=entry.period, deadline_ns=entry.deadline_ns,
                    offset_ns=entry.offset, cpu=cpu, priority=entry.priority,
                    weight=entry.weight, overrun=entry.overrun, work=entry.work,
                    gang=entry.gang, partition=entry.partition)

    def program(self, entry: TaskEntry, loc: yamlfile.Loc) -> TaskProgram:
        """The user's program: an executable file built with the task runtime. A relative
        path is the task set's directory's, so the file means the same from any directory."""
        where = loc + ("program",)
        if entry.params:
            raise self.doc.error("a program takes its own arguments in `program`, after its "
                                 "path; `params` are a built-in kernel's", loc + ("params",))
        exe, args = self.file(entry.program, where)
        path = entry.program[0]
        if not built_with_runtime(exe):
            raise self.doc.error(
                f"{path} is not built with intercore's task runtime (ic_task.h), so it cannot "
                "run as periodic jobs; build its job function with ic_task_run "
                "(docs/user-programs.md), or measure the program as it is with "
                "`intercore measure run -- PROGRAM`", where)
        return TaskProgram(str(exe), args)

    def file(self, words: list[str], where: yamlfile.Loc) -> tuple[Path, tuple[str, ...]]:
        """The executable a program or command names (relative to the task set's
        directory, so the file means the same from any directory) and its arguments."""
        path, *args = words
        base = Path(self.doc.source).parent if self.doc.source else Path.cwd()
        try:
            exe = executable(base / path, field=where[-1])
        except InputError as exc:
            raise self.doc.error(exc.message, where) from None
        return exe, tuple(args)

    def command(self, entry: TaskEntry, loc: yamlfile.Loc) -> TaskCommand:
        """Any program as a best-effort co-runner. Only best-effort: a program that reports
        no job has no response time, so no deadline can be checked or protected."""
        where = loc + ("command",)
        if entry.role != "best-effort":
            raise self.doc.error(
                "a command reports no jobs, so its deadlines cannot be checked or protected: "
                "only a best-effort task may be a command; build a critical task with "
                "ic_task.h and name it with `program` (docs/user-programs.md)", where)
        for key, why in (("params", "a command takes its own arguments in `command`, after "
                          "its path; `params` are a built-in kernel's"),
                         ("work", "a command's work is its own run, repeated until the other "
                          "tasks end; `work` is an aggressor's"),
                         ("deadline", "a command reports no jobs: it has no deadline"),
                         ("period", "a command is re-run until the other tasks end: it has "
                          "no period")):
            if getattr(entry, key):
                raise self.doc.error(why, loc + (key,))
        if "overrun" in entry.model_fields_set:
            raise self.doc.error("a command reports no jobs: it has no overrun",
                                 loc + ("overrun",))
        exe, args = self.file(entry.command, where)
        return TaskCommand(str(exe), args)

    @staticmethod
    def _size(value: str, fp: Footprints) -> str:
        resolved = relative_size(value, fp)
        return value if resolved is None else str(resolved)

    def workload(self, entry: TaskEntry, params: dict[str, str], fp: Footprints,
                 loc: yamlfile.Loc) -> VictimSpec | AggressorSpec:
        assert entry.workload is not None  # the schema requires a workload or a program
        name = entry.workload.strip()
        if name in PRESETS:
            if params:
                raise self.doc.error(f"preset {name} takes no params; write its kind "
                                     f"({PRESETS[name][0]}) with op/size params instead",
                                     loc + ("params",))
            return replace(preset(name, fp), cpu=entry.cpu)
        if name in KINDS:
            text = f"{name}:" + ",".join(f"{k}={v}" for k, v in params.items())
            try:
                member = parse_set(text, fp, self.topo).members[0]
            except InputError as exc:
                raise self.doc.error(exc.message, loc + ("params",)) from None
            return replace(member, cpu=entry.cpu)
        if name == "cmd" or name.startswith("cmd:"):
            raise self.doc.error("external commands cannot run as periodic jobs; use a victim "
                                 f"kind, an aggressor kind ({', '.join(KINDS)}) or a preset",
                                 loc + ("workload",))
        try:
            return parse_victim(name, [f"{k}={v}" for k, v in params.items()], fp)
        except InputError as exc:
            where = "workload" if exc.field == "VICTIM" else "params"
            message = exc.message
            if where == "workload":
                message += f"; or an aggressor: {', '.join(KINDS)}, {', '.join(PRESETS)}"
            raise self.doc.error(message, loc + (where,)) from None

    def check_work(self, entry: TaskEntry, loc: yamlfile.Loc) -> None:
        assert entry.work is not None  # task() checks a given `work` only
        match = _WORK.match(entry.work.strip())
        if not match:
            raise self.doc.error(f"{entry.work!r} is not passes:N or time:DURATION", loc)
        unit, amount = match.groups()
        if unit == "passes":
            if not amount.isdigit() or int(amount) < 1:
                raise self.doc.error(f"passes must be a whole number >= 1, not {amount!r}", loc)
            return
        try:
            ns = parse_duration_ns(amount)
        except ValueError as exc:
            raise self.doc.error(str(exc), loc) from None
        if ns <= 0:
            raise self.doc.error("a job's work time must be positive", loc)
        if ns > entry.deadline_ns:
            raise self.doc.error("a job that works longer than its deadline misses every "
                                 "deadline by construction", loc)


def _check_gangs(doc: yamlfile.Document, entries: list[TaskEntry]) -> None:
    """A virtual gang's members share a period and a priority (RT-Gang's rule: the gang is
    released and scheduled as one) and a partition; a gang name is not also a task name of
    another gang."""
    first: dict[str, tuple[int, TaskEntry]] = {}
    for i, e in enumerate(entries):
        if e.gang is None:
            continue
        if e.gang in first:
            j, f = first[e.gang]
            for key in ("period", "priority", "partition"):
                if getattr(e, key) != getattr(f, key):
                    raise doc.error(f"gang {e.gang!r}: {key} differs from task {f.name!r} "
                                    f"(line {doc.line_of(('tasks', j))}); a virtual gang's "
                                    "tasks share it", ("tasks", i, key))
        else:
            first[e.gang] = (i, e)
    names = {e.name for e in entries}
    for gang, (i, e) in first.items():
        if gang in names and gang != e.name:
            raise doc.error(f"gang {gang!r} is also the name of another task",
                            ("tasks", i, "gang"))


def resolve(doc: yamlfile.Document, topo: Topology) -> TaskSet:
    """Validate a parsed task-set document against `topo` (the host, or a synthetic one)."""
    parsed = yamlfile.validate(doc, TaskSetFile)
    seen: set[str] = set()
    for i, task in enumerate(parsed.tasks):
        if task.name in seen:
            raise doc.error(f"task name {task.name!r} is used twice", ("tasks", i, "name"))
        seen.add(task.name)
    resolver = _Resolver(doc, topo)
    tasks = tuple(resolver.task(i, entry) for i, entry in enumerate(parsed.tasks))
    _check_gangs(doc, parsed.tasks)
    return TaskSet(name=parsed.name, source=doc.source, tasks=tasks,
                   description=parsed.description)


def load(path: str | Path, topo: Topology | None = None) -> TaskSet:
    """Read, validate and resolve a task-set file; errors are InputErrors with file:line."""
    return resolve(yamlfile.read(path), read_topology() if topo is None else topo)
