"""Where a campaign's runs execute: this host (`local`), a board reached over ssh, or every
board of a kind that a labgrid coordinator lends (`labgrid`, in parallel).

An executor's `describe()` is the identity of the machine its runs execute on and is part of
every setup hash, so it must hold only what identifies the machine and the workload binaries
(nothing that drifts between two runs, such as free memory). The runner files the runs under
the store host named by its keys `fingerprint`, `hostname`, `kernel`, `cpu_model` and `ncpus`,
with `environment()` (everything worth showing about the host) when the executor has it.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...base.errors import InputError
from .base import Executor

HOST_KEYS = ("fingerprint", "hostname", "kernel", "cpu_model", "ncpus")


def target(plan: Any) -> tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """(executor kind, ssh settings, labgrid settings) of a CampaignPlan or of a Campaign
    (spec.Executor)."""
    if isinstance(plan.executor, str):
        return plan.executor, plan.ssh, getattr(plan, "labgrid", None)
    return plan.executor.kind, plan.executor.ssh(), plan.executor.labgrid()


def executor_for(plan: Any) -> Executor:
    """The executor a plan (or, before planning, a campaign) names."""
    kind, ssh, lab = target(plan)
    if kind == "local":
        from .local import LocalExecutor

        return LocalExecutor()
    if kind == "ssh":
        from .ssh import SshExecutor, SshTarget

        return SshExecutor(SshTarget.from_mapping(ssh or {}))
    if kind == "labgrid":
        from .labgrid import LabgridPool

        return LabgridPool.from_settings(lab or {}, ssh or {}, owner=plan.name)
    raise InputError(f"unknown executor {kind!r} (known: local, ssh, labgrid)",
                     field="executor")
