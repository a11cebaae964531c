"""From an applied cgroup plan to the monitor that enforces it.

The plan says which groups a monitor may freeze (monitor role "freeze": separated best-effort
groups) and whose activity triggers the freezing ("protect": separated critical groups); after
`apply` it also records the freeze and CPU-usage files of every group. This module turns that
into ic-monitor's group arguments, so `intercore mitigate monitor --plan` and the protection
experiment drive the monitor from the same artefact.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

from ...base.errors import InputError
from ..cgroupfs import Cgroups
from .monitor import MonitorSpec
from .notify_block import published_regions
from ..plan.record import AppliedGroup, CgroupPlan


def monitor_entry(group: AppliedGroup) -> str:
    """`DIR`, or `DIR+USAGE_DIR` where the usage file lives in another hierarchy (v1 hosts)."""
    if group.freeze_file is None:
        raise InputError(f"group {group.name!r} has no freezer on this host", field="PLAN")
    freeze_dir = str(Path(group.freeze_file).parent)
    if group.usage_file is None:
        return freeze_dir
    usage_dir = str(Path(group.usage_file).parent)
    return freeze_dir if usage_dir == freeze_dir else f"{freeze_dir}+{usage_dir}"


def roles(plan: CgroupPlan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(critical group names, best-effort group names) the monitor acts on."""
    return (tuple(g.name for g in plan.groups if g.monitor == "protect"),
            tuple(g.name for g in plan.groups if g.monitor == "freeze"))


def monitor_spec(plan: CgroupPlan, base: MonitorSpec | None = None, **options) -> MonitorSpec:
    """The MonitorSpec that enforces `plan`: its group arguments from the applied plan, the
    rest (policy, interval, notify, CPU ...) from `options`."""
    if plan.applied is None:
        raise InputError("the plan has not been applied: run `intercore mitigate apply` first",
                         field="PLAN")
    if options.get("notify") is not None:
        check_notify_block(options["notify"])
    critical, best_effort = roles(plan)
    if not best_effort:
        raise InputError("the plan separates no best-effort group, so there is nothing to "
                         f"freeze (no pair has I > θ = {plan.theta:g})", field="PLAN")
    groups = {"critical": tuple(monitor_entry(plan.applied.group(g)) for g in critical),
              "best_effort": tuple(monitor_entry(plan.applied.group(g)) for g in best_effort)}
    if base is not None:
        return replace(base, **groups, **options)
    return MonitorSpec(**groups, **options)


def windows_from_plan(plan: CgroupPlan, notify: str | Path | None
                      ) -> tuple[tuple[str, ...], str | None]:
    """The plan's freeze windows that a monitor watching `notify` can honour, and a note
    whenever it protects differently from what the plan says. Falling back is always to
    whole jobs, which freeze more: the critical task is never protected less than planned.
    The block names the regions of one critical task; the plan's windows of another task are
    left to the monitor that watches that one."""
    wanted = plan.freeze_windows()
    if not wanted:
        return (), None
    listed = ", ".join(wanted)
    if notify is None:
        return (), (f"the plan freezes only in regions {listed}, which needs the critical "
                    "task's --notify block: the monitor protects whole jobs")
    published = published_regions(notify)
    if published is None:  # no runner yet: ic-monitor matches the names when one starts
        return wanted, f"freeze windows from the plan: {listed}"
    named = {r for r in published if r}
    if not named:
        return (), (f"the task publishing {notify} has no region markers: the monitor "
                    f"protects its whole jobs, not the plan's windows ({listed})")
    mine = tuple(w for w in wanted if w in named)
    if not mine:
        return (), (f"the task publishing {notify} has none of the plan's window regions "
                    f"({listed}): the monitor protects its whole jobs")
    others = [w for w in wanted if w not in named]
    return mine, (f"freeze windows from the plan: {', '.join(mine)}"
                  + (f" ({', '.join(others)}: another task's)" if others else ""))


def check_notify_block(path: str) -> None:
    """What ic-monitor refuses to map as a notification block (ic_shm_open_file), refused
    here with exit 2 before anything starts: a link, anything but a regular file, a file
    another user owns or may write, a file with a second name. A missing block is made by
    whichever side starts first, and one that no runner has written yet is waited for."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}", field="--notify") from None
    why = ("is a symbolic link" if stat.S_ISLNK(st.st_mode) else
           "is not a regular file" if not stat.S_ISREG(st.st_mode) else
           f"belongs to uid {st.st_uid}, not to us" if st.st_uid != os.geteuid() else
           f"has {st.st_nlink} names (hard links)" if st.st_nlink != 1 else
           "may be written by other users" if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
           else None)
    if why:
        raise InputError(f"{path} {why}: not a notification block ic-monitor will map",
                         field="--notify")


def check_on_host(plan: CgroupPlan, cgroups: Cgroups | None = None) -> None:
    """Before a monitor is started on `plan`: every group it names is what intercore created
    (Cgroups.check_applied), and no group it may freeze holds this process or the monitor,
    which runs in the same cgroup. Raises InputError (exit 2) with nothing written."""
    if plan.applied is None:
        raise InputError("the plan has not been applied: run `intercore mitigate apply` first",
                         field="PLAN")
    cgroups = cgroups or Cgroups()
    cgroups.check_applied(plan.applied)
    cgroups.check_freezable(plan.applied, roles(plan)[1])
