"""The cgroup plan: Algorithm 1's output, and after `apply` the record of what was created.

A plan is a typed, saved artefact (JSON). `algorithm1.plan()` fills everything but `applied`;
`cgroupfs.apply()` adds `applied` (the directory of every group in every hierarchy, and the
files a monitor writes to freeze a group and reads to see its CPU usage), so that `teardown`,
`status` and the native monitor need nothing but this file.
"""

from __future__ import annotations

from pathlib import Path
import re
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ...base import artefact, outputs

FORMAT: Final = "intercore.cgroup-plan/1"

# The group that holds the tasks Algorithm 1 does not separate. It is a leaf below the plan's
# root cgroup rather than the root itself, because cgroup v2 lets no process live in a group
# that distributes controllers to children ("no internal processes").
ROOT_GROUP = "root"

Role = Literal["critical", "best-effort"]
# What the monitor may do to a group: freeze it (best-effort, separated), protect it (critical,
# separated: its activity is what triggers freezing), or leave it alone.
MonitorRole = Literal["freeze", "protect", "none"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# A plan is hand-editable and `mitigate apply` runs it as root: every field is bounded here, at
# load, so that an edited plan is refused before anything is created. Group names become
# directory names, so they are single path components (as task names are).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} must start with a letter or digit and use only letters, "
                         "digits, '_', '.', '-' (at most 63): it names a cgroup")
    return value


Name = Annotated[str, AfterValidator(_name)]
Weight = Annotated[int, Field(ge=1, le=10000)]  # cgroup v2 cpu.weight
Cpu = Annotated[int, Field(ge=0, le=4095)]      # the kernel's NR_CPUS is at most 8192


class PlanTask(_Frozen):
    name: Name
    role: Role
    group: Name
    cpu: Cpu | None
    priority: int = Field(ge=0, le=99)
    weight: Weight


class Misses(_Frozen):
    """One task's deadline misses from the matrix: alone, and beside its partner."""

    alone: int
    alone_jobs: int
    beside: int
    beside_jobs: int

    def __str__(self) -> str:
        return f"{self.alone}/{self.alone_jobs} alone, {self.beside}/{self.beside_jobs} beside"


class Pair(_Frozen):
    """A high-contention pair: the evidence for a separation."""

    a: str
    b: str
    interference: float   # symmetric I_ab
    a_beside_b: float | None  # directed: degradation of a when b runs beside it; None:
    b_beside_a: float | None  # a reports no jobs (a command), progress unknown
    reason: Literal["theta", "deadline"] = "theta"  # I > θ, or else the deadline rule
    deadline_task: str | None = None  # a critical task whose deadline the pair breaks (either
    affordable: float | None = None   # reason), and its D / response alone, which it exceeds
    a_misses: Misses | None = None    # deadline misses, when the matrix records them
    b_misses: Misses | None = None
    # Region-level matrices: the cell that decided (its provenance and region, None for the
    # whole job), the channels the model says the pair shares (None: no model), and the
    # regions of the critical task above θ that the monitor freezes for (empty: whole jobs).
    provenance: Literal["measured", "predicted", "model-free"] = "measured"
    region: str | None = None
    channels: tuple[str, ...] | None = None
    windows: tuple[str, ...] = ()

    def why(self, theta: float) -> str:
        """The separation's reason in words."""
        parts = [f"I > θ = {theta:g}"] if self.reason == "theta" else []
        if self.deadline_task is not None:
            parts.append(f"{self.deadline_task}'s deadline: it can afford {self.affordable:.3f} "
                         "(deadline / time alone)")
        parts.append(f"{self.provenance} {self.region or 'whole job'}")
        if self.channels:
            parts.append("shares " + ", ".join(self.channels))
        if self.windows:
            parts.append("freeze windows " + ", ".join(self.windows))
        return "; ".join(parts)


class FreePair(_Frozen):
    """A pair the platform model declares interference-free, checked by a measurement: it
    needs no separation whatever θ says."""

    a: str
    b: str
    check: float     # the measured Δ that checked the claim
    n: int


# What can cover a channel, the weakest first: a channel several pairs meet on is only as
# covered as its least covered pair (the dossier reads it so).
COVERS_WEAKEST_FIRST = ("unmitigated", "freeze windows", "freeze (whole job)")


class ChannelCover(_Frozen):
    """What covers one channel the model found between a critical task and a co-runner."""

    channel: str
    pairs: tuple[str, ...]        # "critical/co-runner" pairs that share it
    mitigation: str               # "freeze windows", "freeze (whole job)" or "unmitigated"
    reason: str


class Group(_Frozen):
    name: Name
    tasks: tuple[Name, ...]
    separated: bool       # a sub-cgroup of its own because of a high-contention pair
    freezer: bool         # the freezer is enabled: a monitor may pause this group
    monitor: MonitorRole
    cpus: tuple[Cpu, ...] | None = Field(min_length=1)  # cpuset.cpus; None: the parent's
    weight: Weight
    realtime: bool        # holds a SCHED_FIFO task (needs an RT budget under RT group scheduling)
    separated_from: tuple[Name, ...] = ()      # tasks it forms a high-contention pair with
    freeze_while_active: tuple[Name, ...] = ()  # protect groups: the groups to freeze meanwhile
    windows: tuple[str, ...] = ()  # protect groups: freeze only in these regions; (): whole jobs


class PlanWarning(_Frozen):
    code: str
    message: str
    tasks: tuple[str, ...] = ()


# ---- what apply created ------------------------------------------------------------------------

HierarchyRole = Literal["freeze", "usage", "cpuset", "cpu"]


class AppliedHierarchy(_Frozen):
    label: str            # "unified" for v2; the v1 mount's controllers otherwise ("cpuset")
    version: Literal[1, 2]
    mount: str            # where the hierarchy is mounted
    roles: tuple[HierarchyRole, ...]
    root: str             # the plan's root cgroup in this hierarchy
    controllers: tuple[str, ...] = ()  # v2: enabled in the root's cgroup.subtree_control


class AppliedGroup(_Frozen):
    name: str
    paths: dict[str, str]  # hierarchy label -> the group's directory
    # Files for a monitor; None where the host had no such hierarchy when the plan was applied.
    freeze_kind: Literal["v2", "v1"] | None
    freeze_file: str | None  # v2: cgroup.freeze ("1"/"0"); v1: freezer.state ("FROZEN"/"THAWED")
    events_file: str | None  # v2: cgroup.events ("frozen 1" once every task has stopped)
    usage_kind: Literal["v2", "v1"] | None
    usage_file: str | None   # v2: cpu.stat (usage_usec line); v1: cpuacct.usage (ns)
    rt_runtime_us: int | None = None  # v1 cpu.rt_runtime_us given to a realtime group


class Applied(_Frozen):
    root_name: str
    created_at: str
    hierarchies: tuple[AppliedHierarchy, ...]
    groups: tuple[AppliedGroup, ...]
    rt_runtime_us: int | None = None  # the budget given to the plan's root (v1 RT groups)
    # The creation token apply marked every directory with (trusted.intercore.token): a plan
    # edited to name another root, even one intercore made, does not carry that root's token.
    # None in plans applied before it was recorded, which commands refuse to act on.
    token: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")

    def group(self, name: str) -> AppliedGroup:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def directories(self, group: str) -> tuple[str, ...]:
        """The group's directory in every hierarchy, the cpu hierarchy first: under RT group
        scheduling that move is the one most likely to be refused, and a refused first move
        leaves the task where it was rather than half moved."""
        target = self.group(group)
        ordered = sorted(self.hierarchies, key=lambda h: "cpu" not in h.roles)
        return tuple(target.paths[h.label] for h in ordered)


# ---- the plan ----------------------------------------------------------------------------------

class CgroupPlan(_Frozen):
    format: Literal["intercore.cgroup-plan/1"] = FORMAT
    taskset: dict[str, Any]          # name and source file of the task set
    matrix: dict[str, Any]           # statistic, source file and provenance of the matrix
    theta: float = Field(ge=0, allow_inf_nan=False)  # 0: not Algorithm 1's (gang plans)
    tasks: tuple[PlanTask, ...]
    groups: tuple[Group, ...] = Field(min_length=1)
    pairs: tuple[Pair, ...] = Field(default=())  # every pair with I > theta
    free: tuple[FreePair, ...] = ()              # pairs left together as the model allows
    channels: tuple[ChannelCover, ...] = ()      # per channel found, what covers it
    warnings: tuple[PlanWarning, ...] = ()
    applied: Applied | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "CgroupPlan":
        """Every name a plan uses refers to something the plan defines, once."""
        if 0 < self.theta <= 1:
            raise ValueError(f"theta {self.theta} must be Algorithm 1's threshold (> 1), or 0 "
                             "for a plan not made by it")
        groups = [g.name for g in self.groups]
        tasks = [t.name for t in self.tasks]
        for what, names in (("group", groups), ("task", tasks)):
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"{what} {', '.join(twice)} given twice")
        for t in self.tasks:
            if t.group not in groups:
                raise ValueError(f"task {t.name}: group {t.group!r} is not a group of the plan")
            if t.name not in self.group(t.group).tasks:
                raise ValueError(f"task {t.name} is not among the tasks of group {t.group}")
        for g in self.groups:
            for task in (*g.tasks, *g.separated_from):
                if task not in tasks:
                    raise ValueError(f"group {g.name}: {task!r} is not a task of the plan")
            for other in g.freeze_while_active:
                if other not in groups:
                    raise ValueError(f"group {g.name}: freeze_while_active names {other!r}, "
                                     "not a group of the plan")
        return self

    def group(self, name: str) -> Group:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def group_of(self, task: str) -> Group:
        for group in self.groups:
            if task in group.tasks:
                return group
        raise KeyError(task)

    def directories_of(self, task: str) -> tuple[str, ...]:
        """Where `task` belongs once applied (for ic-periodic --cgroup, or attach)."""
        if self.applied is None:
            raise ValueError("the plan has not been applied")
        return self.applied.directories(self.group_of(task).name)

    def protected_cpus(self, default: int) -> tuple[int, ...]:
        """The CPUs the protected groups run on; `default` for one that keeps its parent's."""
        return tuple(sorted({c for g in self.groups if g.monitor == "protect"
                             for c in (g.cpus or (default,))}))

    def freeze_windows(self) -> tuple[str, ...]:
        """The regions a monitor of this plan freezes for: those of the protect groups, or ()
        (whole jobs) as soon as one protect group has none, so that one critical task's
        windows never shorten another's protection."""
        protect = [g for g in self.groups if g.monitor == "protect"]
        if not protect or any(not g.windows for g in protect):
            return ()
        return tuple(dict.fromkeys(w for g in protect for w in g.windows))

    def evidence(self, group: str) -> tuple[Pair, ...]:
        """The high-contention pairs that put the tasks of `group` in a group of their own."""
        members = set(self.group(group).tasks)
        return tuple(p for p in self.pairs if p.a in members or p.b in members)

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> None:
        outputs.write_text(path, artefact.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> "CgroupPlan":
        return artefact.load(path, cls)
