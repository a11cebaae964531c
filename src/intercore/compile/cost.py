"""The fusion cost model and planner: which legal edge to fuse, and when to stop.

Legality (paper 000 §4.3.2, and dfg-mlir's KPN semantics): two processes may be fused when

1. they run at the same rate (the same loop nest),
2. every channel between them is unconditional,
3. no other path joins them (fusing would close a cycle through that path), and
4. they run as the same number of instances (fusing a replicated, data-parallel process
   with a single one would duplicate the single one, and a stateful one must never be).

The cost model estimates the run time of a partition in units of one firing of weight 1
(a call no weight source covers, weights.DEFAULT):

    time = max(max_t W'_t, sum_t W'_t / P) * (1 + SIGMA * max(0, T - P) / P)
    W'_t = sum over t's nodes of weight * sensitivity  +  CHANNEL * tokens on t's channels

with P the CPU count and T the number of tasks (instances). `sensitivity` is the slowdown a
node suffers while other tasks run beside it: the interference matrix's entry for the worst
co-running callee when it has one, the heatmap's predicted Δ otherwise, 1 when it runs alone.
SIGMA prices oversubscription (context switches and the cache refills they cause), CHANNEL a
token's push and pull. Both are assumptions, stated in --explain; measured weights make the
rest concrete.

The planner searches fusion sequences with a beam (`plan`) and keeps the partition with the
lowest estimate, unless it has more tasks than --max-tasks. --budget caps the weight of
any fused task.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Iterable

SIGMA = 0.25     # slowdown per oversubscribed task per CPU
CHANNEL = 0.05   # cost of moving one token, in firings of weight 1


@dataclass(frozen=True)
class Proc:
    name: str
    nodes: tuple[int, ...]
    callees: tuple[str, ...]
    loop: str
    rate: str
    weight: float       # all firings, in units of one firing of weight 1
    delta: float        # predicted slowdown beside other tasks (heatmap)
    stateful: bool
    mult: int

    @cached_property
    def members(self) -> frozenset[int]:
        return frozenset(self.nodes)


@dataclass(frozen=True)
class Chan:
    src: str
    dst: str
    var: str
    conditional: bool
    control: bool
    tokens: float


@dataclass
class Decision:
    a: str
    b: str
    merged: str
    before: float
    after: float
    tasks: int
    why: str


@dataclass
class Plan:
    merges: list[Decision] = field(default_factory=list)
    rejected: dict[tuple[str, str], str] = field(default_factory=dict)
    estimate: float = 0.0
    start_estimate: float = 0.0
    stop: str = ""


def firings(rate: str) -> float:
    return float(rate) if rate.isdigit() else 1.0


class Model:
    def __init__(self, cpus: int, matrix: dict[tuple[str, str], float] | None = None):
        self.cpus = max(1, cpus)
        self.matrix = matrix or {}

    def sensitivity(self, p: Proc, others: Iterable[Proc], tasks: int) -> float:
        if tasks <= 1:
            return 1.0
        if not self.matrix:  # the search asks this for every candidate merge
            return p.delta
        others = list(others)
        known = [self.matrix[(a, b)] for a in p.callees for o in others for b in o.callees
                 if (a, b) in self.matrix]
        if p.mult > 1:  # its own instances run beside each other
            known += [self.matrix[(a, b)] for a in p.callees for b in p.callees
                      if (a, b) in self.matrix]
        return max(known) if known else p.delta

    def time(self, peak: float, total: float, tasks: int) -> float:
        """The estimate from the heaviest instance's load, the sum of all loads and the
        task count."""
        return max(peak, total / self.cpus) * (1 + SIGMA * max(0, tasks - self.cpus) / self.cpus)


def merge(a: Proc, b: Proc, name: str) -> Proc:
    w = a.weight + b.weight
    delta = (a.delta * a.weight + b.delta * b.weight) / w if w else max(a.delta, b.delta)
    return Proc(name, a.nodes + b.nodes, a.callees + b.callees, a.loop, a.rate, w, delta,
                a.stateful or b.stateful, a.mult)


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


class Partition:
    """The processes of one partition and the channels between them, indexed so that a
    candidate merge's legality and estimate cost O(the pair's degree), and building the
    merged partition O(processes), rather than O(channels) each: the channels between each
    pair, each process's successors, channel tokens and load, and what it reaches.
    Rebuilding and rescanning every channel for every candidate made the planner cubic: 40 s
    for a 50-node graph, minutes for 100 (issue 23). The channels keep the names of the
    processes they were given with."""

    def __init__(self, procs: dict[str, Proc], chans: list[Chan], model: Model):
        self.procs, self.model = procs, model
        self.tasks = sum(p.mult for p in procs.values())
        self.between: dict[tuple[str, str], list[Chan]] = {}
        self.inner: dict[tuple[str, str], float] = {}   # tokens between the pair
        self.succ: dict[str, set[str]] = {n: set() for n in procs}
        self.tokens = dict.fromkeys(procs, 0.0)
        for c in chans:
            if c.src != c.dst:
                pair = _pair(c.src, c.dst)
                self.between.setdefault(pair, []).append(c)
                self.inner[pair] = self.inner.get(pair, 0.0) + c.tokens
                self.succ[c.src].add(c.dst)
                self.tokens[c.src] += c.tokens
                self.tokens[c.dst] += c.tokens
        self.first = {n: min(p.nodes, default=0) for n, p in procs.items()}
        self.bits = {n: 1 << i for i, n in enumerate(procs)}
        self.reach = self._closure()
        self._summarise({})
        # what depends on a pair of processes alone, not on the rest of the partition:
        # shared by every partition merged from this one, so that a search step works out
        # only the merges that involve the last merged process
        self.memo: dict[tuple, object] = {}

    def remember(self, what: str, a: Proc, b: Proc, make):
        key = (what, a.name, a.members, b.name, b.members)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = make()
        return found

    def _summarise(self, known: dict[str, float]) -> None:
        """Loads (those in `known` kept), their total, the heaviest instances, the estimate."""
        self.load = {n: known[n] if n in known else self._load(p)
                     for n, p in self.procs.items()}
        self.total = sum(self.load.values())
        # the three heaviest instances: the heaviest but the two merged is among them
        self.top = sorted(((v / self.procs[n].mult, n) for n, v in self.load.items()),
                          reverse=True)[:3]
        self.estimate = self.model.time(self.top[0][0] if self.top else 0.0, self.total,
                                        self.tasks)

    def _load(self, p: Proc) -> float:
        others = (o for o in self.procs.values() if o.name != p.name)
        return p.weight * self.model.sensitivity(p, others, self.tasks) \
            + CHANNEL * self.tokens[p.name]

    def _closure(self) -> dict[str, int]:
        """Each process's reachable set (itself included) as a bit mask: a fixpoint in
        reverse program order, one pass for an acyclic graph and one to confirm it."""
        reach = dict(self.bits)
        order = sorted(self.procs, key=lambda n: self.first[n], reverse=True)
        changed = True
        while changed:
            changed = False
            for n in order:
                r = reach[n]
                for s in self.succ[n]:
                    r |= reach[s]
                if r != reach[n]:
                    reach[n], changed = r, True
        return reach

    @cached_property
    def key(self) -> frozenset:
        return frozenset(p.members for p in self.procs.values())

    def pairs(self) -> list[tuple[str, str]]:
        """The pairs a channel joins, in name order."""
        return sorted(self.between)

    def path(self, start: str, goal: str) -> str | None:
        """A process through which `start` reaches `goal` other than by a direct channel."""
        bit, reach = self.bits[goal], self.reach
        via = [s for s in self.succ[start] if s != goal and reach[s] & bit]
        return min(via, key=self.first.__getitem__) if via else None

    def _merging(self, x: str, y: str) -> tuple[Proc, float]:
        """x and y as one process, and its load while other tasks run."""
        px, py = self.procs[x], self.procs[y]

        def make() -> tuple[Proc, float]:
            m = merge(px, py, "")
            others = (o for n, o in self.procs.items() if n not in (x, y))
            # 2 tasks: the load only counts while others run (estimate_merged)
            return m, m.weight * self.model.sensitivity(m, others, 2) + CHANNEL * (
                self.tokens[x] + self.tokens[y] - 2 * self.inner.get(_pair(x, y), 0.0))
        return self.remember("merge", px, py, make)

    def estimate_merged(self, x: str, y: str) -> tuple[float, int]:
        """The estimate and task count once x and y are merged, without building that
        partition: the other processes keep their loads (their co-runners' callees are the
        same) while more than one task runs."""
        m, load = self._merging(x, y)
        tasks = self.tasks - self.procs[x].mult - self.procs[y].mult + m.mult
        if tasks <= 1 or self.tasks <= 1:   # every sensitivity changes
            return self.merged(x, y, "").estimate, tasks
        peak = load / m.mult
        for v, n in self.top:
            if n != x and n != y:
                peak = max(peak, v)
                break
        return self.model.time(peak, self.total - self.load[x] - self.load[y] + load,
                               tasks), tasks

    def merged(self, x: str, y: str, name: str) -> Partition:
        """The partition with x and y merged into `name`; only what x or y touch changes."""
        out = copy.copy(self)
        out.__dict__.pop("key", None)
        gone, m = (x, y), replace(self._merging(x, y)[0], name=name)
        out.procs = {k: v for k, v in self.procs.items() if k not in gone} | {name: m}
        out.tasks = self.tasks - self.procs[x].mult - self.procs[y].mult + m.mult
        out.between, out.inner = dict(self.between), dict(self.inner)
        out.succ = {k: v for k, v in self.succ.items() if k not in gone}
        out.succ[name] = (self.succ[x] | self.succ[y]) - {x, y}
        for pair in [p for p in self.between if x in p or y in p]:
            chans, tokens = out.between.pop(pair), out.inner.pop(pair)
            other = pair[0] if pair[1] in gone else pair[1]
            if other in gone:
                continue   # between x and y: now inside m
            if x in self.succ[other] or y in self.succ[other]:
                out.succ[other] = (self.succ[other] - {x, y}) | {name}
            key = _pair(name, other)
            out.between[key] = out.between.get(key, []) + chans
            out.inner[key] = out.inner.get(key, 0.0) + tokens
        out.tokens = {k: v for k, v in self.tokens.items() if k not in gone}
        out.tokens[name] = self.tokens[x] + self.tokens[y] - 2 * self.inner.get(_pair(x, y), 0.0)
        out.first = {k: v for k, v in self.first.items() if k not in gone}
        out.first[name] = min(self.first[x], self.first[y])
        # whatever reached x or y now reaches all that m does
        out.bits = {k: v for k, v in self.bits.items() if k not in gone}
        out.bits[name] = self.bits[x] | self.bits[y]
        joined = self.reach[x] | self.reach[y]
        out.reach = {k: (r | joined if r & out.bits[name] else r)
                     for k, r in self.reach.items() if k not in gone}
        out.reach[name] = joined
        # the others' loads stay unless every sensitivity changes (one task, or none before)
        out._summarise({k: v for k, v in self.load.items() if k not in gone}
                       if min(self.tasks, out.tasks) > 1 else {})
        return out


def legality(a: Proc, b: Proc, part: Partition, budget: float | None) -> str | None:
    """None if a and b may be fused, else why not."""
    first, last = part.remember(f"legal {budget}", a, b, lambda: _pair_rules(a, b, part,
                                                                              budget))
    if first is not None:
        return first
    for x, y in ((a, b), (b, a)):
        via = part.path(x.name, y.name)
        if via is not None:
            return f"a path {x.name} -> {via} -> ... -> {y.name} would become a cycle"
    return last


def _pair_rules(a: Proc, b: Proc, part: Partition,
                budget: float | None) -> tuple[str | None, str | None]:
    """The rules the pair alone decides, those said before the path rule and those after."""
    between = part.between.get(_pair(a.name, b.name))
    if not between:
        return "no channel between them", None
    if a.loop != b.loop:
        return f"mixed rates ({a.name} fires {a.rate}x, {b.name} {b.rate}x)", None
    cond = [c.var for c in between if c.conditional]
    if cond:
        return f"conditional edge ({', '.join(sorted(set(cond)))})", None
    if a.mult != b.mult:
        single = a if a.mult == 1 else b
        if single.stateful:
            return None, f"would duplicate stateful {single.name} ({max(a.mult, b.mult)} " \
                "instances)"
        return None, f"different instance counts ({a.mult} and {b.mult})"
    if budget is not None and a.weight + b.weight > budget:
        return None, f"over budget ({a.weight + b.weight:.3g} > {budget:.3g})"
    return None, None


BEAM = 8  # partitions kept per search step


def _ordered(part: Partition, x: str, y: str) -> tuple[str, str]:
    """Name and order a fused process in program order."""
    return (y, x) if part.first[y] < part.first[x] else (x, y)


@dataclass
class _State:
    part: Partition
    estimate: float
    steps: list[tuple[str, str, str, float, int]]  # (a, b, merged, estimate, tasks) after


def plan(procs: dict[str, Proc], chans: list[Chan], model: Model, *,
         max_tasks: int | None = None, budget: float | None = None,
         no_fuse: bool = False, name=lambda a, b: f"{a}_{b}", legal=legality,
         floor: int = 1) -> Plan:
    """Beam search over legal fusion sequences (BEAM partitions per step): the partition
    with the lowest estimate (within --max-tasks when given; otherwise the fewest tasks)
    wins, and its fusion sequence is the plan. Greedy fusion alone gets stuck: balancing a
    pipeline over P CPUs often needs a fusion that does not pay off on its own.

    `legal` says which neighbours may merge (the paper's rules by default); a partition of
    `floor` tasks or fewer is not merged further. Each step scores every legal merge of
    every kept partition by its estimate and builds only the BEAM best."""
    first = Partition(dict(procs), list(chans), model)
    start = _State(first, first.estimate, [])
    out = Plan(start_estimate=start.estimate, estimate=start.estimate)
    if no_fuse:
        out.stop = "--no-fuse"
        _record_rejections(out, first, budget)
        return out

    def rank(tasks: int, estimate: float):
        over = max(0, tasks - max_tasks) if max_tasks is not None else 0
        return (over, estimate, tasks)

    best, frontier = start, [start]
    while frontier:
        # every merge scored first, legal or not; legality is asked in rank order only
        # until the beam is full (its path rule depends on the partition, not only the pair)
        scored = []
        for s in (s for s in frontier if s.part.tasks > floor):
            part = s.part
            for x, y in part.pairs():
                x, y = _ordered(part, x, y)
                est, tasks = part.estimate_merged(x, y)
                scored.append((rank(tasks, est), s, x, y))
        scored.sort(key=lambda t: t[0])   # stable: ties keep the order they were found in
        frontier, seen = [], set()
        for (_, est, tasks), s, x, y in scored:
            if len(frontier) == BEAM:
                break
            part = s.part
            a, b = part.procs[x], part.procs[y]
            if legal(a, b, part, budget) is not None:
                continue
            key = part.key - {a.members, b.members} | {a.members | b.members}
            if key in seen:   # the same partition reached by another order of merges
                continue
            seen.add(key)
            merged = _unique(name(x, y), part.procs)
            frontier.append(_State(part.merged(x, y, merged), est,
                                   s.steps + [(x, y, merged, est, tasks)]))
        if frontier and rank(frontier[0].part.tasks, frontier[0].estimate) < \
                rank(best.part.tasks, best.estimate):
            best = frontier[0]
    before = start.estimate
    for x, y, merged, est, tasks in best.steps:
        why = "lowers the estimate" if est < before else \
            f"on the way to the best partition ({best.estimate:.3g})"
        out.merges.append(Decision(x, y, merged, before, est, tasks, why))
        before = est
    out.estimate = best.estimate
    out.stop = (f"best estimate {best.estimate:.3g} with {best.part.tasks} task(s) "
                f"(from {start.estimate:.3g}; beam search, width {BEAM})")
    if max_tasks is not None and best.part.tasks > max_tasks:
        out.stop += f"; --max-tasks {max_tasks} not reached: the rest cannot be fused legally"
    _record_rejections(out, best.part, budget)
    return out


def _unique(name: str, taken) -> str:
    """A merged process's name apart from every process of the partition: the functions a,
    b and a_b would otherwise give p_a + p_b the name p_a_b, which is a_b's."""
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{name}_{n}"
    return out


def _record_rejections(out: Plan, part: Partition, budget) -> None:
    first = lambda n: (part.first[n], n)  # noqa: E731 - program order
    for x, y in sorted((tuple(sorted(p, key=first)) for p in part.between),
                       key=lambda p: tuple(map(first, p))):
        why = legality(part.procs[x], part.procs[y], part, budget)
        if why is not None:
            out.rejected[(x, y)] = why
