"""The worst-aggressor search: which aggressor hurts this victim most, on this host?

Certification needs the worst case, not a preset someone picked. The search explores the
preset space (kind x access x footprint x memory-level parallelism x cores) with successive
halving on the paired ratio: every candidate of a round is measured interleaved with the
others (the measurement core's blocks, with the running canary), the better half goes on to
the next round with twice the pairs, until one is left. Candidates are ranked by Δ in the
`shared` regime when every candidate has shared pairs (the regime where cross-core
interference is observable at all), else over every pair, and the ranking says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

from ..errors import InputError
from ..host.parse import human_size
from ..host.topology import Topology
from .paired_comparison import Comparison, comparisons
from .presets import PRESETS, Footprints
from .session import Request, Result, measure

# Footprints as multiples of the shared cache, plus one that only overflows the private cache.
_SIZES = (("2xL2", None), ("LLC/2", 0.5), ("LLC", 1.0), ("2xLLC", 2.0))
_MLPS = (1, 4, 8, 16)
MIN_REGIME_PAIRS = 2


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
            singles.append(f"bw:op={op},size={human_size(size).replace(' ', '')}")
        for op in ("read", "write"):
            for mlp in _MLPS:
                singles.append(f"pll:op={op},size={human_size(size).replace(' ', '')},mlp={mlp}")
    out = list(dict.fromkeys(singles))
    for cores in range(2, len(aggressor_cpus) + 1):
        cpus = aggressor_cpus[:cores]
        out += ["+".join(f"{c}@{cpu}" for cpu in cpus) for c in singles[:len(PRESETS)]]
    return out


@dataclass(frozen=True)
class Ranked:
    spec: str
    comparison: Comparison
    regime: str  # the stratum it was ranked in: "shared" or "all"

    @property
    def delta(self) -> float:
        r = self.comparison.by_regime.get("shared") if self.regime == "shared" else None
        return (r or self.comparison.result).delta

    def estimate(self):
        return self.comparison.by_regime["shared"] if self.regime == "shared" \
            else self.comparison.result

    def to_dict(self) -> dict:
        e = self.estimate()
        lo, hi = (None if math.isnan(x) else x for x in e.delta_ci)
        return {"aggressor": self.spec, "ranked_in": self.regime, "n": e.n, "delta": e.delta,
                "delta_ci": [lo, hi], "paired_median": e.paired_median,
                "paired_max": e.paired_max, "n_all": self.comparison.result.n}


@dataclass
class Round:
    index: int
    pairs: int
    ranking: list[Ranked]
    kept: list[str]
    result: Result

    def to_dict(self) -> dict:
        return {"round": self.index, "pairs": self.pairs,
                "ranking": [r.to_dict() for r in self.ranking], "kept": self.kept,
                "invocation_id": self.result.invocation_id,
                "regime_blocks": self.result.regime_counts()}


@dataclass
class SearchResult:
    victim: str
    rounds: list[Round] = field(default_factory=list)

    @property
    def winner(self) -> Ranked:
        return self.rounds[-1].ranking[0]

    def to_dict(self) -> dict:
        return {"victim": self.victim, "winner": self.winner.to_dict(),
                "rounds": [r.to_dict() for r in self.rounds]}


def rank(regions: list[Comparison]) -> list[Ranked]:
    """Candidates by Δ of their `total` region, in the shared regime when every one of them
    has enough shared pairs, else over all pairs; the strongest first."""
    total = [c for c in regions if c.region == 0]
    in_shared = all(c.by_regime.get("shared") is not None and
                    c.by_regime["shared"].n >= MIN_REGIME_PAIRS for c in total)
    ranked = [Ranked(c.aggressor_set, c, "shared" if in_shared else "all") for c in total]
    return sorted(ranked, key=lambda r: r.delta, reverse=True)


def save_winner(db, topo: Topology, result: SearchResult) -> str:
    """Save the winner as `worst:VICTIM` for this host; returns the name to use after `@`."""
    from ..host.report import host_report
    from ..store import Store
    from . import named
    from .persist import host_id

    last = result.rounds[-1].result
    name = named.worst_name(last.plan.victim)
    report = host_report()
    with Store.open(db) as store:
        hid = host_id(store, topo, report.fingerprint(), report.to_dict())
        named.save(store, hid, name, result.winner.spec, last.invocation_id,
                   result.to_dict())
    return name


def search(req: Request, *, db, argv: list[str], first_pairs: int = 3,
           candidates_list: list[str] | None = None, topo: Topology | None = None,
           on_phase: Callable[[str], None] | None = None,
           on_rep: Callable[[int, int], None] | None = None) -> SearchResult:
    """Successive halving from `candidates_list` (default: `candidates` for the host): each
    round measures the survivors interleaved with twice the pairs of the last, keeps the
    stronger half (at least two), and the round of two decides."""
    from ..host.topology import read_topology
    from .session import resolve

    topo = topo or read_topology()
    if first_pairs < 2:
        raise InputError(f"must be at least 2, got {first_pairs}", field="--runs")
    if candidates_list is None:
        plan = resolve(replace(req, canary=False), topo)
        acpus = sorted({m.cpu for s in plan.sets for m in s.members})
        candidates_list = candidates(Footprints.for_host(topo, plan.victim_cpu), acpus)
    alive = list(candidates_list)
    out = SearchResult(req.victim)
    pairs = first_pairs
    while True:
        if on_phase:
            on_phase(f"search round {len(out.rounds) + 1}: {len(alive)} candidates x "
                     f"{pairs} pairs")
        result = measure(replace(req, aggressors=tuple(alive), runs=pairs, until_ci=None,
                                 max_runs=None, regime=None),
                         db=db, argv=argv, command="measure --search", on_rep=on_rep,
                         on_phase=None, topo=topo)
        ranking = rank(result.regions)
        # Halve, but end on a round of two: the winner is then decided head to head.
        keep = [r.spec for r in ranking[:max(1 if len(ranking) <= 2 else 2,
                                             len(ranking) // 2)]]
        out.rounds.append(Round(len(out.rounds), pairs, ranking, keep, result))
        if len(alive) <= 2:
            return out
        alive = keep
        pairs *= 2
