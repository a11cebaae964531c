"""The worst interference found for each of the user's critical programs: the worst-aggressor
search (measure/aggressors/search.py) run on the program as the task set runs it (a few jobs
at its period, on its CPU), with every other CPU of the host free for the aggressors.

The task set's co-runners are what the plan separates. The search answers the certifier's
other question: how much slower does the task get under the worst interference this host can
make (MCP_Software_1), and is the task set's worst co-runner anywhere near it? A search the
host cannot rank where cross-core interference shows (too few blocks in which the CPUs shared
their cache) keeps its strongest candidate so far, marked provisional, with the reason.
`--quick` searches the ten presets only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..base.errors import HostUnsupported, InputError
from ..base.sample import TOTAL_REGION
from ..host.topology import Topology
from ..measure.aggressors import search as search_mod
from ..base.units import duration_text
from ..measure.aggressors.presets import Footprints, parse_set
from ..measure.harness.comparison import Comparison
from ..measure.harness.paired import SHARED
from ..measure.harness.session import Request, Result
from ..measure.periodic.taskset import Task, TaskSet
from ..measure.program import TaskProgram
from .regions import JOBS_PER_RUN, critical_programs, program_request


@dataclass(frozen=True)
class Target:
    """One critical program to search the worst aggressor of."""

    task: str
    request: Request
    candidates: tuple[str, ...]


def aggressor_cpus(topo: Topology, cpu: int) -> tuple[int, ...]:
    """Where the aggressors of a victim on `cpu` run: every other online CPU."""
    return tuple(c for c in topo.online_cpus if c != cpu)


def space(topo: Topology, cpu: int, *, quick: bool) -> list[str]:
    """The candidates for a victim on `cpu`: the host's whole space with every other online
    CPU for aggressors, or its presets alone (--quick)."""
    others = list(aggressor_cpus(topo, cpu))
    if not others:
        return []
    found = search_mod.candidates(Footprints.for_host(topo, cpu), others)
    return search_mod.presets_only(found) if quick else found


def spaces(ts: TaskSet, topo: Topology, *, quick: bool) -> dict[str, tuple[str, ...]]:
    """Each critical program's candidates (empty where no other CPU is online)."""
    out = {}
    for task in critical_programs(ts):
        assert task.cpu is not None  # system.load refuses a critical task without one
        out[task.name] = tuple(space(topo, task.cpu, quick=quick))
    return out


def seconds_at_least(candidates: int, pairs: int, run_s: float) -> float:
    """What successive halving takes at least when no round needs more pairs than it asks
    for: every round measures its survivors, each pair two runs of `run_s`."""
    total, alive = 0.0, candidates
    while alive >= 1:
        total += alive * pairs * 2 * run_s
        if alive <= 2:
            break
        alive, pairs = max(2, alive // 2), pairs * 2
    return total


def run_seconds(task: Task) -> float:
    """One repetition of a critical program: JOBS_PER_RUN jobs at its period."""
    return JOBS_PER_RUN * (task.period_ns or 0) / 1e9


def targets(ts: TaskSet, candidates: Mapping[str, tuple[str, ...]], topo: Topology, *,
            pairs: int) -> tuple[list[Target], list[str]]:
    """The critical programs to search among their `candidates` (spaces()), and why each
    other critical task is not searched."""
    out, notes = [], []
    for task in (t for t in ts.tasks if t.role == "critical"):
        if not isinstance(task.workload, TaskProgram):
            notes.append(f"{task.name} is not searched: it is the built-in "
                         f"{task.workload.label}, whose worst aggressor `intercore measure run "
                         f"{task.workload.kind} --search` finds")
            continue
        assert task.cpu is not None  # system.load refuses a critical task without one
        found = candidates[task.name]
        if not found:
            notes.append(f"{task.name} is not searched: no CPU but its own is online")
            continue
        out.append(Target(task.name, program_request(task, (found[0],), pairs,
                                                     aggressor_cpus(topo, task.cpu)), found))
    return out, notes


def search_one(t: Target, *, pairs: int, db: Path, argv: list[str], topo: Topology,
               say: Callable[[str], None]) -> dict[str, Any]:
    """One search, stored (its rounds are store invocations): its ranking, the aggressor it
    found (the winner, saved as @worst: for the program; or, refused, the strongest so far,
    provisional) and every region's Δ beside that aggressor."""
    doc: dict[str, Any] = {"task": t.task, "candidates": len(t.candidates),
                           "aggressor_cpus": list(t.request.aggressor_cpus or ()),
                           "pairs": pairs, "refused": None, "saved_as": None, "found": None,
                           "regions": [], "search": None}
    try:
        found = search_mod.search(t.request, db=db, argv=argv, first_pairs=pairs,
                                  candidates_list=list(t.candidates), topo=topo,
                                  on_phase=lambda text: say(f"{t.task}: {text}"))
    except search_mod.SearchRefused as exc:
        doc["refused"], found = str(exc), exc.partial
    except InputError as exc:
        return {**doc, "refused": f"not searched: {exc.message}"}
    except HostUnsupported as exc:
        return {**doc, "refused": f"not searched: {exc}"}
    doc["search"] = found.to_dict()
    chosen = found.winner if doc["refused"] is None else found.strongest_so_far()
    if chosen is None:
        return doc
    if doc["refused"] is None:
        doc["saved_as"] = "@" + search_mod.save_winner(db, topo, found)
    run, beside = _beside(found, chosen.spec)
    whole = next(c for c in beside if c.region_name == TOTAL_REGION)
    doc["found"] = {**search_mod.Ranked(chosen.spec, whole, chosen.regime).to_dict(),
                    "provisional": doc["refused"] is not None,
                    "invocation_id": run.invocation_id,
                    "regime": SHARED if chosen.regime == SHARED else run.regime}
    doc["regions"] = [{"region": c.region_name,
                       **search_mod.Ranked(chosen.spec, c, chosen.regime).to_dict()}
                      for c in beside if c.region_name != TOTAL_REGION]
    return doc


def aggressor_tasks(ts: TaskSet, victim: str, spec: str, topo: Topology) -> tuple[Task, ...]:
    """The aggressor `spec` as best-effort tasks beside the critical task `victim`, for its
    timing under the worst interference found: each member on its own CPU (a preset on the
    first CPU that is not the victim's, as the search placed it), released with the victim's
    jobs at its period and working nine tenths of each, so that it runs almost without a
    pause, as it did between the search's pairs; SCHED_OTHER, on CPUs the victim does not
    use. Named `worst-found-N`, with a prime added until no task of `ts` has the name."""
    task = ts.task(victim)
    assert task.cpu is not None and task.period_ns is not None
    others = aggressor_cpus(topo, task.cpu)
    members = parse_set(spec, Footprints.for_host(topo, task.cpu), topo).members
    out = []
    for i, member in enumerate(members):
        name = f"worst-found-{i}"
        while name in ts.names:
            name += "'"
        cpu = member.cpu if member.cpu is not None else others[0]
        out.append(Task(name=name, role="best-effort", workload=replace(member, cpu=cpu),
                        period_ns=task.period_ns, deadline_ns=task.period_ns, offset_ns=0,
                        cpu=cpu, priority=0, weight=100, overrun="skip",
                        work=f"time:{duration_text(task.period_ns * 9 // 10)}"))
    return tuple(out)


def _beside(found: search_mod.SearchResult, spec: str
            ) -> tuple[Result, list[Comparison]]:
    """The last round's run that measured `spec`, and its comparisons under it."""
    for run in found.rounds[-1].results:
        beside = [c for c in search_mod.over_all_pairs(run) if c.aggressor_set == spec]
        if beside:
            return run, beside
    raise AssertionError(f"{spec} was ranked in the last round but measured in none of it")

