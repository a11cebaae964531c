"""From an applied cgroup plan to the monitor that enforces it.

The plan says which groups a monitor may freeze (monitor role "freeze": separated best-effort
groups) and whose activity triggers the freezing ("protect": separated critical groups); after
`apply` it also records the freeze and CPU-usage files of every group. This module turns that
into ic-monitor's group arguments, so `intercore monitor --plan` and the protection experiment
drive the monitor from the same artefact.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import InputError
from .cgroupfs import Cgroups
from .monitor import MonitorSpec
from .plan import AppliedGroup, CgroupPlan


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
        raise InputError("the plan has not been applied: run `intercore cgroups apply` first",
                         field="PLAN")
    critical, best_effort = roles(plan)
    if not best_effort:
        raise InputError("the plan separates no best-effort group, so there is nothing to "
                         f"freeze (no pair has I > θ = {plan.theta:g})", field="PLAN")
    groups = {"critical": tuple(monitor_entry(plan.applied.group(g)) for g in critical),
              "best_effort": tuple(monitor_entry(plan.applied.group(g)) for g in best_effort)}
    if base is not None:
        return replace(base, **groups, **options)
    return MonitorSpec(**groups, **options)


def check_on_host(plan: CgroupPlan, cgroups: Cgroups | None = None) -> None:
    """Before a monitor is started on `plan`: every group it names is what intercore created
    (Cgroups.check_applied), and no group it may freeze holds this process or the monitor,
    which runs in the same cgroup. Raises InputError (exit 2) with nothing written."""
    if plan.applied is None:
        raise InputError("the plan has not been applied: run `intercore cgroups apply` first",
                         field="PLAN")
    cgroups = cgroups or Cgroups()
    cgroups.check_applied(plan.applied)
    cgroups.check_freezable(plan.applied, roles(plan)[1])
