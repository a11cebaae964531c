"""What a campaign showed, as typed data loaded from the store: the results model.

The HTML report, `measure campaign status | compare`, and the demo read a campaign through this
module only, never through the runner: the runs recorded (done or skipped, store/campaigns.py),
their invocations and raw samples, the statistics recomputed from those samples
(campaign/stats.py) and everything that weakens the evidence (`warnings`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..store import Store, StoredInvocation
from ..store.campaigns import CampaignRow, RunRow, Slot
from ..base.sample import TOTAL_REGION
from .stats import RunSamples, TaskStats, campaign_stats, setup_infos


@dataclass(frozen=True)
class CampaignResults:
    campaign: CampaignRow
    runs: tuple[RunRow, ...]
    invocations: Mapping[int, StoredInvocation]
    samples: tuple[RunSamples, ...]

    @property
    def skipped(self) -> tuple[RunRow, ...]:
        return tuple(r for r in self.runs if r.status == "skipped")

    @property
    def pending(self) -> tuple[Slot, ...]:
        recorded = {(r.round, r.setup) for r in self.runs}
        return tuple(slot for slot in self.campaign.schedule if slot not in recorded)

    def by_setup(self) -> dict[str, list[RunSamples]]:
        out: dict[str, list[RunSamples]] = {}
        for run in self.samples:
            out.setdefault(run.setup, []).append(run)
        return out

    def stats(self) -> list[TaskStats]:
        """Per setup and task, recomputed from the raw samples."""
        return campaign_stats(setup_infos(self.campaign.plan), self.samples)

    def hosts(self) -> dict[str, tuple[RunSamples, ...]]:
        """The finished runs per host that ran them (host_label), in run order."""
        done = [r.invocation_id for r in self.runs if r.invocation_id is not None]
        out: dict[str, list[RunSamples]] = {}
        for inv_id, samples in zip(done, self.samples, strict=True):  # load() builds both so
            out.setdefault(host_label(self.invocations[inv_id]), []).append(samples)
        return {host: tuple(runs) for host, runs in out.items()}


def host_label(invocation: StoredInvocation) -> str:
    """Who ran an invocation: the labgrid place of the board, else the host's name."""
    board = invocation.params.get("board")
    return board["place"] if board and board.get("place") else invocation.host.hostname


@dataclass(frozen=True)
class HostColumn:
    """The runs of one campaign on one host, with their statistics: one column of a
    side-by-side comparison. `label` names the host, and the campaign where several
    campaigns ran on one host."""

    label: str
    host: str
    campaign: str
    runs: int
    stats: tuple[TaskStats, ...]


def host_columns(results: Sequence[CampaignResults]) -> list[HostColumn]:
    """One column per (campaign, host) with finished runs, each campaign's statistics
    computed from its own plan (baselines) over that host's runs only."""
    found = [(r, host, runs) for r in results for host, runs in r.hosts().items()]
    hosts = Counter(host for _, host, _ in found)
    return [HostColumn(host if hosts[host] == 1 else f"{host} ({r.campaign.name})", host,
                       r.campaign.name, len(runs),
                       tuple(campaign_stats(setup_infos(r.campaign.plan), runs)))
            for r, host, runs in found]


def load(store: Store, row: CampaignRow) -> CampaignResults:
    """Everything recorded for a campaign: its runs, their invocations and raw samples."""
    runs = tuple(store.campaigns.runs(row.id))
    invocations: dict[int, StoredInvocation] = {}
    samples = []
    for run in runs:
        if run.invocation_id is None:
            continue
        invocation = store.get_invocation(run.invocation_id)
        assert invocation is not None  # the foreign key guarantees it
        invocations[run.invocation_id] = invocation
        victim = next(w for w in store.workloads_for(run.invocation_id) if w.role == "victim")
        samples.append(RunSamples(run.setup, run.round, victim.name,
                                  store.samples_for(run.invocation_id)))
    return CampaignResults(row, runs, invocations, tuple(samples))


def warnings(results: CampaignResults, stats: Sequence[TaskStats]) -> list[str]:
    """Everything a reader must know before trusting the figures."""
    out = []
    row = results.campaign
    if row.options.get("quick"):
        out.append("quick mode: few repetitions and rounds; a smoke test of the pipeline, "
                   "not evidence")
    if results.pending:
        out.append(f"incomplete: {len(results.pending)} of {len(row.schedule)} runs have not "
                   f"run yet (`intercore measure campaign resume {row.name}`)")
    out += _regime_warnings(results)
    hashes: dict[str, set[str]] = defaultdict(set)
    for r in results.runs:
        hashes[r.setup].add(r.setup_hash)
    for setup, seen in sorted(hashes.items()):
        if len(seen) > 1:
            out.append(f"setup {setup} was measured under {len(seen)} different hashes "
                       f"({', '.join(sorted(seen))}): resumed with --force after a change")
    for inv in results.invocations.values():
        for w in inv.summary.get("warnings", []):
            out.append(f"{inv.params.get('setup')} round {inv.params.get('round')}: {w}")
    out += _sample_warnings(results)
    for t in stats:
        if t.region == TOTAL_REGION and t.slowdown is not None and math.isnan(t.slowdown.ci[0]):
            out.append(f"{t.setup}: too few samples for a slowdown CI")
    for host in {inv.host.id: inv.host for inv in results.invocations.values()}.values():
        out += [f"host {host.hostname}: {w}" for w in host.info.get("warnings", [])]
    return list(dict.fromkeys(out))


def _regime_warnings(results: CampaignResults) -> list[str]:
    """How much of the campaign the canary saw sharing the cache, counted per repetition
    (the regime is its block's, or its run's where no running canary probed)."""
    counts = Counter(s.regime or "unknown" for run in results.samples for s in run.samples
                     if s.region_name == TOTAL_REGION)
    n = sum(counts.values())
    if not n or counts["shared"] == n:
        return []
    seen = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    if not counts["shared"]:
        return [f"none of the {n} measured repetitions ran while the canary saw the CPUs "
                f"share a cache ({seen}): a slowdown near 1x says nothing about the platform"]
    return [f"the host's cache sharing came and went: {counts['shared']} of {n} measured "
            f"repetitions ran in shared blocks ({seen}); read the per-regime results"]


def _sample_warnings(results: CampaignResults) -> list[str]:
    migrated: Counter[str] = Counter()
    preempted: Counter[str] = Counter()
    for run in results.samples:
        measured = [s for s in run.samples if s.region_name == TOTAL_REGION]
        if len({s.cpu for s in measured}) > 1:
            migrated[run.setup] += 1
        if any(s.nivcsw > 0 for s in measured):
            preempted[run.setup] += 1
    out = [f"{setup}: the critical task ran on more than one CPU in {n} run(s)"
           for setup, n in sorted(migrated.items())]
    if preempted:
        out.append(f"involuntary context switches during measured repetitions in "
                   f"{sum(preempted.values())} run(s) of {len(preempted)} setup(s); the metric "
                   "is thread CPU time, which excludes the time spent switched out")
    return out
