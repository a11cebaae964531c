"""The worst-aggressor search: which aggressor hurts this victim most, on this host?

Certification needs the worst case, not a preset someone picked. The search explores the
aggressor space (kind x access x pattern x streams x footprint x memory-level parallelism x
cores) with successive halving on the paired ratio: every candidate of a round is measured
interleaved with the others (the measurement core's blocks, with the running canary), the
stronger half goes on to the next round with twice the pairs, until one is left.

On a host whose CPUs can share their last-level cache (by the topology), candidates are
ranked by Δ over their pairs from `shared` blocks only: that is where cross-core cache
interference shows, and a ranking over mostly not-shared pairs would rank host noise (on a
VM whose vCPUs share the L3 a fraction of the time, it eliminated the strongest aggressor).
A round keeps adding pairs, in blocks, until every candidate has the round's number of
shared pairs, up to MAX_RUNS_FACTOR times that many (a candidate stops sooner once the shared
blocks have come too rarely to reach them: paired.GIVE_UP_AFTER); a candidate still short
then makes the search refuse, with the reason, rather than rank it on the wrong regime.
Without the canary, or where the CPUs cannot share a cache, candidates are ranked over all
their pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

from ...base.errors import HostUnsupported, InputError
from ...base.parse import human_size
from ...host.topology import Topology
from ..regime.canary import can_share
from ..harness import paired as harness
from ..harness.paired import SHARED
from ..harness.comparison import Comparison, comparisons
from .presets import PRESETS, Footprints
from ..harness.session import Request, Result, measure

# Footprints as multiples of the shared cache, plus one that only overflows the private cache.
_SIZES = (("2xL2", None), ("LLC/2", 0.5), ("LLC", 1.0), ("2xLLC", 2.0))
# Where random-access and multi-stream aggressors are strongest: around the shared cache (the
# victim's lines are evicted by traffic that itself hits in the shared cache, at its
# bandwidth) and well beyond it (DRAM bandwidth, as STREAM's three arrays).
_RAND_SIZES = (0.75, 1.0, 1.5, 2.0)
_STREAM_SIZES = (1.0, 4.0)
_STREAMS = (2, 4, 8)
_MLPS = (1, 4, 8, 16)
# A round keeps adding pairs until every candidate has its pairs in shared blocks, up to this
# many times that number of pairs.
MAX_RUNS_FACTOR = 12


class SearchRefused(HostUnsupported):
    """The host did not share its cache long enough to rank the candidates."""

    def __init__(self, reason: str, partial: "SearchResult") -> None:
        super().__init__(reason)
        self.partial = partial


def _h(size: int) -> str:
    return human_size(size).replace(" ", "")


def candidates(fp: Footprints, aggressor_cpus: list[int]) -> list[str]:
    """The search space in the `--aggressor` grammar, the ten presets first; a candidate on
    several cores is its member repeated, pinned to each aggressor CPU."""
    sizes = []
    for _, factor in _SIZES:
        size = 2 * fp.private if factor is None else int(fp.shared * factor)
        if size not in sizes:
            sizes.append(size)
    singles: list[str] = list(PRESETS)
    if fp.host_bank is None:
        singles = [p for p in singles if not p.startswith("BkPLL")]
    for size in sizes:
        for op in ("read", "write", "rmw"):
            singles.append(f"bw:op={op},size={_h(size)}")
        for op in ("read", "write"):
            for mlp in _MLPS:
                singles.append(f"pll:op={op},size={_h(size)},mlp={mlp}")
    for factor in _RAND_SIZES:
        for op in ("read", "write", "rmw"):
            singles.append(f"bw:op={op},size={_h(int(fp.shared * factor))},pattern=rand")
    for factor in _STREAM_SIZES:
        for streams in _STREAMS:
            for op in ("write", "rmw"):
                singles.append(f"bw:op={op},size={_h(int(fp.shared * factor))},"
                               f"streams={streams}")
    singles.append(f"bw:op=nt,size={_h(4 * fp.shared)}")
    out = list(dict.fromkeys(singles))
    for cores in range(2, len(aggressor_cpus) + 1):
        cpus = aggressor_cpus[:cores]
        out += ["+".join(f"{c}@{cpu}" for cpu in cpus) for c in singles[:len(PRESETS)]]
    return out


def presets_only(space: list[str]) -> list[str]:
    """The candidates that are presets: a quick search, on one core per aggressor."""
    return [c for c in space if c in PRESETS]


@dataclass(frozen=True)
class Ranked:
    spec: str
    comparison: Comparison | None  # None: no pair of the stratum at all
    regime: str  # the stratum it was ranked in: "shared" or "all"

    def estimate(self):
        if self.comparison is None:
            return None
        return self.comparison.by_regime.get(SHARED) if self.regime == SHARED \
            else self.comparison.result

    @property
    def n(self) -> int:
        e = self.estimate()
        return 0 if e is None else e.n

    @property
    def delta(self) -> float:
        e = self.estimate()
        return math.nan if e is None else e.delta

    def to_dict(self) -> dict:
        e = self.estimate()
        if e is None:
            return {"aggressor": self.spec, "ranked_in": self.regime, "n": 0, "delta": None,
                    "delta_ci": [None, None], "paired_median": None, "paired_max": None,
                    "n_all": 0}
        lo, hi = (None if math.isnan(x) else x for x in e.delta_ci)
        return {"aggressor": self.spec, "ranked_in": self.regime, "n": e.n, "delta": e.delta,
                "delta_ci": [lo, hi], "paired_median": e.paired_median,
                "paired_max": e.paired_max, "n_all": self.comparison.result.n}


@dataclass
class Round:
    """One round: its candidates measured interleaved, in one run, or in several batches
    (one run each) when their aggressors would not all fit in memory at once."""

    index: int
    pairs: int
    ranking: list[Ranked]
    kept: list[str]
    results: list[Result]

    def regime_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.results:
            for regime, n in result.regime_counts().items():
                counts[regime] = counts.get(regime, 0) + n
        return counts

    def to_dict(self) -> dict:
        stopped = {k: v for r in self.results if r.outcome for k, v in r.outcome.stopped.items()}
        return {"round": self.index, "pairs": self.pairs,
                "ranking": [r.to_dict() for r in self.ranking], "kept": self.kept,
                "invocation_ids": [r.invocation_id for r in self.results],
                "batches": len(self.results), "regime_blocks": self.regime_counts(),
                "stopped": stopped}


@dataclass
class SearchResult:
    victim: str
    stratum: str = "all"
    rounds: list[Round] = field(default_factory=list)

    @property
    def winner(self) -> Ranked:
        return self.rounds[-1].ranking[0]

    def strongest_so_far(self) -> Ranked | None:
        """A refused search's best offer: the last round's strongest candidate over all its
        pairs, whatever the regime. Provisional: it is ranked where cross-core interference
        may not have shown, so a stronger one there may have been cut or never measured."""
        last = self.rounds[-1] if self.rounds else None
        if last is None:
            return None
        ranking = rank([c for r in last.results for c in over_all_pairs(r)],
                       [x.spec for x in last.ranking], "all")
        return next((r for r in ranking if r.n), None)

    def to_dict(self) -> dict:
        return {"victim": self.victim, "ranked_in": self.stratum,
                "winner": self.winner.to_dict() if self.rounds else None,
                "rounds": [r.to_dict() for r in self.rounds]}


def over_all_pairs(result: Result) -> list[Comparison]:
    """A run's comparisons over every pair it measured, whatever regime its request restricted
    the headline to: a round ranked in shared blocks has no comparison at all for a candidate
    with no shared pair, though its pairs in other blocks were measured."""
    if result.outcome is None:
        return result.regions
    return comparisons(result.outcome.samples, seed=result.plan.seed)


def memory_batches(req: Request, topo: Topology,
                   available: int | None = None) -> list[list[str]]:
    """`req`'s aggressor sets cut, in order, into runs whose resident buffers fit what the
    harness allows (harness.check_resident_memory): one batch where all fit. A batch's sets
    are interleaved with each other, not with other batches'; successive halving ends on a
    round of two, which always runs as one, so the winner is decided head to head."""
    from ..harness.session import resolve

    available = harness.mem_available() if available is None else available
    if available is None:
        return [list(req.aggressors)]
    cap = harness.RESIDENT_SHARE * available
    plan = resolve(req, topo)
    batches: list[list[str]] = [[]]
    used = 0
    for spec, aset in zip(req.aggressors, plan.sets):
        size = harness.resident_bytes(replace(plan, sets=(aset,)))
        if batches[-1] and size and used + size > cap:
            batches.append([])
            used = 0
        batches[-1].append(spec)
        used += size
    return batches


def rank(regions: list[Comparison], specs: list[str], stratum: str) -> list[Ranked]:
    """Candidates by Δ of their `total` region over their pairs in `stratum` ("shared" or
    "all"), the strongest first; a candidate without such a pair last."""
    total = {c.aggressor_set: c for c in regions if c.region == 0}
    ranked = [Ranked(spec, total.get(spec), stratum) for spec in specs]
    return sorted(ranked, key=lambda r: (r.n == 0, -r.delta if r.n else 0.0))


def short_of(ranking: list[Ranked], need: int) -> list[Ranked]:
    """The candidates with fewer than `need` pairs in their stratum."""
    return [r for r in ranking if r.n < need]


def refusal(ranking: list[Ranked], need: int, done: Round, what: str) -> str:
    """Why a ranking on shared pairs cannot be made: who is short, and how the host was."""
    short = short_of(ranking, need)
    blocks = done.regime_counts()
    names = ", ".join(f"{r.spec} ({r.n})" for r in short[:4])
    more = f" and {len(short) - 4} more" if len(short) > 4 else ""
    most = done.results[0].plan.most_runs
    gave_up = sum(why.startswith(harness.GAVE_UP) for r in done.results if r.outcome
                  for why in r.outcome.stopped.values())
    early = f", {gave_up} of them stopped before it as out of reach" if gave_up else ""
    return (f"{what}: {len(short)} of {len(ranking)} candidates had fewer than {need} pairs "
            f"in shared blocks after up to {most} pairs each{early}: {names}{more} (blocks: "
            + ", ".join(f"{k} {v}" for k, v in blocks.items())
            + "); the CPUs did not share their cache long enough to rank aggressors where "
              "cross-core interference shows. Run it again while the canary sees sharing "
              "(`intercore doctor`), or with --no-canary to rank over all pairs")


def stratum_for(req: Request, topo: Topology, victim_cpu: int, aggressor_cpu: int) -> str:
    """Where candidates are ranked: shared blocks where the canary runs and the CPUs can
    share a cache, else all pairs."""
    return SHARED if req.canary and can_share(topo, victim_cpu, aggressor_cpu) else "all"


def regime_request(req: Request, aggressors: list[str], pairs: int, stratum: str) -> Request:
    """A round's measurement: at least `pairs` pairs per candidate, and in the shared
    stratum as many more as it takes to have `pairs` of them in shared blocks."""
    base = replace(req, aggressors=tuple(aggressors), runs=pairs, until_ci=None,
                   max_runs=None, regime=None, until_pairs=None)
    if stratum != SHARED:
        return base
    return replace(base, until_pairs=pairs, regime=SHARED, max_runs=MAX_RUNS_FACTOR * pairs)


def save_winner(db, topo: Topology, result: SearchResult) -> str:
    """Save the winner as `worst:VICTIM` for this host; returns the name to use after `@`."""
    from ...host.report import host_report
    from ...store import Store
    from . import store as named
    from ..harness.store import host_id

    last = result.rounds[-1].results[-1]
    name = named.worst_name(last.plan.victim)
    report = host_report()
    with Store.open(db) as store:
        hid = host_id(store, topo, report.fingerprint(), report.to_dict())
        named.save(store, hid, name, result.winner.spec, last.invocation_id,
                   result.to_dict())
    return name


def search(req: Request, *, db, argv: list[str], first_pairs: int = 3,
           candidates_list: list[str] | None = None, presets: bool = False,
           topo: Topology | None = None, on_phase: Callable[[str], None] | None = None,
           on_rep: Callable[[int, int], None] | None = None) -> SearchResult:
    """Successive halving from `candidates_list` (default: `candidates` for the host, its
    presets only with `presets`): each
    round measures the survivors interleaved, `pairs` each in the ranking stratum (twice the
    last round's), keeps the stronger half (at least two), and the round of two decides.
    Raises SearchRefused when a candidate cannot get its shared pairs."""
    from ...host.topology import read_topology
    from ..harness.session import resolve

    topo = topo or read_topology()
    if first_pairs < 2:
        raise InputError(f"must be at least 2, got {first_pairs}", field="--runs")
    plan = resolve(replace(req, canary=False), topo)
    acpus = sorted({m.cpu for s in plan.sets for m in s.members})
    if candidates_list is None:
        candidates_list = candidates(Footprints.for_host(topo, plan.victim_cpu), acpus)
        if presets:
            candidates_list = presets_only(candidates_list)
    alive = list(candidates_list)
    stratum = stratum_for(req, topo, plan.victim_cpu, acpus[0])
    out = SearchResult(req.victim, stratum)
    pairs = first_pairs
    while True:
        if on_phase:
            where = " in shared blocks" if stratum == SHARED else ""
            on_phase(f"search round {len(out.rounds) + 1}: {len(alive)} candidates x "
                     f"{pairs} pairs{where}")
        batches = memory_batches(regime_request(req, alive, pairs, stratum), topo)
        results = []
        for i, batch in enumerate(batches):
            if on_phase and len(batches) > 1:
                on_phase(f"search round {len(out.rounds) + 1}, batch {i + 1}/{len(batches)}: "
                         f"{len(batch)} candidates (all at once would not fit in memory)")
            results.append(measure(regime_request(req, batch, pairs, stratum), db=db,
                                   argv=argv, command="measure --search", on_rep=on_rep,
                                   on_phase=None, topo=topo))
        ranking = rank([c for r in results for c in r.regions], alive, stratum)
        # Halve, but end on a round of two: the winner is then decided head to head.
        keep = [r.spec for r in ranking[:max(1 if len(ranking) <= 2 else 2,
                                             len(ranking) // 2)]]
        out.rounds.append(Round(len(out.rounds), pairs, ranking, keep, results))
        if short_of(ranking, pairs):
            raise SearchRefused(refusal(ranking, pairs, out.rounds[-1],
                                        f"search round {len(out.rounds)}"), out)
        if len(alive) <= 2:
            return out
        alive = keep
        pairs *= 2
