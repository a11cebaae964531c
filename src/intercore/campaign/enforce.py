"""Putting a setup's mitigation in force around its run, or saying why this host cannot.

`enforcement_for(setup)` decides before anything runs:
- a setup that needs nothing gets a no-op `Enforcement`;
- cache colouring (`l3-cat`) and bandwidth reservation (`mba`) go through Linux resctrl: one
  control group per guest that has a colour mask or a budget, its `L3:` / `MB:` schemata
  written before the run, its processes moved in as the run starts them, the group removed
  after;
- anything the host cannot do gives `Unenforceable(reason)`: the runner skips that setup and
  records the reason. A setup is never run without the mechanism it names.

    enforcement = enforcement_for(setup)
    with enforcement.applied() as active:      # groups created, schemata written
        executor.run(setup.request, on_start=active.add_pid)
        evidence = active.report()             # requested / written / applied, last_cmd_status
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import HostUnsupported
from ..mitigate.bandwidth.resctrl import (
    DEFAULT_ROOT,
    CacheInfo,
    MbInfo,
    MbSetting,
    Resctrl,
    cbm_problem,
    colours_to_cbm,
    format_schemata,
    mb_setting,
)
from .plan import NEED_CAT, NEED_MBA, NEED_STRIDE, Setup

GROUP_PREFIX = "intercore-"

_STRIDE_REASON = ("needs stride: ic-aggr has no stride option, it touches one access per cache "
                  "line of the machine it runs on; use line_sizes: [native]")
_PERIOD_NOTE = ("resctrl MBA has no regulation period (hardware throttles each request; "
                "mba_MBps adjusts about once a second)")


@dataclass(frozen=True)
class Unenforceable:
    reason: str


class _NoOp:
    def add_pid(self, role: str, pid: int) -> None:
        pass

    def report(self) -> dict:
        return {"backend": "none"}


class Enforcement:
    """Nothing to enforce: the setup runs as it is."""

    backend = "none"

    @contextmanager
    def applied(self) -> Iterator[Any]:
        yield _NoOp()

    def describe(self) -> dict:
        return {"backend": self.backend}


@dataclass(frozen=True)
class GuestGroup:
    """What one guest's resctrl group gets."""

    guest: str
    group: str
    colours: int | None = None        # the colour mask requested
    cbm: int | None = None            # ... as a capacity bitmask
    budget: tuple[int, int] | None = None  # (budget, period_us) requested
    mb: MbSetting | None = None

    def schemata(self, resctrl: Resctrl, cache: CacheInfo | None) -> str:
        text = ""
        if self.cbm is not None and cache is not None:
            for resource in cache.resources:
                text += format_schemata(resource, {d: f"{self.cbm:x}"
                                                   for d in resctrl.domains(resource)})
        if self.mb is not None:
            text += format_schemata("MB", {d: str(self.mb.value) for d in resctrl.domains("MB")})
        return text


class _Active:
    """The groups of one run while it runs."""

    def __init__(self, enforcement: ResctrlEnforcement):
        self.e = enforcement
        self.pids: dict[str, list[int]] = {}
        self.unassigned: list[dict] = []
        self.applied: dict[str, dict[str, dict[str, str]]] = {}

    def add_pid(self, role: str, pid: int) -> None:
        guest = self.e.setup.roles.get(role)
        group = self.e.groups.get(guest) if guest else None
        if guest is None or group is None:
            # Uncoloured, unbudgeted guests (and helper processes) stay in the default group.
            self.unassigned.append({"role": role, "pid": pid})
            return
        self.e.resctrl.add_task(group.group, pid)
        self.pids.setdefault(guest, []).append(pid)

    def report(self) -> dict:
        e = self.e
        groups = []
        for g in e.groups.values():
            applied = self.applied.get(g.guest, {})
            entry: dict[str, Any] = {"guest": g.guest, "group": g.group,
                                     "pids": self.pids.get(g.guest, [])}
            if g.cbm is not None and e.cache is not None:
                entry["l3"] = {"colours": hex(g.colours or 0),
                               "colour_space": e.setup.colour_space,
                               "cbm_mask": hex(e.cache.cbm_mask), "requested": hex(g.cbm),
                               "applied": {r: applied.get(r, {})
                                           for r in e.cache.resources}}
            if g.mb is not None and g.budget is not None:
                entry["mb"] = {"budget": g.budget[0], "unit": e.setup.bandwidth_unit,
                               "period_us": g.budget[1], "mode": e.mb.mode if e.mb else None,
                               "written": g.mb.value, "expected": g.mb.expected,
                               "expected_mbps": g.mb.expected_mbps, "meaning": g.mb.note,
                               "applied": applied.get("MB", {}), "period": _PERIOD_NOTE}
            groups.append(entry)
        return {"backend": "resctrl", "root": str(e.resctrl.root), "groups": groups,
                "default_group": self.unassigned,
                "last_cmd_status": e.resctrl.last_cmd_status()}


class ResctrlEnforcement(Enforcement):
    backend = "resctrl"

    def __init__(self, setup: Setup, resctrl: Resctrl, cache: CacheInfo | None,
                 mb: MbInfo | None, groups: dict[str, GuestGroup]):
        self.setup = setup
        self.resctrl = resctrl
        self.cache = cache
        self.mb = mb
        self.groups = groups

    @contextmanager
    def applied(self) -> Iterator[_Active]:
        active = _Active(self)
        created: list[str] = []
        remove_stale_groups(self.resctrl)
        try:
            for g in self.groups.values():
                self.resctrl.create_group(g.group)
                created.append(g.group)
                self.resctrl.write_schemata(g.group, g.schemata(self.resctrl, self.cache))
                active.applied[g.guest] = self.resctrl.read_schemata(g.group)
            yield active
        finally:
            for name in reversed(created):
                self.resctrl.remove_group(name)

    def describe(self) -> dict:
        return {"backend": self.backend, "root": str(self.resctrl.root),
                "groups": {g.guest: {"group": g.group,
                                     "cbm": None if g.cbm is None else hex(g.cbm),
                                     "mb": None if g.mb is None else g.mb.value}
                           for g in self.groups.values()}}


def remove_stale_groups(resctrl: Resctrl) -> list[str]:
    """Remove our groups left behind by a killed run: those with no task left in them."""
    removed = []
    for name in resctrl.groups():
        if name.startswith(GROUP_PREFIX) and not resctrl.tasks(name):
            resctrl.remove_group(name)
            removed.append(name)
    return removed


def _plan_groups(setup: Setup, resctrl: Resctrl) -> tuple[CacheInfo | None, MbInfo | None,
                                                           dict[str, GuestGroup]] | Unenforceable:
    cache = resctrl.cache_info() if NEED_CAT in setup.needs else None
    mb = resctrl.mb_info() if NEED_MBA in setup.needs else None
    if NEED_CAT in setup.needs and cache is None:
        return Unenforceable(f"needs {NEED_CAT}: resctrl at {resctrl.root} offers no L3 cache "
                             "allocation (no info/L3)")
    if NEED_MBA in setup.needs and mb is None:
        return Unenforceable(f"needs {NEED_MBA}: resctrl at {resctrl.root} offers no memory "
                             "bandwidth allocation (no info/MB)")
    groups: dict[str, GuestGroup] = {}
    for guest in dict.fromkeys([*setup.colours, *setup.bandwidth]):
        cbm = setting = None
        mask = setup.colours.get(guest)
        if mask is not None:
            assert cache is not None  # a coloured guest puts NEED_CAT in needs: checked above
            try:
                cbm = colours_to_cbm(mask, setup.colour_space or 0, cache.cbm_mask)
            except ValueError as exc:
                return Unenforceable(f"needs {NEED_CAT}: {exc}")
            problem = cbm_problem(cbm, cache.cbm_mask, cache.min_cbm_bits, cache.sparse_masks)
            if problem:
                return Unenforceable(f"needs {NEED_CAT}: guest {guest}: {problem}")
        budget = setup.bandwidth.get(guest)
        if budget is not None:
            assert mb is not None  # a budget puts NEED_MBA in needs: checked above
            if budget[1]:
                return Unenforceable(f"needs {NEED_MBA} with a {budget[1]} us period: "
                                     f"{_PERIOD_NOTE}; use periods_us: [0]")
            try:
                setting = mb_setting(budget[0], setup.bandwidth_unit, mb)
            except ValueError as exc:
                return Unenforceable(f"needs {NEED_MBA}: guest {guest}: {exc}")
        groups[guest] = GuestGroup(guest, f"{GROUP_PREFIX}{setup.hash}-{guest}", mask, cbm,
                                   budget, setting)
    closids = min(i.num_closids for i in (cache, mb) if i is not None)
    in_use = 1 + len(resctrl.groups())  # the default group holds CLOSID 0
    if in_use + len(groups) > closids:
        return Unenforceable(f"needs {len(groups)} resctrl groups but only "
                             f"{closids - in_use} of {closids} CLOSIDs are free")
    return cache, mb, groups


def enforcement_for(setup: Setup, *, resctrl_root: Path = DEFAULT_ROOT,
                    vendor: str | None = None, mount_options: tuple[str, ...] | None = None,
                    resctrl: Resctrl | None = None) -> Enforcement | Unenforceable:
    """How `setup` is enforced on this host, or why it cannot be.

    The resctrl mount at `resctrl_root` is used with the live system's CPU vendor and mount
    options unless `vendor` / `mount_options` are given, or `resctrl` itself is.
    """
    if not setup.needs:
        return Enforcement()
    if NEED_STRIDE in setup.needs:
        return Unenforceable(_STRIDE_REASON)
    if resctrl is None:
        try:
            resctrl = Resctrl.from_system(resctrl_root, vendor=vendor,
                                          mount_options=mount_options)
        except HostUnsupported as exc:
            return Unenforceable(f"needs {', '.join(setup.needs)}: {exc}")
    planned = _plan_groups(setup, resctrl)
    if isinstance(planned, Unenforceable):
        return planned
    return ResctrlEnforcement(setup, resctrl, *planned)
