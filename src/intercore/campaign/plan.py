"""A campaign expanded into setups: what runs, under which name, with which content hash.

The setup list is the product of the generators (engine variants × colour assignments ×
bandwidth configurations) for the interference setups, plus one solo baseline per distinct
configuration of the critical guest alone (`solo`, `solo_cc<n>`, ...), each once per critical
task. Every setup's baseline is the plain `solo` of its task: the paper's slowdowns (Figs 3,
5 and 6) are all against it. Planning is pure: no host access, no process.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..base.artefact import file_sha256
from ..base.parse import parse_cpu_list
from ..base.units import size_arg
from . import naming
from .executors.base import RunRequest
from .generators import (
    EngineVariant,
    bandwidth_space,
    colour_assignments,
    colour_count,
    engine_space,
    exclude_by_min_colours,
    is_uncoloured,
)
from .spec import ENGINE_OPS, Campaign, Guest, Task, split_victim

# Mechanisms a setup can need (Setup.needs); campaign/enforce.py says whether the host has them.
NEED_CAT = "l3-cat"       # cache colouring, through resctrl L3 CAT
NEED_MBA = "mba"          # memory-bandwidth reservation, through resctrl MB
NEED_STRIDE = "stride"    # an engine access stride other than the target's cache line


@dataclass(frozen=True)
class Setup:
    name: str
    hash: str
    baseline: str | None
    request: RunRequest
    colours: Mapping[str, int]
    bandwidth: Mapping[str, tuple[int, int]]
    needs: tuple[str, ...]
    config: str = ""                 # the name without the task qualifier
    task: str = ""                   # the critical task it runs
    bandwidth_unit: str = "MBps"     # unit of the budgets in `bandwidth`
    colour_count: int | None = None  # colours of the critical guest; None = uncoloured
    colour_space: int | None = None  # S, the number of colours masks are drawn from
    contention: Mapping[str, Any] | None = None  # the engine variant: op, size, cpus, line
    roles: Mapping[str, str] = field(default_factory=dict)  # "victim"/"aggressor" -> guest

    def to_dict(self) -> dict:
        r = self.request
        return {
            "name": self.name, "hash": self.hash, "config": self.config, "task": self.task,
            "baseline": self.baseline, "needs": list(self.needs),
            "victim": r.victim, "victim_params": list(r.victim_params),
            "victim_args": list(r.victim_args),
            "victim_cpu": r.victim_cpu, "engine": list(r.engine),
            "engine_cpus": None if r.engine_cpus is None else list(r.engine_cpus),
            "reps": r.reps, "seed": r.seed,
            "contention": None if self.contention is None else dict(self.contention),
            "colours": {g: hex(m) for g, m in self.colours.items()},
            "colour_count": self.colour_count, "colour_space": self.colour_space,
            "bandwidth": {g: {"budget": b, "unit": self.bandwidth_unit, "period_us": p}
                          for g, (b, p) in self.bandwidth.items()},
            "roles": dict(self.roles),
        }


@dataclass(frozen=True)
class CampaignPlan:
    name: str
    source: str
    setups: tuple[Setup, ...]
    rounds: int
    seed: int
    executor: str
    ssh: Mapping[str, Any] | None
    platform: str = "host"
    warnings: tuple[str, ...] = ()
    labgrid: Mapping[str, Any] | None = None  # coordinator, place or tags, wait

    def setup(self, name: str) -> Setup:
        return next(s for s in self.setups if s.name == name)

    def to_dict(self) -> dict:
        solo = sum(1 for s in self.setups if not s.request.engine)
        return {
            "name": self.name, "source": self.source, "platform": self.platform,
            "count": len(self.setups),
            "interference": len(self.setups) - solo, "solo": solo,
            "configurations": len({s.config for s in self.setups}),
            "tasks": list(dict.fromkeys(s.task for s in self.setups)),
            "rounds": self.rounds, "seed": self.seed, "executor": self.executor,
            "ssh": None if self.ssh is None else dict(self.ssh),
            **({"labgrid": dict(self.labgrid)} if self.labgrid is not None else {}),
            "warnings": list(self.warnings),
            "setups": [s.to_dict() for s in self.setups],
        }


# ---- the configuration space, before tasks and hashes ------------------------------------------

def _task_victim(task: Task) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(victim, its parameters, a program's own arguments) of a critical task."""
    if task.program is not None:
        return task.program[0], (), tuple(task.program[1:])
    assert task.victim is not None  # the spec holds exactly one of victim and program
    return (*split_victim(task.victim), ())


def _task_key(task: Task) -> str:
    """The task's part of a setup hash: a program's by its bytes too, so a rebuilt program
    gets new hashes and its old results are not reused."""
    if task.program is not None:
        return _canonical({"program": list(task.program),
                           "sha256": file_sha256(Path(task.program[0]))})
    assert task.victim is not None  # the spec holds exactly one of victim and program
    return _canonical(split_victim(task.victim))


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


# Components are shared by many setups (their mappings too: setups never change them) and
# their canonical JSON (`key`, part of each setup's hash) is computed once.

@dataclass(frozen=True)
class _Colouring:
    suffix: str
    colours: Mapping[str, int]   # coloured guests only
    count: int | None            # the critical guest's colours; None when nothing is coloured

    @cached_property
    def key(self) -> str:
        return _canonical(self.colours)


@dataclass(frozen=True)
class _Bandwidth:
    suffix: str
    budgets: Mapping[str, tuple[int, int]]

    @cached_property
    def key(self) -> str:
        return _canonical(self.budgets)


@dataclass(frozen=True)
class _Config:
    name: str
    variant: EngineVariant | None
    colouring: _Colouring
    bandwidth: _Bandwidth


_NO_COLOURING = _Colouring("", {}, None)
_NO_BANDWIDTH = _Bandwidth("", {})


def _colourings(campaign: Campaign, critical: str) -> list[_Colouring]:
    col = campaign.generators.colouring
    if col is None:
        return [_NO_COLOURING]
    s = col.colours
    raw = exclude_by_min_colours(colour_assignments(s, len(col.guests)), s,
                                 [col.min_colours.get(g, 1) for g in col.guests])
    out = []
    for masks in raw:
        coloured = {g: m for g, m in zip(col.guests, masks) if not is_uncoloured(m, s)}
        if not coloured:
            out.append(_NO_COLOURING)
            continue
        # With one critical and at most one engine guest the critical guest's count names
        # the assignment: its mask is the lowest or the highest `count` colours.
        count = colour_count(dict(zip(col.guests, masks)).get(critical, 0), s)
        out.append(_Colouring(naming.colour_part(count), coloured, count))
    return out


def _bandwidths(campaign: Campaign) -> list[_Bandwidth]:
    bw = campaign.generators.bandwidth
    if bw is None:
        return [_NO_BANDWIDTH]
    space = bandwidth_space({g: (spec.budgets, spec.periods_us) for g, spec in bw.guests.items()})
    return [_Bandwidth("".join(naming.bandwidth_part(g, b, bw.unit, p)
                               for g, (b, p) in budgets.items()), budgets)
            for budgets in space]


def _variants(campaign: Campaign) -> list[tuple[str, EngineVariant]]:
    eng = campaign.generators.engine
    if eng is None:
        return []
    variants = engine_space(eng.cpus, eng.line_sizes, eng.sizes, eng.ops)
    return [(naming.engine_part(v.op, v.size)
             + (naming.cpus_part(v.cpus) if len(eng.cpus) > 1 else "")
             + (naming.line_part(v.line) if len(eng.line_sizes) > 1 else ""), v)
            for v in variants]


def _critical_only(c: _Colouring, b: _Bandwidth, critical: str, colours: int | None
                   ) -> tuple[_Colouring, _Bandwidth]:
    """What a solo run keeps of a configuration: the critical guest's own share."""
    crit_mask = c.colours.get(critical)
    colouring = _NO_COLOURING if crit_mask is None else \
        _Colouring("", {critical: crit_mask}, colour_count(crit_mask, colours or 0))
    budgets = {critical: b.budgets[critical]} if critical in b.budgets else {}
    return colouring, _Bandwidth("", budgets)


def _configurations(campaign: Campaign) -> list[_Config]:
    critical, _ = campaign.critical
    unit = campaign.generators.bandwidth.unit if campaign.generators.bandwidth else "MBps"
    s = campaign.generators.colouring.colours if campaign.generators.colouring else None
    colourings, bandwidths = _colourings(campaign, critical), _bandwidths(campaign)

    # The plain `solo` always exists: it is every setup's baseline.
    solos: dict[tuple, tuple[_Colouring, _Bandwidth]] = {((), ()): (_NO_COLOURING,
                                                                    _NO_BANDWIDTH)}
    for c in colourings:
        for b in bandwidths:
            sc, sb = _critical_only(c, b, critical, s)
            solos.setdefault((tuple(sc.colours.items()), tuple(sb.budgets.items())), (sc, sb))
    configs = []
    for sc, sb in solos.values():
        suffix = naming.colour_part(sc.count) if sc.count is not None else ""
        suffix += "".join(naming.bandwidth_part(g, bud, unit, p)
                          for g, (bud, p) in sb.budgets.items())
        configs.append(_Config(naming.SOLO + suffix, None, sc, sb))
    for prefix, variant in _variants(campaign):
        for c in colourings:
            for b in bandwidths:
                configs.append(_Config(prefix + c.suffix + b.suffix, variant, c, b))
    return configs


# ---- setups ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Engine:
    """An engine variant as the run request and the report need it (computed once)."""

    specs: tuple[str, ...]
    cpus: tuple[int, ...] | None
    contention: Mapping[str, Any]

    @cached_property
    def key(self) -> str:
        return _canonical([self.specs, self.cpus])


def _engine(variant: EngineVariant, engine: Guest) -> _Engine:
    size = size_arg(variant.size)
    spec = f"{engine.aggressor}:op={ENGINE_OPS[variant.op]},size={size}"
    if engine.aggressor == "pll":
        spec += f",mlp={engine.mlp}"
    contention = {"op": variant.op, "size": variant.size, "size_h": size, "cpus": variant.cpus,
                  "line": variant.line, "aggressor": engine.aggressor}
    if variant.cpus == "auto":
        return _Engine((spec,), None, contention)
    cpus = parse_cpu_list(variant.cpus)
    return _Engine((spec,) * len(cpus), cpus, contention)


def _select(names: list[str], include: tuple[str, ...], exclude: tuple[str, ...]
            ) -> tuple[set[str], list[str]]:
    chosen = set(names)
    warnings = []
    if include:
        chosen = {n for n in names if any(fnmatch.fnmatchcase(n, p) for p in include)}
    for pattern in (*include, *exclude):
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            warnings.append(f"pattern {pattern!r} matches no setup")
    chosen = {n for n in chosen if not any(fnmatch.fnmatchcase(n, p) for p in exclude)}
    return chosen, warnings


def make_plan(campaign: Campaign, *, source: str, host: Mapping[str, Any]) -> CampaignPlan:
    """Expand `campaign` into setups; `host` (the executor's describe()) enters every hash.

    A setup's hash is sha256 over the canonical JSON of its run request, colour masks,
    budgets and needs, together with the host description (binaries' hashes included) and
    the platform model; the parts shared by many setups are serialised once.
    """
    critical_name, critical = campaign.critical
    engine = campaign.engine
    unit = campaign.generators.bandwidth.unit if campaign.generators.bandwidth else "MBps"
    s = campaign.generators.colouring.colours if campaign.generators.colouring else None
    context = _canonical({"host": host, "platform": campaign.platform,
                          "platform_sha256": campaign.platform_sha256, "unit": unit,
                          "colour_space": s, "reps": campaign.repetitions,
                          "seed": campaign.seed, "victim_cpu": critical.cpu})
    qualify = len(critical.tasks) > 1
    tasks = [(t.name, *_task_victim(t), naming.task_part(t.name) if qualify else "",
              _task_key(t)) for t in critical.tasks]
    roles = {"victim": critical_name, **({"aggressor": engine[0]} if engine else {})}
    engines: dict[EngineVariant, _Engine] = {}

    setups = []
    for config in _configurations(campaign):
        variant = config.variant
        if variant is not None and variant not in engines:
            assert engine is not None  # variants are drawn for the campaign's engine only
            engines[variant] = _engine(variant, engine[1])
        eng = engines[variant] if variant is not None else None
        specs, cpus = (eng.specs, eng.cpus) if eng else ((), None)
        needs = tuple(need for need, wanted in (
            (NEED_CAT, bool(config.colouring.colours)), (NEED_MBA, bool(config.bandwidth.budgets)),
            (NEED_STRIDE, variant is not None and variant.line is not None)) if wanted)
        shared = "|".join((context, eng.key if eng else "", config.colouring.key,
                           config.bandwidth.key, ",".join(needs), ""))
        for task, victim, params, args, qualifier, task_key in tasks:
            request = RunRequest(victim, params, critical.cpu, specs, cpus,
                                 campaign.repetitions, campaign.seed, args)
            digest = hashlib.sha256((shared + task_key).encode()).hexdigest()[:16]
            setups.append(Setup(
                config.name + qualifier, digest,
                None if config.name == naming.SOLO else naming.SOLO + qualifier, request,
                config.colouring.colours, config.bandwidth.budgets, needs, config.name, task,
                unit, config.colouring.count, s, eng.contention if eng else None, roles))

    chosen, warnings = _select([x.name for x in setups], campaign.include, campaign.exclude)
    chosen |= {x.baseline for x in setups if x.name in chosen and x.baseline}
    return CampaignPlan(campaign.name, source, tuple(x for x in setups if x.name in chosen),
                        campaign.rounds, campaign.seed, campaign.executor.kind,
                        campaign.executor.ssh(), campaign.platform, tuple(warnings),
                        campaign.executor.labgrid())
