"""The cgroup filesystem boundary: create a plan's groups, move tasks, freeze, tear down.

Which hierarchy does what is detected, not assumed (`detect`):

- pure v2: one hierarchy; cpuset and cpu are enabled in our root's cgroup.subtree_control
  (they must already be enabled in its parent's: we never write outside our root);
- hybrid (v1 controllers plus a v2 mount that has none of them, like systemd's "unified"
  layout): the v2 hierarchy freezes (cgroup.freeze) and reports CPU usage (cpu.stat), the v1
  `cpuset` and `cpu` hierarchies place and weigh;
- pure v1: the v1 freezer and cpuacct hierarchies take those two jobs.

Every group of a plan exists once in every hierarchy used, under one root (`intercore` by
default), and a task is attached to it in all of them. Invariants:

- Nothing outside the root is written. Every mkdir, rmdir and write goes through `_Guard`,
  which refuses any path not under the root; the one exception is the root's parent's
  cgroup.procs, where teardown moves remaining tasks back.
- Nothing intercore did not create is touched. `apply` marks every directory it makes with a
  `trusted.intercore.token` extended attribute (only root can write `trusted.*`), the same
  token throughout one apply, and the root also with its owner (`trusted.intercore.owner`);
  the plan records the token. Before anything is written, a recorded plan is checked against
  the disk (`check_applied`): each path resolves to itself (no link on the way), lies on a
  mounted cgroup filesystem under the plan's root, and carries the token the plan recorded;
  a group to freeze is never the cgroup we run in, nor one of its ancestors. A plan edited
  to point elsewhere, even at another root intercore made, is refused with exit 2 and
  nothing written.
- `apply` is all-or-nothing: on any error it removes what it created, and only that.
- `teardown` thaws before it moves tasks out (a frozen v1 task cannot be killed; a v2 group
  stays frozen when its freezer dies), moves the tasks back to the root's parent, and removes
  the groups children first. It needs only the plan file, and can be run again after a failure.

On kernels with RT group scheduling (CONFIG_RT_GROUP_SCHED, v1 `cpu.rt_runtime_us`) a
SCHED_FIFO task cannot join a cpu cgroup whose RT budget is 0, the default for a new one; the
RT budget left in the root's parent is split evenly between the plan's realtime groups.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, Protocol

from ..base.errors import HostUnsupported, InputError
from ..host.cgroups import CgroupInfo, read_cgroups
from ..host.mounts import read_mounts
from ..base.parse import format_cpu_list
from .plan.record import Applied, AppliedGroup, AppliedHierarchy, CgroupPlan, Group, HierarchyRole

DEFAULT_ROOT = "intercore"
DEFAULT_WEIGHT = 100
_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_TOKEN = re.compile(r"^[0-9a-f]{32}$")  # secrets.token_hex(16), as apply writes it


class OutsideRoot(InputError):
    """A write aimed outside the plan's root: a bug, or a plan file edited to point elsewhere."""

    def __init__(self, message: str):
        super().__init__(message, field="applied")


# Extended attributes of the directories apply creates. trusted.* needs CAP_SYS_ADMIN to
# write, so nobody without root can forge the mark on a cgroup of their own.
TOKEN_XATTR = "trusted.intercore.token"
OWNER_XATTR = "trusted.intercore.owner"
PERSISTENT = "persistent"  # owner of a root made by `mitigate apply`: lives until teardown


class Owner(Protocol):
    """Who removes a root if this process dies before its teardown (intercore.mitigate.
    watchdog.Watchdog): told each root and the apply's token before the root exists."""

    def own(self, root: Path, token: str) -> None: ...


# ---- layout ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hierarchy:
    label: str
    version: Literal[1, 2]
    mount: Path               # on this machine (the filesystem root joined in)
    roles: tuple[HierarchyRole, ...]
    controllers: tuple[str, ...] = ()  # v2: to enable in our root's cgroup.subtree_control


@dataclass(frozen=True)
class Layout:
    mode: str
    hierarchies: tuple[Hierarchy, ...]
    rt_group_sched: bool      # the cpu hierarchy has RT budgets (cpu.rt_runtime_us)

    def for_role(self, role: HierarchyRole) -> Hierarchy | None:
        return next((h for h in self.hierarchies if role in h.roles), None)


def layout_from(info: CgroupInfo, fs_root: Path = Path("/")) -> Layout:
    """Assign each job (freeze, usage, cpuset, cpu) to a hierarchy of this host."""
    v2 = fs_root / info.v2_mount.lstrip("/") if info.v2_mount else None
    v1 = {c: fs_root / p.lstrip("/") for c, p in info.v1_mounts.items()}
    where: dict[HierarchyRole, Path] = {}
    if info.freezer == "v2" and v2 is not None:
        where["freeze"] = v2
    elif "freezer" in v1:
        where["freeze"] = v1["freezer"]
    if v2 is not None:
        where["usage"] = v2  # cpu.stat is a core v2 file, present without the cpu controller
    elif "cpuacct" in v1:
        where["usage"] = v1["cpuacct"]
    for controller in ("cpuset", "cpu"):
        if controller in info.v2_controllers and v2 is not None:
            where[controller] = v2
        elif controller in v1:
            where[controller] = v1[controller]
    hierarchies = []
    for mount in dict.fromkeys(where.values()):
        roles = tuple(r for r, m in where.items() if m == mount)
        if mount == v2:
            hierarchies.append(Hierarchy("v2", 2, mount, roles,
                                         tuple(r for r in roles if r in ("cpuset", "cpu"))))
        else:
            label = ",".join(sorted(c for c, p in v1.items() if p == mount and "=" not in c))
            hierarchies.append(Hierarchy(label, 1, mount, roles))
    cpu = where.get("cpu")
    rt = cpu is not None and cpu != v2 and (cpu / "cpu.rt_runtime_us").exists()
    return Layout(info.mode, tuple(hierarchies), rt)


def detect(fs_root: Path = Path("/")) -> Layout:
    return layout_from(read_cgroups(fs_root), fs_root)


# ---- the filesystem ----------------------------------------------------------------------------

class CgroupIO:
    """The only code that touches cgroup files. Tests substitute a fake kernel for hosts this
    machine is not (tests/mitigate/fake_cgroup2.py)."""

    def mkdir(self, path: Path) -> None:
        os.mkdir(path)

    def rmdir(self, path: Path) -> None:
        os.rmdir(path)

    def write(self, path: Path, text: str) -> None:
        # One write() per value: the kernel parses each write as one command. Errors name the
        # file (os.write alone would not), keeping their errno subclass (PermissionError ...).
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(path)) from None

    def read(self, path: Path) -> str:
        return path.read_text()

    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def children(self, path: Path) -> list[Path]:
        return sorted(p for p in path.iterdir() if p.is_dir())

    def set_mark(self, path: Path, name: str, value: str) -> None:
        os.setxattr(path, name, value.encode(), follow_symlinks=False)

    def mark(self, path: Path, name: str) -> str | None:
        """The attribute's value, or None when the directory has none."""
        try:
            return os.getxattr(path, name, follow_symlinks=False).decode(errors="replace")
        except OSError as exc:
            if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.ENOENT):
                return None
            raise

    def resolves_to_itself(self, path: Path) -> bool:
        """No symbolic link anywhere on the way to path."""
        return os.path.realpath(path) == os.path.normpath(path)


def _inside(path: Path, root: Path) -> bool:
    path, root = Path(os.path.normpath(path)), Path(os.path.normpath(root))
    return path == root or root in path.parents


class _Guard:
    """CgroupIO restricted to `roots` (and cgroup.procs of `parents`, for moving tasks back)."""

    def __init__(self, io: CgroupIO, roots: list[Path], parents: list[Path] = ()):
        self.io = io
        self.roots = roots
        self.procs = [p / "cgroup.procs" for p in parents]

    def _check(self, path: Path) -> Path:
        if ".." in path.parts or not any(_inside(path, r) for r in self.roots):
            roots = ", ".join(map(str, self.roots))
            raise OutsideRoot(f"refusing to touch {path}: outside {roots}")
        return path

    def mkdir(self, path: Path) -> None:
        self.io.mkdir(self._check(path))

    def rmdir(self, path: Path) -> None:
        self.io.rmdir(self._check(path))

    def write(self, path: Path, text: str) -> None:
        if path not in self.procs:
            self._check(path)
        self.io.write(path, text)


def _pids(io: CgroupIO, group: Path) -> list[int]:
    try:
        return [int(x) for x in io.read(group / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def weight_to_shares(weight: int) -> int:
    """v2 cpu.weight (default 100) to v1 cpu.shares (default 1024), the mapping systemd uses."""
    return max(2, min(262144, round(weight * 1024 / 100)))


# ---- status ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupStatus:
    name: str
    present: dict[str, bool]          # hierarchy label -> the directory exists
    pids: tuple[int, ...]             # tasks, as the freeze hierarchy lists them
    consistent: bool                  # every hierarchy lists the same tasks
    freeze_requested: bool | None     # None: no freezer hierarchy holds the group
    frozen: bool | None               # every task has stopped
    cpus: str | None                  # effective cpuset
    weight: str | None                # cpu.weight (v2) or cpu.shares (v1)

    def to_dict(self) -> dict:
        return {"name": self.name, "present": self.present, "pids": list(self.pids),
                "consistent": self.consistent, "freeze_requested": self.freeze_requested,
                "frozen": self.frozen, "cpus": self.cpus, "weight": self.weight}


# ---- operations --------------------------------------------------------------------------------

@dataclass
class _Creation:
    """Directories created so far, for the all-or-nothing rollback of apply."""

    guard: _Guard
    token: str  # marks every directory of this apply
    owner: str  # the root's owner mark
    created: list[tuple[Path, Path]] = field(default_factory=list)  # (directory, parent of root)


class Cgroups:
    """Plans applied to this host's cgroup hierarchies (or to a fake tree, in tests)."""

    def __init__(self, layout: Layout | None = None, io: CgroupIO | None = None,
                 fs_root: Path = Path("/")):
        self.layout = layout if layout is not None else detect(fs_root)
        self.io = io if io is not None else CgroupIO()
        self.fs_root = fs_root

    # ---- apply ---------------------------------------------------------------------------------

    def apply(self, plan: CgroupPlan, root_name: str = DEFAULT_ROOT,
              owner: Owner | None = None) -> CgroupPlan:
        """Create every group of `plan` under `root_name`; returns the plan with `applied`.

        Without `owner` the groups persist until teardown (`mitigate apply`). With one (a
        running ic-watchdog, intercore.mitigate.freezer.watchdog), they belong to this process: the
        watchdog is told about each root before it is created, and removes the trees if this
        process dies; `mitigate teardown --stale` finds them by the owner mark too."""
        if plan.applied is not None:
            raise InputError(f"this plan is already applied under {plan.applied.root_name}; "
                             "tear it down first", field="PLAN")
        parts = root_parts(root_name)
        hierarchies = self._hierarchies_for(plan)
        roots = {h.label: h.mount.joinpath(*parts) for h in hierarchies}
        for h in hierarchies:
            self._check_parent(h, roots[h.label])
        guard = _Guard(self.io, list(roots.values()))
        token = secrets.token_hex(16)
        creation = _Creation(guard, token, _owner_mark() if owner is not None else PERSISTENT)
        if owner is not None:
            for root in roots.values():
                owner.own(root, token)
        try:
            rt_root, rt_share = self._rt_budget(plan, hierarchies, roots)
            for h in hierarchies:
                self._make_root(creation, h, roots[h.label], rt_root)
            for group in plan.groups:
                for h in hierarchies:
                    self._make_group(creation, h, roots[h.label] / group.name, group,
                                     rt_share if group.realtime else None)
        except BaseException as exc:
            left = self._rollback(creation)
            if isinstance(exc, OSError):
                raise _os_error("apply", exc, left) from None
            raise
        applied = Applied(
            root_name=root_name, created_at=datetime.now(timezone.utc).isoformat(),
            hierarchies=tuple(AppliedHierarchy(label=h.label, version=h.version,
                                               mount=str(h.mount), roles=h.roles,
                                               root=str(roots[h.label]),
                                               controllers=h.controllers)
                              for h in hierarchies),
            groups=tuple(self._applied_group(g.name, hierarchies, roots,
                                             rt_share if g.realtime else None)
                         for g in plan.groups),
            rt_runtime_us=rt_root, token=token)
        return plan.model_copy(update={"applied": applied})

    def _hierarchies_for(self, plan: CgroupPlan) -> tuple[Hierarchy, ...]:
        needs = {"freeze": any(g.freezer for g in plan.groups),
                 "cpuset": any(g.cpus is not None for g in plan.groups),
                 "cpu": any(g.weight != DEFAULT_WEIGHT for g in plan.groups)}
        for role, needed in needs.items():
            if needed and self.layout.for_role(role) is None:
                raise HostUnsupported(f"the plan needs the cgroup {role} controller, which no "
                                      f"mounted hierarchy provides (cgroup mode: "
                                      f"{self.layout.mode})")
        if not self.layout.hierarchies:
            raise HostUnsupported("no cgroup hierarchy is mounted")
        return self.layout.hierarchies

    def _check_parent(self, h: Hierarchy, root: Path) -> None:
        parent = root.parent
        if not self.io.is_dir(parent):
            raise InputError(f"{parent} does not exist; the parent of the root must",
                             field="--root")
        if self.io.is_dir(root):
            hint = "tear it down with its plan, or choose another --root"
            if not owner_alive(self.io.mark(root, OWNER_XATTR)):
                hint = "its owner died: `intercore mitigate teardown --stale` removes it"
            raise InputError(f"{root} already exists ({hint})", field="--root")
        if h.controllers:
            enabled = self.io.read(parent / "cgroup.subtree_control").split()
            missing = [c for c in h.controllers if c not in enabled]
            if missing:
                raise HostUnsupported(
                    f"{parent} does not delegate {' '.join(missing)} to its children; enable "
                    f"it (echo '{' '.join('+' + c for c in missing)}' > "
                    f"{parent / 'cgroup.subtree_control'}) or use a --root under a delegated "
                    "cgroup")

    def _rt_budget(self, plan: CgroupPlan, hierarchies, roots) -> tuple[int | None, int | None]:
        """(budget of the root, budget of each realtime group) in µs per period, or Nones."""
        realtime = sum(g.realtime for g in plan.groups)
        cpu = next((h for h in hierarchies if "cpu" in h.roles), None)
        if not realtime or cpu is None or cpu.version != 1 or not self.layout.rt_group_sched:
            return None, None
        parent = roots[cpu.label].parent
        runtime = int(self.io.read(parent / "cpu.rt_runtime_us"))
        if runtime < 0:  # unlimited: the whole period is available
            runtime = int(self.io.read(parent / "cpu.rt_period_us"))
        holders = {c.name: max(0, int(self.io.read(c / "cpu.rt_runtime_us")))
                   for c in self.io.children(parent)}
        holders = {name: us for name, us in holders.items() if us}
        taken = sum(holders.values())
        share = (runtime - taken) // realtime
        if share <= 0:
            # Name the holders: a root left by a killed run is the usual one, and the user
            # can only free the budget knowing which.
            held = ", ".join(f"{name} {us}" for name, us in sorted(holders.items()))
            raise HostUnsupported(f"no RT budget is left in {parent} (cpu.rt_runtime_us "
                                  f"{runtime}, held by: {held}): SCHED_FIFO tasks cannot join "
                                  "a cpu cgroup without one; `intercore mitigate teardown "
                                  "--stale` removes roots whose owner died")
        return share * realtime, share

    def _mkdir(self, creation: _Creation, path: Path, root: Path) -> None:
        creation.guard.mkdir(path)
        creation.created.append((path, root.parent))
        # At once: an owner's watchdog removes only what carries the token.
        self.io.set_mark(path, TOKEN_XATTR, creation.token)
        if path == root:
            self.io.set_mark(path, OWNER_XATTR, creation.owner)

    def _make_root(self, creation: _Creation, h: Hierarchy, root: Path,
                   rt_runtime: int | None) -> None:
        self._mkdir(creation, root, root)
        write = creation.guard.write
        if "cpuset" in h.roles and h.version == 1:
            # A new v1 cpuset has no CPUs and no memory nodes, and refuses tasks until given both.
            for name in ("cpuset.cpus", "cpuset.mems"):
                write(root / name, self.io.read(root.parent / name).strip())
        if "cpu" in h.roles and rt_runtime is not None:
            write(root / "cpu.rt_runtime_us", str(rt_runtime))
        if h.controllers:
            write(root / "cgroup.subtree_control", " ".join("+" + c for c in h.controllers))

    def _make_group(self, creation: _Creation, h: Hierarchy, path: Path, group: Group,
                    rt_runtime: int | None) -> None:
        root = path.parent
        self._mkdir(creation, path, root)
        write = creation.guard.write
        if "cpuset" in h.roles:
            if h.version == 1:
                cpus = self.io.read(root / "cpuset.cpus").strip() if group.cpus is None \
                    else format_cpu_list(group.cpus)
                write(path / "cpuset.cpus", cpus)
                write(path / "cpuset.mems", self.io.read(root / "cpuset.mems").strip())
            elif group.cpus is not None:  # v2: an empty cpuset.cpus uses the parent's
                write(path / "cpuset.cpus", format_cpu_list(group.cpus))
        if "cpu" in h.roles:
            if h.version == 2:
                write(path / "cpu.weight", str(group.weight))
            else:
                write(path / "cpu.shares", str(weight_to_shares(group.weight)))
                if rt_runtime is not None:
                    write(path / "cpu.rt_runtime_us", str(rt_runtime))

    def _applied_group(self, name: str, hierarchies, roots, rt_runtime) -> AppliedGroup:
        paths = {h.label: roots[h.label] / name for h in hierarchies}
        freeze = next((h for h in hierarchies if "freeze" in h.roles), None)
        usage = next((h for h in hierarchies if "usage" in h.roles), None)
        return AppliedGroup(name=name, paths={k: str(v) for k, v in paths.items()},
                            **_freeze_files(freeze, paths[freeze.label] if freeze else None),
                            **_usage_file(usage, paths[usage.label] if usage else None),
                            rt_runtime_us=rt_runtime)

    def _rollback(self, creation: _Creation) -> list[Path]:
        """Remove what apply created, newest first; returns what could not be removed."""
        left = []
        for path, parent in reversed(creation.created):
            guard = _Guard(self.io, [path], [parent])
            try:
                self._empty_and_remove(guard, path, parent)
            except OSError:
                left.append(path)
        return left

    # ---- using an applied plan -----------------------------------------------------------------

    def attach(self, plan: CgroupPlan, group: str, pid: int) -> None:
        """Move process `pid` (all its threads) into `group` in every hierarchy."""
        applied = _applied(plan)
        target = applied.group(_known_group(plan, group))
        guard = self._guard(applied)
        for directory in applied.directories(target.name):
            try:
                guard.write(Path(directory) / "cgroup.procs", str(pid))
            except OSError as exc:
                hint = ""
                if exc.errno == errno.EINVAL and Path(directory).is_relative_to(
                        self._cpu_mount(applied)):
                    hint = (" (a SCHED_FIFO task needs an RT budget in a cpu cgroup: was the "
                            "group planned as realtime, i.e. does its task have a priority?)")
                raise HostUnsupported(f"cannot move pid {pid} into {directory}: "
                                      f"{exc.strerror}{hint}") from None

    @staticmethod
    def _cpu_mount(applied: Applied) -> Path:
        return next((Path(h.mount) for h in applied.hierarchies if "cpu" in h.roles),
                    Path("/nonexistent"))

    def freeze(self, plan: CgroupPlan, group: str) -> None:
        """Request the freeze. The write is the actuation: running tasks stop within tens of
        µs; `frozen()` turns true only once every task has passed the freezer, which can lag."""
        self._set_frozen(plan, group, True)

    def thaw(self, plan: CgroupPlan, group: str) -> None:
        self._set_frozen(plan, group, False)

    def _set_frozen(self, plan: CgroupPlan, group: str, frozen: bool) -> None:
        applied = _applied(plan)
        name = _known_group(plan, group)
        if frozen and not plan.group(name).freezer:
            raise InputError(f"group {name!r} is not freezer-enabled in the plan "
                             f"(its monitor role is {plan.group(name).monitor})", field="GROUP")
        target = _freezer_of(applied, name)
        guard = self._guard(applied)
        if frozen:
            self.check_freezable(applied, (name,))
        guard.write(Path(target.freeze_file), _freeze_value(target.freeze_kind, frozen))

    def frozen(self, plan: CgroupPlan, group: str) -> bool:
        """Whether every task of the group has stopped (not merely been asked to)."""
        return _read_frozen(self.io, _freezer_of(_applied(plan), _known_group(plan, group)))[1]

    def status(self, applied: Applied) -> tuple[GroupStatus, ...]:
        self.check_applied(applied)
        return tuple(self._group_status(applied, g) for g in applied.groups)

    def _group_status(self, applied: Applied, group: AppliedGroup) -> GroupStatus:
        present = {label: self.io.is_dir(Path(p)) for label, p in group.paths.items()}
        pid_lists = {label: tuple(sorted(_pids(self.io, Path(p))))
                     for label, p in group.paths.items() if present[label]}
        freeze_label = next((h.label for h in applied.hierarchies if "freeze" in h.roles), None)
        pids = pid_lists.get(freeze_label) or next(iter(pid_lists.values()), ())
        requested, frozen = _read_frozen(self.io, group) if group.freeze_file is not None and \
            present.get(freeze_label, False) else (None, None)
        return GroupStatus(name=group.name, present=present, pids=pids,
                           consistent=len(set(pid_lists.values())) <= 1,
                           freeze_requested=requested, frozen=frozen,
                           cpus=self._file_in(applied, group, "cpuset",
                                              ("cpuset.effective_cpus", "cpuset.cpus")),
                           weight=self._file_in(applied, group, "cpu",
                                                ("cpu.weight", "cpu.shares")))

    def _file_in(self, applied: Applied, group: AppliedGroup, role: str,
                 names: tuple[str, ...]) -> str | None:
        h = next((h for h in applied.hierarchies if role in h.roles), None)
        if h is None:
            return None
        for name in names:
            try:
                return self.io.read(Path(group.paths[h.label]) / name).strip()
            except OSError:
                continue
        return None

    # ---- teardown ------------------------------------------------------------------------------

    def teardown(self, plan: CgroupPlan) -> CgroupPlan:
        """Thaw, move remaining tasks to the root's parent, remove the groups; the plan comes
        back without `applied`. Safe to repeat after a partial failure."""
        self.remove(_applied(plan))
        return plan.model_copy(update={"applied": None})

    def remove(self, applied: Applied) -> None:
        """Teardown of an Applied record (from a plan, or from `discover` after a crash)."""
        guard = self._guard(applied)
        left = self._thaw_all(guard, applied)
        for h in applied.hierarchies:
            root = Path(h.root)
            for path in [Path(g.paths[h.label]) for g in applied.groups] + [root]:
                if not self.io.is_dir(path):
                    continue
                try:
                    self._empty_and_remove(guard, path, root.parent)
                except OSError:
                    left.append(path)
        if left:
            raise HostUnsupported("could not remove " + ", ".join(map(str, left)) +
                                  "; the plan still records them: run teardown again")

    def _thaw_all(self, guard: _Guard, applied: Applied) -> list[Path]:
        """Thaw the root (someone may have frozen the whole tree) and every group, before any
        task is moved: a frozen v1 task cannot even be killed. Returns the groups that failed."""
        h = next((h for h in applied.hierarchies if "freeze" in h.roles), None)
        if h is None:
            return []
        root = _freeze_files(_as_hierarchy(h), Path(h.root))
        failed = []
        for files in [root] + [g.model_dump() for g in applied.groups]:
            if files["freeze_file"] is None:
                continue
            path = Path(files["freeze_file"])
            if self.io.is_dir(path.parent):
                try:
                    guard.write(path, _freeze_value(files["freeze_kind"], False))
                except OSError:
                    failed.append(path.parent)
        return failed

    def _empty_and_remove(self, guard: _Guard, path: Path, parent: Path,
                          attempts: int = 50) -> None:
        for attempt in range(attempts):
            for pid in _pids(self.io, path):
                try:
                    guard.write(parent / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass  # exited meanwhile
            try:
                guard.rmdir(path)
                return
            except OSError as exc:
                # EBUSY: a task forked or was still leaving; try again shortly.
                if exc.errno != errno.EBUSY or attempt == attempts - 1:
                    raise
                time.sleep(0.01)

    def check_applied(self, applied: Applied) -> None:
        """Everything a recorded plan names is what apply made, checked before any write:
        the recorded layout on mounted cgroup filesystems (below), no link on the way, and
        intercore's mark with the root's token on every directory that exists."""
        mounts = {str(self.fs_root / m.path.lstrip("/")) for m in read_mounts(self.fs_root)
                  if m.fstype in ("cgroup", "cgroup2")}
        parts = root_parts(applied.root_name)
        for h in applied.hierarchies:
            mount = Path(h.mount)
            if str(mount) not in mounts:
                raise InputError(f"{h.mount} is not a mounted cgroup hierarchy",
                                 field="applied.hierarchies")
            if Path(h.root) != mount.joinpath(*parts):
                raise InputError(f"{h.root} is not {applied.root_name} under {h.mount}",
                                 field="applied.hierarchies")
            for group in applied.groups:
                if not _COMPONENT.match(group.name) or \
                        Path(group.paths.get(h.label, "")) != Path(h.root) / group.name:
                    raise InputError(f"group {group.name} is not directly under {h.root}",
                                     field="applied.groups")
            self._check_marks(h, applied)
        freeze = next((h for h in applied.hierarchies if "freeze" in h.roles), None)
        usage = next((h for h in applied.hierarchies if "usage" in h.roles), None)
        for group in applied.groups:
            expected = {**_freeze_files(_as_hierarchy(freeze) if freeze else None,
                                        Path(group.paths[freeze.label]) if freeze else None),
                        **_usage_file(_as_hierarchy(usage) if usage else None,
                                      Path(group.paths[usage.label]) if usage else None)}
            for key, value in expected.items():
                if getattr(group, key) != value:
                    raise InputError(f"group {group.name}: {key} is {getattr(group, key)!r}, "
                                     f"not {value!r} as apply records it",
                                     field=f"applied.groups.{key}")

    def _check_marks(self, h: AppliedHierarchy, applied: Applied) -> None:
        root = Path(h.root)
        if not self.io.is_dir(root):
            return  # already removed: nothing there to act on
        if not self.io.resolves_to_itself(root):
            raise InputError(f"{root} goes through a symbolic link", field="applied.hierarchies")
        token = self.io.mark(root, TOKEN_XATTR)
        if token is None or not _TOKEN.match(token):
            raise InputError(f"{root} was not created by intercore (it has no {TOKEN_XATTR} "
                             "mark); refusing to touch it", field="applied.hierarchies")
        if recorded_token(applied) != token:
            raise InputError(f"{root} was made by another apply than the one this plan records "
                             f"(its {TOKEN_XATTR} mark differs); refusing to touch it",
                             field="applied.token")
        for group in applied.groups:
            path = Path(group.paths[h.label])
            if not self.io.is_dir(path):
                continue
            if not self.io.resolves_to_itself(path) or self.io.mark(path, TOKEN_XATTR) != token:
                raise InputError(f"{path} was not created with {root} by intercore (its "
                                 f"{TOKEN_XATTR} mark differs); refusing to touch it",
                                 field="applied.groups")

    def check_freezable(self, applied: Applied, groups: tuple[str, ...]) -> None:
        """Freezing a group that holds us, or an ancestor of ours, would freeze this process
        and whatever is meant to thaw it (the monitor, its watchdog, the CLI)."""
        h = next((h for h in applied.hierarchies if "freeze" in h.roles), None)
        own = _own_cgroup(self.fs_root, h) if h is not None else None
        if own is None:
            return
        for name in groups:
            path = Path(applied.group(name).paths[h.label])
            if own == path or path in own.parents:
                raise InputError(f"group {name} ({path}) holds this process ({own}): freezing "
                                 "it would freeze intercore itself", field="GROUP")

    def _guard(self, applied: Applied) -> _Guard:
        self.check_applied(applied)
        roots = [Path(h.root) for h in applied.hierarchies]
        return _Guard(self.io, roots, [r.parent for r in roots])

    # ---- finding what exists -------------------------------------------------------------------

    def discover(self, root_name: str = DEFAULT_ROOT) -> Applied | None:
        """An Applied record rebuilt from the directories under `root_name` (for `status`
        without a plan, and for cleaning up after a crash); None if no hierarchy has it."""
        parts = root_parts(root_name)
        found = [h for h in self.layout.hierarchies if self.io.is_dir(h.mount.joinpath(*parts))]
        if not found:
            return None
        roots = {h.label: h.mount.joinpath(*parts) for h in found}
        names = dict.fromkeys(c.name for h in found for c in self.io.children(roots[h.label]))
        # What is on disk is all there is to go by: the first root's token, which the others
        # and every group must then carry too (check_applied).
        token = self.io.mark(roots[found[0].label], TOKEN_XATTR)
        return Applied(
            root_name=root_name, created_at="",
            hierarchies=tuple(AppliedHierarchy(label=h.label, version=h.version,
                                               mount=str(h.mount), roles=h.roles,
                                               root=str(roots[h.label]),
                                               controllers=h.controllers) for h in found),
            groups=tuple(self._applied_group(n, found, roots, None) for n in names),
            token=token if token is not None and _TOKEN.match(token) else None)

    def stale_roots(self, depth: int = 3) -> list[str]:
        """Names of roots (relative to their hierarchy) whose owner no longer runs: what a
        process that applied a plan for its own lifetime left when it was killed before its
        watchdog could remove them. Roots made by `mitigate apply` are never stale."""
        found: list[str] = []
        for h in self.layout.hierarchies:
            level = [h.mount]
            for _ in range(depth):
                below = []
                for parent in level:
                    for child in self.io.children(parent):
                        mark = self.io.mark(child, OWNER_XATTR)
                        if mark is None:
                            below.append(child)
                        elif not owner_alive(mark):
                            found.append(str(child.relative_to(h.mount)))
                level = below
        return list(dict.fromkeys(found))

    def roots_named(self, prefix: str) -> list[Path]:
        """Top-level cgroups whose name starts with `prefix`, in every mounted hierarchy."""
        found = []
        for m in read_mounts(self.fs_root):
            if m.fstype in ("cgroup", "cgroup2"):
                mount = self.fs_root / m.path.lstrip("/")
                if self.io.is_dir(mount):
                    found += [c for c in self.io.children(mount) if c.name.startswith(prefix)]
        return found


# ---- helpers -----------------------------------------------------------------------------------

def _own_cgroup(fs_root: Path, h: AppliedHierarchy) -> Path | None:
    """This process's cgroup directory in hierarchy h (/proc/self/cgroup), or None."""
    try:
        lines = (fs_root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if h.version == 2 and number == "0" and not controllers:
            return Path(h.mount) / path.lstrip("/")
        if h.version == 1 and set(controllers.split(",")) & set(h.label.split(",")):
            return Path(h.mount) / path.lstrip("/")
    return None


def _owner_mark() -> str:
    """`pid=P start=T` of this process: with the start time, a reused pid is not us."""
    return f"pid={os.getpid()} start={_start_time(os.getpid())}"


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def owner_alive(mark: str | None) -> bool:
    """Whether the owner a root's mark names still runs; a persistent root always does."""
    if mark is None or mark == PERSISTENT:
        return True
    fields = dict(item.split("=", 1) for item in mark.split() if "=" in item)
    try:
        pid, start = int(fields["pid"]), fields["start"]
    except (KeyError, ValueError):
        return True  # not a mark we wrote: never call it stale
    return str(_start_time(pid)) == start


def recorded_token(applied: Applied) -> str:
    """The creation token an applied plan records. Plans applied before intercore recorded
    it are refused rather than trusted: without it a plan edited to name another root that
    intercore made could not be told from the original."""
    if applied.token is None:
        raise InputError(f"this plan records no creation token (it was applied by an older "
                         f"intercore), so intercore cannot tell that {applied.root_name} is the "
                         f"root it made for it: remove the groups with `intercore mitigate "
                         f"teardown --root {applied.root_name}` (which goes by the marks on "
                         f"disk), then tearing down this plan clears its record, and apply it "
                         f"again", field="applied.token")
    return applied.token


def root_parts(root_name: str) -> tuple[str, ...]:
    parts = tuple(root_name.strip("/").split("/"))
    if not root_name.strip() or not all(_COMPONENT.match(p) for p in parts):
        raise InputError(f"{root_name!r} is not a cgroup path below the hierarchy root "
                         "(letters, digits, '_', '.', '-'; nested as a/b)", field="--root")
    return parts


def _applied(plan: CgroupPlan) -> Applied:
    if plan.applied is None:
        raise InputError("this plan has not been applied (run `intercore mitigate apply`)",
                         field="PLAN")
    return plan.applied


def _known_group(plan: CgroupPlan, group: str) -> str:
    names = [g.name for g in plan.groups]
    if group in names:
        return group
    if any(t.name == group for t in plan.tasks):
        return plan.group_of(group).name
    raise InputError(f"no group or task {group!r} in the plan (groups: {', '.join(names)})",
                     field="GROUP")


def _as_hierarchy(h: AppliedHierarchy) -> Hierarchy:
    return Hierarchy(h.label, h.version, Path(h.mount), h.roles, h.controllers)


def _freezer_of(applied: Applied, group: str) -> AppliedGroup:
    target = applied.group(group)
    if target.freeze_file is None:
        raise HostUnsupported("no freezer hierarchy was available when the plan was applied")
    return target


def _freeze_value(kind: str, frozen: bool) -> str:
    if kind == "v2":
        return "1" if frozen else "0"
    return "FROZEN" if frozen else "THAWED"


def _read_frozen(io: CgroupIO, group: AppliedGroup) -> tuple[bool, bool]:
    """(freeze requested, every task stopped)."""
    if group.freeze_kind == "v2":
        requested = io.read(Path(group.freeze_file)).strip() == "1"
        events = dict(line.split() for line in io.read(Path(group.events_file)).splitlines()
                      if line.strip())
        return requested, events.get("frozen") == "1"
    state = io.read(Path(group.freeze_file)).strip()
    return state != "THAWED", state == "FROZEN"


def _freeze_files(h: Hierarchy | None, group: Path | None) -> dict:
    if h is None:
        return {"freeze_kind": None, "freeze_file": None, "events_file": None}
    if h.version == 2:
        return {"freeze_kind": "v2", "freeze_file": str(group / "cgroup.freeze"),
                "events_file": str(group / "cgroup.events")}
    return {"freeze_kind": "v1", "freeze_file": str(group / "freezer.state"),
            "events_file": None}


def _usage_file(h: Hierarchy | None, group: Path | None) -> dict:
    if h is None:
        return {"usage_kind": None, "usage_file": None}
    return {"usage_kind": "v2" if h.version == 2 else "v1",
            "usage_file": str(group / ("cpu.stat" if h.version == 2 else "cpuacct.usage"))}


def _os_error(what: str, exc: OSError, left: list[Path]) -> Exception:
    where = f"{exc.filename}: " if exc.filename else ""
    tail = ("; nothing was left behind" if not left else
            "; could not remove " + ", ".join(map(str, left)))
    if isinstance(exc, PermissionError):
        return HostUnsupported(f"{what} needs root or a delegated cgroup ({where}"
                               f"{exc.strerror}){tail}")
    return HostUnsupported(f"{what} failed: {where}{exc.strerror}{tail}")
