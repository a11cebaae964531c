"""Which cgroup hierarchies this host has, and whether freeze and kill are available.

Freezing pauses aggressors without killing them; cgroup.kill ends a whole workload at once.
mitigate/ chooses its backend from `CgroupInfo`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .mounts import Mount, read_mounts
from ..base.parse import kernel_version
from .sysfs import kernel_release, read_text

# cgroup.freeze came with 5.2 and cgroup.kill with 5.14; both exist only in non-root cgroups,
# so a fresh hierarchy without children can only be judged by the kernel version.
V2_FREEZE_SINCE = (5, 2)
V2_KILL_SINCE = (5, 14)

V1_CONTROLLERS = frozenset({
    "cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls", "net_prio",
    "blkio", "perf_event", "hugetlb", "pids", "rdma", "misc", "debug",
})

Mode = Literal["v1", "v2", "hybrid", "none"]


@dataclass(frozen=True)
class CgroupInfo:
    mode: Mode
    v1_mounts: dict[str, str]  # controller (or "name=X" for named hierarchies) -> mount path
    v2_mount: str | None
    v2_controllers: tuple[str, ...]
    freezer: Literal["v2", "v1"] | None
    kill: bool


def _v1_controllers(mount: Mount) -> list[str]:
    return [o for o in mount.options if o in V1_CONTROLLERS or o.startswith("name=")]


def v1_mounts(mounts: tuple[Mount, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for mount in mounts:
        if mount.fstype == "cgroup":
            for controller in _v1_controllers(mount):
                found.setdefault(controller, mount.path)
    return found


def v2_mount(mounts: tuple[Mount, ...]) -> str | None:
    return next((m.path for m in mounts if m.fstype == "cgroup2"), None)


def _mode(v1: dict[str, str], v2: str | None) -> Mode:
    if v1 and v2:
        return "hybrid"
    return "v1" if v1 else "v2" if v2 else "none"


def _v2_feature(v2_root: Path, filename: str, since: tuple[int, int],
                kernel: tuple[int, int]) -> bool:
    """Known from the kernel version, or seen in an existing child (distribution backports)."""
    if kernel >= since:
        return True
    try:
        return any((child / filename).exists() for child in v2_root.iterdir() if child.is_dir())
    except OSError:
        return False


def read_cgroups(root: Path = Path("/")) -> CgroupInfo:
    mounts = read_mounts(root)
    v1 = v1_mounts(mounts)
    v2 = v2_mount(mounts)
    kernel = kernel_version(kernel_release(root) or "")
    v2_root = root / v2.lstrip("/") if v2 else None
    controllers = (read_text(v2_root / "cgroup.controllers") or "").split() if v2_root else []
    v2_freeze = v2_root is not None and _v2_feature(v2_root, "cgroup.freeze", V2_FREEZE_SINCE,
                                                    kernel)
    freezer: Literal["v2", "v1"] | None = "v2" if v2_freeze else "v1" if "freezer" in v1 else None
    kill = v2_root is not None and _v2_feature(v2_root, "cgroup.kill", V2_KILL_SINCE, kernel)
    return CgroupInfo(mode=_mode(v1, v2), v1_mounts=v1, v2_mount=v2,
                      v2_controllers=tuple(controllers), freezer=freezer, kill=kill)
