"""The cgroup plan: Algorithm 1's output, and after `apply` the record of what was created.

A plan is a typed, saved artefact (JSON). `algorithm1.plan()` fills everything but `applied`;
`cgroupfs.apply()` adds `applied` (the directory of every group in every hierarchy, and the
files a monitor writes to freeze a group and reads to see its CPU usage), so that `teardown`,
`status` and the native monitor need nothing but this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import artefact

FORMAT = "intercore.cgroup-plan/1"

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


class PlanTask(_Frozen):
    name: str
    role: Role
    group: str
    cpu: int | None
    priority: int
    weight: int


class Pair(_Frozen):
    """A high-contention pair: the evidence for a separation."""

    a: str
    b: str
    interference: float   # symmetric I_ab
    a_beside_b: float     # directed: degradation of a when b runs beside it
    b_beside_a: float


class Group(_Frozen):
    name: str
    tasks: tuple[str, ...]
    separated: bool       # a sub-cgroup of its own because of a high-contention pair
    freezer: bool         # the freezer is enabled: a monitor may pause this group
    monitor: MonitorRole
    cpus: tuple[int, ...] | None  # cpuset.cpus; None: all the CPUs of the parent
    weight: int           # cgroup v2 cpu.weight scale, 1..10000
    realtime: bool        # holds a SCHED_FIFO task (needs an RT budget under RT group scheduling)
    separated_from: tuple[str, ...] = ()      # tasks it forms a high-contention pair with
    freeze_while_active: tuple[str, ...] = ()  # protect groups: the groups to freeze meanwhile


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
    theta: float
    tasks: tuple[PlanTask, ...]
    groups: tuple[Group, ...]
    pairs: tuple[Pair, ...] = Field(default=())  # every pair with I > theta
    warnings: tuple[PlanWarning, ...] = ()
    applied: Applied | None = None

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

    def evidence(self, group: str) -> tuple[Pair, ...]:
        """The high-contention pairs that put the tasks of `group` in a group of their own."""
        members = set(self.group(group).tasks)
        return tuple(p for p in self.pairs if p.a in members or p.b in members)

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> None:
        artefact.write_atomic(path, artefact.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> "CgroupPlan":
        return artefact.load(path, cls)
