"""The dossier: what the steps produced, arranged by the objectives of AMC 20-193 / AC 20-193,
every figure with the inputs (by sha256) and store rows it came from.

The cache-sharing regime is part of every measured figure: on a host whose CPUs share their
cache only part of the time (a VM), a figure from blocks where they did not share it may
show no cross-core interference only because there was none to see. Such figures are kept,
and flagged, never dropped: the dossier counts how much of the run was in each regime and
lists every figure that no shared-regime pair supports.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..base.artefact import file_sha256
from ..measure.harness.paired import SHARED
from ..mitigate.experiment.protection import SCENARIOS, WORST_FOUND
from ..mitigate.plan.record import COVERS_WEAKEST_FIRST, CgroupPlan, Pair
from ..model.platform import Platform
from .regions import STORE_SOURCE
from .steps import path_of
from .system import APPLIED, System

FORMAT = "intercore.dossier/1"
NOT_PROBED = "not probed"
WHAT_IT_IS = ("evidence support for an applicant's certification of a multi-core system, made "
              "by an open tool that is not qualified (DO-330): every figure names what "
              "produced it so that it can be re-measured")


class Figures:
    """Figures with their provenance, as each section adds them."""

    def __init__(self, base: dict[str, Any]):
        self.base = base
        self.all: list[dict[str, Any]] = []

    def add(self, fid: str, what: str, value: Any, *, files: dict[str, str],
            invocation: int | None, runs: list[str], regime: str | None) -> dict[str, Any]:
        shared = regime == SHARED
        figure = {"id": fid, "what": what, "value": value, "regime": regime or NOT_PROBED,
                  "shared_regime_support": shared,
                  "flag": None if shared else _flag(regime),
                  "provenance": {**self.base, "files": files,
                                 "store": {"invocation_id": invocation, "runs": runs}}}
        self.all.append(figure)
        return figure


def _flag(regime: str | None) -> str:
    if regime is None:
        return ("no canary ran while this was measured: whether the CPUs shared their cache "
                "is unknown, so no shared-regime pair supports it")
    return (f"measured in the {regime!r} regime: no shared-regime pair supports it, and "
            "cross-core interference through the shared cache may not have been there to see")


# ---- sections -----------------------------------------------------------------------------------

def _channels(done: dict[str, Any], platform: Platform, plan: CgroupPlan,
              system: System, protection: dict[str, Any], figs: Figures) -> dict[str, Any]:
    table = done["channels"]["result"]
    val = done["validation"]["result"]
    files = {platform.source: platform.hash}
    # Every verdict, the model's interference channels and its free pairs (negative
    # controls) alike: the calibration of the model against what this host measured.
    calibration = [figs.add(
        f"validation/{v['victim']['tx']}/{v['aggressor']['tx']}",
        f"Δ of {v['victim']['tx']} beside {v['aggressor']['tx']} (median ratio, 95% CI); the "
        f"model says {v['expected']}, the measurement {v['verdict']}",
        {"expected": v["expected"], "channel": v["channel"], "verdict": v["verdict"],
         "delta": v["delta"], "delta_ci": v["delta_ci"], "n": v["n"]},
        files=files, invocation=val["invocation_id"], runs=[v["aggressor_set"]],
        regime=v["regime"]) for v in val.get("verdicts", [])]
    verdicts = {f["value"]["channel"]: f for f in calibration if f["value"]["channel"]}
    rows = []
    for ch in table["channels"]:
        rows.append({"id": ch["id"], "transactions": ch["transactions"],
                     "initiators": ch["initiators"], "services": ch["services"],
                     "rule": ch["rule"],
                     "verdict": verdicts.get(ch["id"]) or {
                         "verdict": "not validated",
                         "why": val.get("refused") or _not_validated(ch, val)},
                     "mitigation": _mitigation(ch, platform, plan, system, protection)})
    return {"objective": "MCP_Resource_Usage_3",
            "platform": {"name": platform.name, "source": platform.source,
                         "sha256": platform.hash},
            "counts": table["counts"], "rows": rows,
            "between_tasks": _between_tasks(plan, protection),
            "free": len(table["free"]), "calibration": calibration,
            "contradictions": [f["id"] for f in calibration
                               if f["value"]["verdict"] == "contradicted"],
            "validation": {k: val[k] for k in ("refused", "regime", "counts", "skipped")
                           if k in val}}


def _not_validated(channel: dict[str, Any], val: dict[str, Any]) -> str:
    for skip in val.get("skipped", []):
        if sorted(skip["transactions"]) == sorted(channel["transactions"]):
            return f"not exercisable here: {skip['reason']}"
    return "not in the quick subset of trials (--quick: one pair per kind of channel)"


def _mitigation(channel: dict[str, Any], platform: Platform, plan: CgroupPlan,
                system: System, protection: dict[str, Any]) -> dict[str, str]:
    """Which mitigation covers one channel of the model's table, or why none does, in the
    plan's own words where the plan covers it (ChannelCover: the channels between the
    system's tasks), so that the dossier and the plan never say two things."""
    outside = [i for i in channel["initiators"]
               if platform.components.get(i) is None or platform.components[i].cpu is None]
    if outside:
        return {"by": "unmitigated", "why": f"{', '.join(outside)} is not a host CPU the task "
                "set runs on (another tenant, a device, or a model without cpu: attributes): "
                "freezing this system's cgroups cannot pause it"}
    cpus = {cpu for i in channel["initiators"]
            if (cpu := platform.components[i].cpu) is not None}
    pairs = _pairs_on(system, cpus)
    if not pairs:
        return {"by": "not between the system's tasks", "why": "no critical task runs on one "
                f"of CPUs {', '.join(map(str, sorted(cpus)))} beside a co-runner on the "
                "other: no pair of this system can meet on it"}
    if "refused" in protection:
        return {"by": "unmitigated", "why": protection["refused"]}
    covers = [c for c in plan.channels
              if c.channel in channel["services"] and set(c.pairs) & pairs]
    if covers:
        worst = min(covers, key=lambda c: _STRENGTH.get(c.mitigation, 0))
        return {"by": worst.mitigation, "why": f"{worst.channel}: {worst.reason}"}
    freezes = [g for g in plan.groups if g.freeze_while_active]
    if not freezes:
        return {"by": "unmitigated", "why": f"Algorithm 1 separated no pair (no I > θ = "
                f"{plan.theta:g}, no broken deadline): the plan freezes nothing"}
    # A pair the model could not place (a co-runner not pinned): the plan's groups say it.
    done = ", ".join(f"{', '.join(g.freeze_while_active)} frozen while {g.name} runs"
                     + (f" its regions {', '.join(g.windows)}" if g.windows else "")
                     for g in freezes)
    others = sorted(set(system.mitigations) - APPLIED)
    return {"by": "freeze", "why": f"{done} (Algorithm 1 and the freezer monitor): no "
            "transaction of a frozen task reaches the channel meanwhile; tasks left in one "
            "group still share it" + (f"; allowed but not applied by assess: "
                                      f"{', '.join(others)}" if others else "")}


def _between_tasks(plan: CgroupPlan, protection: dict[str, Any]) -> list[dict[str, Any]]:
    """The channels between the system's own tasks, as the plan covers them (CPU time
    included, which the model's table of the memory system has no row for): what was
    applied, or why nothing was where the protection step refused."""
    out = []
    for cover in plan.channels:
        doc = cover.model_dump(mode="json")
        if "refused" in protection and cover.mitigation != "unmitigated":
            doc.update(mitigation="unmitigated", reason=f"the plan says {cover.mitigation}, "
                       f"not applied: {protection['refused']}")
        out.append(doc)
    return out


_STRENGTH = {m: i for i, m in enumerate(COVERS_WEAKEST_FIRST)}


def _pairs_on(system: System, cpus: set[int]) -> set[str]:
    """"critical/co-runner" pairs that can meet on a channel between `cpus`: the critical
    task on one of them, the co-runner on another one or on no CPU in particular."""
    tasks = system.taskset.tasks
    return {f"{c.name}/{o.name}" for c in tasks if c.role == "critical" and c.cpu in cpus
            for o in tasks if o.name != c.name and (o.cpu is None or o.cpu in cpus - {c.cpu})}


def _region_cells(done: dict[str, Any], system: System, victim: str,
                  figs: Figures) -> list[dict[str, Any]]:
    """The region-level matrix's cells of `victim` that name a region: each region's Δ beside
    each co-runner, measured (a figure, citing its store invocation, which `dossier verify`
    measures again) or predicted (the heatmap's Δ̂ and safe bound), side by side."""
    keep = ("region", "beside", "provenance", "value", "bound", "n", "ci", "regime", "source")
    out = []
    for c in done["regions"]["result"].get("regions", []):
        if c["task"] != victim or c.get("region") is None:
            continue
        row = {k: c.get(k) for k in keep}
        if c["provenance"] == "measured" and c["source"].startswith(STORE_SOURCE):
            row["figure"] = figs.add(
                f"regions/{victim}/{c['beside']}/{c['region']}",
                f"Δ of {victim}'s region {c['region']} beside {c['beside']} (median ratio of "
                "its thread CPU time, 95% CI, paired and interleaved)",
                {"delta": c["value"], "delta_ci": c["ci"], "n": c["n"]},
                files=system.task_files, invocation=int(c["source"][len(STORE_SOURCE):]),
                runs=[c["region"]], regime=c["regime"])["id"]
        out.append(row)
    return out


def _worst_found(done: dict[str, Any], system: System, victim: str,
                 figs: Figures) -> dict[str, Any] | None:
    """The worst aggressor the search found for `victim` (assess/search.py): its Δ and each
    region's beside it, as figures, or why there is none (None: a dossier made before the
    search step)."""
    step = done.get("search")
    if step is None:
        return None
    result = step["result"]
    t = result["tasks"].get(victim)
    if t is None:
        return {"why_not": next((n for n in result["notes"] if n.startswith(f"{victim} ")),
                                f"{victim} is not searched")}
    out = {k: t[k] for k in ("candidates", "aggressor_cpus", "pairs", "refused", "saved_as")}
    found = t["found"]
    if found is None:
        return out
    how = ("provisional: the search was refused, and this is the strongest candidate of its "
           "last round over all its pairs" if found["provisional"] else
           f"the winner of {len(t['search']['rounds'])} round(s) of successive halving, "
           f"ranked in {found['ranked_in']} blocks")

    def figure(fid: str, what: str, est: dict[str, Any]) -> dict[str, Any]:
        return figs.add(fid, f"{what} beside {found['aggressor']}, the worst aggressor found "
                        f"({how}); median ratio of thread CPU time, 95% CI, paired and "
                        "interleaved",
                        {"aggressor": found["aggressor"], "provisional": found["provisional"],
                         **{k: est[k] for k in ("delta", "delta_ci", "n", "paired_max")}},
                        files=system.task_files, invocation=found["invocation_id"],
                        runs=[found["aggressor"]], regime=found["regime"])
    out["figure"] = figure(f"search/{victim}", f"Δ of {victim}'s whole run", found)
    out["regions"] = [figure(f"search/{victim}/{r['region']}",
                             f"Δ of {victim}'s region {r['region']}", r) for r in t["regions"]]
    return out


def _matrix_what(victim: str, other: str, statistic: str, value: float) -> str:
    """What a matrix cell's figure is, and what a value below 1 is not: a speed-up."""
    what = f"{statistic} response time of {victim} beside {other} over alone"
    if value < 1:
        what += (" (below 1: the worst of the jobs alone met more of the host's own noise "
                 "than those beside it; no slowdown was seen, and none is claimed)")
    return what


def _timing(done: dict[str, Any], system: System, figs: Figures) -> dict[str, Any]:
    matrix_doc = done["matrix"]["result"]
    m = matrix_doc["matrix"]
    protection = done["protection"]["result"]
    files = system.task_files
    tasks = []
    for victim in system.critical:
        i = m["tasks"].index(victim)
        row: dict[str, Any] = {"task": victim, "beside": []}
        for j, other in enumerate(m["tasks"]):
            if i == j or m["directed"][i][j] is None:
                continue
            regime = m["regime_of"][i][j] if m.get("regime_of") else None
            rounds = [r[i][j] for r in m.get("by_round", [])]
            row["beside"].append(figs.add(
                f"matrix/{victim}/{other}", _matrix_what(victim, other, m["statistic"],
                                                         m["directed"][i][j]),
                {"degradation": m["directed"][i][j], "by_round": rounds, "n": m["n"][i][j],
                               "misses": (m.get("misses") or [[None] * len(m["tasks"])])[i][j]},
                files=files, invocation=matrix_doc["invocation_id"],
                runs=[b["label"] for b in matrix_doc["blocks"] if victim in b["label"]],
                regime=regime))
        row["regions"] = _region_cells(done, system, victim, figs)
        row["worst_found"] = _worst_found(done, system, victim, figs)
        run = protection.get("tasks", {}).get(victim)
        if run is not None:
            row["noise"] = run["noise"]
            row["scenarios"] = {s: figs.add(
                f"protection/{victim}/{s}", f"{victim}'s response times, {s} "
                "(n, median, p99, max in ms; deadline misses with their 95% interval)",
                {k: run[s][k] for k in ("n", "p50_ms", "p99_ms", "max_ms", "misses",
                                         "miss_ratio", "miss_ratio_ci95")},
                files=files, invocation=protection["invocation_id"],
                runs=[f"{victim}/{s}"], regime=None)
                for s in (*SCENARIOS, WORST_FOUND) if s in run}
            row["protection_refused"] = run["protection_refused"]
            row["notes"] = run["notes"]
            row["figures"] = run["figures"]
        else:
            row["scenarios"] = None
            row["why_not"] = protection.get("refused")
        tasks.append(row)
    return {"objective": "MCP_Software_1", "statistic": m["statistic"],
            "provisional": m.get("provisional", False), "notes": m.get("notes", []),
            "tasks": tasks}


def _plan(plan: CgroupPlan) -> dict[str, Any]:
    def pair(p: Pair) -> dict[str, Any]:
        return {**p.model_dump(mode="json"), "why": p.why(plan.theta)}
    return {"theta": plan.theta,
            "groups": [g.model_dump(mode="json") for g in plan.groups],
            "decisions": [pair(p) for p in plan.pairs],
            "warnings": [w.model_dump(mode="json") for w in plan.warnings]}


def _regimes(done: dict[str, Any]) -> dict[str, Any]:
    """Seconds of measurement per cache-sharing regime, by step."""
    blocks: dict[str, float] = {}
    for b in done["matrix"]["result"]["blocks"]:
        key = b["regime"] or NOT_PROBED
        blocks[key] = blocks.get(key, 0.0) + b["seconds"]
    val = done["validation"]["result"]
    protection = done["protection"]["result"]
    # The search's blocks, over every round of every task's search (absent: no search step).
    searched: dict[str, int] = {}
    for t in done.get("search", {}).get("result", {}).get("tasks", {}).values():
        for r in (t.get("search") or {}).get("rounds", []):
            for regime, n in r["regime_blocks"].items():
                searched[regime] = searched.get(regime, 0) + n
    return {"matrix_seconds": blocks,
            "validation": val.get("regime", "not run: " + val.get("refused", "")),
            "search_blocks": searched,
            "protection": NOT_PROBED + " (no canary runs beside the real-time scenarios)"
            if protection.get("tasks") else "not run",
            "any_shared": SHARED in blocks or searched.get(SHARED, 0) > 0
            or any(v["regime"] == SHARED for v in val.get("verdicts", []))}


# ---- the whole dossier ------------------------------------------------------------------------

def build(done: dict[str, Any], system: System, platform: Platform, snapshot: dict[str, Any],
          capacity: dict[str, Any], out: Path, db: Path, quick: bool) -> dict[str, Any]:
    base = {"tool_version": __version__, "host_fingerprint": snapshot["fingerprint"]}
    figs = Figures(base)
    plan = CgroupPlan.model_validate(done["plan"]["result"])
    protection = done["protection"]["result"]
    sections = {
        "configuration": {"objective": "MCP_Resource_Usage_1", **snapshot},
        "channels": _channels(done, platform, plan, system, protection, figs),
        "capacity": capacity,
        "timing": _timing(done, system, figs),
        "plan": _plan(plan),
    }
    regimes = _regimes(done)
    flagged = [f["id"] for f in figs.all if f["flag"]]
    headline = (f"{len(flagged)} of {len(figs.all)} figures have no shared-regime support"
                + ("; on this host no block was measured while the CPUs shared their cache"
                   if not regimes["any_shared"] else ""))
    return {
        "format": FORMAT, "what_this_is": WHAT_IT_IS, **base,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "system": {"name": system.name, "source": str(system.source),
                   "sha256": system.files[str(system.source)], "theta": system.theta,
                   "mitigations": list(system.mitigations),
                   "sizes": system.sizes.model_dump(), "quick": quick},
        "inputs": system.files | {platform.source: platform.hash},
        "store": {"db": str(db), "invocations": {
            step: done[step]["result"].get("invocation_id")
            for step in ("validation", "matrix", "protection")}},
        "steps": {name: {"artefact": path_of(out, name).name,
                         "sha256": file_sha256(path_of(out, name)),
                         "inputs_sha256": d["inputs_sha256"], "finished": d["finished"]}
                  for name, d in done.items()},
        "regimes": regimes,
        "headline": headline,
        "flagged": flagged,
        "sections": sections,
        "figures": figs.all,
    }
