"""The interference calculus (phylog.md §2), pure and on bitsets.

Definitions. F(t) is the footprint of transaction t (a set of services); I is the symmetric,
reflexive service-interference relation; a k-set M is k pairwise non-exclusive transactions.
A node {s, s'} with (s, s') in I is *active* when two different transactions of M reach it
(s in F(t), s' in F(t')); an edge joins active nodes touched by one transaction. M is
*k-itf* when its active graph is non-empty and connected and every t in M touches an active
node (the channel is the set of services on the active nodes), *k-free* when no pair of its
transactions interferes, and *redundant* otherwise (it decomposes into smaller results).

Reformulation used here. Two transactions *interfere* when F(t) meets R(t'), the services
interfering with some service of F(t'). Touching a common active node implies interfering
(through reflexivity, or through the node's own pair), and interfering pairs share a node, so
M is k-itf exactly when the interference graph on M is connected, k-free when it has no edge,
and redundant otherwise. The tests check this against the definition above, literally
implemented, and against pml-analyzer's published oracle for its `mySys` example.

Enumeration. k-sets are grown as cliques of the non-exclusion graph; the last member is
decided for all candidates at once with bit operations: M = P + {l} is connected iff l
interferes with every connected component of P, and free iff P has no edge and l interferes
with no member of P.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..base.errors import InputError
from .draft import LOAD_STORE, SHARED, Draft, partner, pair
from .platform import Platform
from .rules import RULES, SplitRule

K_RANGE = (2, 10)


def bits(x: int) -> Iterator[int]:
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def components(members: int, adjacent: Sequence[int]) -> list[int]:
    """Connected components (as bitsets) of the graph `adjacent` (a neighbour bitset per
    vertex) restricted to the vertices in `members`, lowest vertex's component first."""
    left = members
    parts = []
    while left:
        part = frontier = left & -left
        while frontier:
            grown = 0
            for m in bits(frontier):
                grown |= adjacent[m]
            frontier = grown & members & ~part
            part |= frontier
        parts.append(part)
        left &= ~part
    return parts


@dataclass(frozen=True)
class Problem:
    """The calculus input, frozen: transactions and services by index, as bitsets."""

    transactions: tuple[str, ...]
    initiators: tuple[str, ...]       # per transaction
    services: tuple[str, ...]
    footprint: tuple[int, ...]        # per transaction: bitset over services
    reach: tuple[int, ...]            # per transaction: services interfering with F(t)
    neighbours: tuple[int, ...]       # per service: bitset of services it interferes with
    exclusive: tuple[int, ...]        # per transaction: bitset of transactions it excludes
    draft: Draft = field(repr=False, compare=False)

    @property
    def n_initiators(self) -> int:
        return len(set(self.initiators))

    def names(self, mask: int, of: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(of[i] for i in bits(mask))

    def interferes(self, a: int, b: int) -> bool:
        return bool(self.footprint[a] & self.reach[b])

    def pair_channel(self, a: int, b: int) -> int:
        """Services on the nodes that a and b make active."""
        return (self.footprint[a] & self.reach[b]) | (self.footprint[b] & self.reach[a])


def build(platform: Platform) -> Problem:
    """Footprints and relation after the enabled rules and the model's assumptions."""
    enabled = [RULES[r] for r in platform.rules]
    draft = Draft(platform, [r for r in enabled if isinstance(r, SplitRule)])
    for rule in enabled:
        rule.apply(platform, draft)
    draft.apply_declarations()
    draft.apply_assumptions()
    return freeze(draft)


def freeze(draft: Draft) -> Problem:
    txs = tuple(draft.footprints)
    services = tuple(sorted({s for fp in draft.footprints.values() for s in fp}))
    index = {s: i for i, s in enumerate(services)}
    neighbours = []
    for s in services:
        mask = 1 << index[s]
        other = partner(s)
        if other in index and pair(s, other) not in draft.removed:
            mask |= 1 << index[other]
        neighbours.append(mask)
    for p in draft.added:
        a, b = tuple(p)
        if a in index and b in index and p not in draft.removed:
            neighbours[index[a]] |= 1 << index[b]
            neighbours[index[b]] |= 1 << index[a]
    footprint, reach = [], []
    for t in txs:
        mask = reach_mask = 0
        for s in draft.footprints[t]:
            mask |= 1 << index[s]
            reach_mask |= neighbours[index[s]]
        footprint.append(mask)
        reach.append(reach_mask)
    platform = draft.platform
    initiators = tuple(platform.transactions[t].initiator for t in txs)
    return Problem(txs, initiators, services, tuple(footprint), tuple(reach),
                   tuple(neighbours), _exclusion(platform, txs, initiators), draft)


def _exclusion(platform: Platform, txs: tuple[str, ...], initiators: tuple[str, ...]
               ) -> tuple[int, ...]:
    """Transactions of one initiator exclude each other (one runs at a time on it), as do
    those the model declares exclusive and apps in different time slices.

    A transaction serving several apps (derived from their accesses) runs whenever one of
    them runs, so two transactions exclude each other only when every app of one excludes
    every app of the other."""
    apps = [platform.transactions[t].apps for t in txs]
    slices = platform.config.time_slices
    declared = [{name: x for x, names in enumerate(a.items) for name in (names,)}
                for a in platform.assumptions if a.kind == "exclusive"]

    def apart(t: str, a: str, u: str, b: str) -> bool:
        if a in slices and b in slices and slices[a] != slices[b]:
            return True
        for items in declared:
            mine = {items[x] for x in (t, a) if x in items}
            theirs = {items[x] for x in (u, b) if x in items}
            if any(p != q for p in mine for q in theirs):
                return True
        return False

    out = [0] * len(txs)
    for i in range(len(txs)):
        for j in range(i, len(txs)):
            if initiators[i] == initiators[j] or all(
                    apart(txs[i], a, txs[j], b) for a in apps[i] for b in apps[j]):
                out[i] |= 1 << j
                out[j] |= 1 << i
    return tuple(out)


@dataclass(frozen=True)
class Analysis:
    problem: Problem
    k: int
    interference: tuple[tuple[tuple[int, ...], int], ...]  # (k-set, channel services bitset)
    free: tuple[tuple[int, ...], ...]
    redundant: int

    @property
    def counts(self) -> dict[str, int]:
        return {"interference": len(self.interference), "free": len(self.free),
                "redundant": self.redundant,
                "k_sets": len(self.interference) + len(self.free) + self.redundant}


def check_k(k: int, problem: Problem | None = None) -> None:
    """k outside 2..10 is an input error; k above the number of initiators is not (no
    k-set exists: transactions of one initiator never run together) and gives zero."""
    if not K_RANGE[0] <= k <= K_RANGE[1]:
        raise InputError(f"k must be between {K_RANGE[0]} and {K_RANGE[1]}, got {k}",
                         field="--k")


def classify(problem: Problem, k: int = 2) -> Analysis:
    """Every non-exclusive k-set, classified exactly once."""
    check_k(k, problem)
    n = len(problem.transactions)
    full = (1 << n) - 1
    later = [full & ~problem.exclusive[i] & ~((1 << (i + 1)) - 1) for i in range(n)]
    linked = [0] * n  # transactions each one interferes with
    for i in range(n):
        for j in range(i + 1, n):
            if problem.interferes(i, j):
                linked[i] |= 1 << j
                linked[j] |= 1 << i
    pair_channels: dict[tuple[int, int], int] = {}

    def channel_of(a: int, b: int) -> int:
        key = (a, b) if a < b else (b, a)
        found = pair_channels.get(key)
        if found is None:
            found = pair_channels[key] = problem.pair_channel(a, b)
        return found

    itf: list[tuple[tuple[int, ...], int]] = []
    free: list[tuple[int, ...]] = []
    redundant = 0

    def finish(prefix: tuple[int, ...], candidates: int) -> None:
        nonlocal redundant
        members = 0
        for m in prefix:
            members |= 1 << m
        parts = components(members, linked)
        touching = [0] * len(parts)
        for x, part in enumerate(parts):
            for m in bits(part):
                touching[x] |= linked[m]
        connected = candidates
        for t in touching:
            connected &= t
        edgeless = len(parts) == len(prefix)
        isolated = candidates
        if edgeless:
            for t in touching:
                isolated &= ~t
        else:
            isolated = 0
        redundant += candidates.bit_count() - connected.bit_count() - isolated.bit_count()
        inner = 0
        for x, a in enumerate(prefix):
            for b in prefix[x + 1:]:
                if linked[a] >> b & 1:
                    inner |= channel_of(a, b)
        for last in bits(connected):
            channel = inner
            for m in prefix:
                if linked[m] >> last & 1:
                    channel |= channel_of(m, last)
            itf.append(((*prefix, last), channel))
        free.extend((*prefix, last) for last in bits(isolated))

    def grow(prefix: tuple[int, ...], candidates: int) -> None:
        if len(prefix) == k - 1:
            if candidates:
                finish(prefix, candidates)
            return
        for nxt in bits(candidates):
            grow((*prefix, nxt), candidates & later[nxt])

    for first in range(n):
        grow((first,), later[first])
    return Analysis(problem, k, tuple(itf), tuple(free), redundant)


def analyze(platform: Platform, k: int = 2) -> Analysis:
    return classify(build(platform), k)


def node_origins(problem: Problem, a: str, b: str) -> set[str]:
    """Why services a and b interfere: shared (a == b), the load/store default, or the rules
    and assumptions that added the pair."""
    if a == b:
        return {SHARED}
    added = problem.draft.added.get(pair(a, b))
    if added:
        return set(added)
    return {LOAD_STORE}
