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

from dataclasses import dataclass, field, replace

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

    def sensitivity(self, p: Proc, others: list[Proc], tasks: int) -> float:
        if tasks <= 1:
            return 1.0
        if not self.matrix:  # the search asks this for every task of every trial
            return p.delta
        known = [self.matrix[(a, b)] for a in p.callees for o in others for b in o.callees
                 if (a, b) in self.matrix]
        if p.mult > 1:  # its own instances run beside each other
            known += [self.matrix[(a, b)] for a in p.callees for b in p.callees
                      if (a, b) in self.matrix]
        return max(known) if known else p.delta

    def estimate(self, procs: dict[str, Proc], chans: list[Chan]) -> float:
        tasks = sum(p.mult for p in procs.values())
        load: dict[str, float] = {}
        for p in procs.values():
            others = [o for o in procs.values() if o.name != p.name]
            load[p.name] = p.weight * self.sensitivity(p, others, tasks)
        for c in chans:
            if c.src != c.dst:
                load[c.src] += CHANNEL * c.tokens
                load[c.dst] += CHANNEL * c.tokens
        per_instance = [load[p.name] / p.mult for p in procs.values()]
        time = max(max(per_instance), sum(load.values()) / self.cpus)
        return time * (1 + SIGMA * max(0, tasks - self.cpus) / self.cpus)


def merge(a: Proc, b: Proc, name: str) -> Proc:
    w = a.weight + b.weight
    delta = (a.delta * a.weight + b.delta * b.weight) / w if w else max(a.delta, b.delta)
    return Proc(name, a.nodes + b.nodes, a.callees + b.callees, a.loop, a.rate, w, delta,
                a.stateful or b.stateful, a.mult)


def _reaches(chans: list[Chan], start: str, goal: str, skip_direct: str) -> str | None:
    """A node through which `start` reaches `goal` other than by a direct channel."""
    succ: dict[str, set[str]] = {}
    for c in chans:
        if c.src != c.dst:
            succ.setdefault(c.src, set()).add(c.dst)
    todo = [(n, n) for n in succ.get(start, ()) if n != skip_direct]
    seen = set()
    while todo:
        n, via = todo.pop()
        if n == goal:
            return via
        if n in seen:
            continue
        seen.add(n)
        todo.extend((m, via) for m in succ.get(n, ()))
    return None


def legality(a: Proc, b: Proc, chans: list[Chan], budget: float | None) -> str | None:
    """None if a and b may be fused, else why not."""
    between = [c for c in chans if {c.src, c.dst} == {a.name, b.name}]
    if not between:
        return "no channel between them"
    if a.loop != b.loop:
        return f"mixed rates ({a.name} fires {a.rate}x, {b.name} {b.rate}x)"
    cond = [c.var for c in between if c.conditional]
    if cond:
        return f"conditional edge ({', '.join(sorted(set(cond)))})"
    for x, y in ((a, b), (b, a)):
        via = _reaches(chans, x.name, y.name, y.name)
        if via is not None:
            return f"a path {x.name} -> {via} -> ... -> {y.name} would become a cycle"
    if a.mult != b.mult:
        single = a if a.mult == 1 else b
        if single.stateful:
            return f"would duplicate stateful {single.name} ({max(a.mult, b.mult)} instances)"
        return f"different instance counts ({a.mult} and {b.mult})"
    if budget is not None and a.weight + b.weight > budget:
        return f"over budget ({a.weight + b.weight:.3g} > {budget:.3g})"
    return None


def _rename(chans: list[Chan], a: str, b: str, m: str) -> list[Chan]:
    out = []
    for c in chans:
        src = m if c.src in (a, b) else c.src
        dst = m if c.dst in (a, b) else c.dst
        if src != dst:
            out.append(replace(c, src=src, dst=dst))
    return out


BEAM = 8  # partitions kept per search step


def _candidates(procs: dict[str, Proc], chans: list[Chan], model: Model,
                budget: float | None, name, legal) -> list[tuple]:
    out = []
    for x, y in sorted({tuple(sorted((c.src, c.dst))) for c in chans if c.src != c.dst}):
        if min(procs[y].nodes, default=0) < min(procs[x].nodes, default=0):
            x, y = y, x  # name and order a fused process in program order
        a, b = procs[x], procs[y]
        if legal(a, b, chans, budget) is not None:
            continue
        m = merge(a, b, name(x, y))
        trial = {k: v for k, v in procs.items() if k not in (x, y)} | {m.name: m}
        trial_chans = _rename(chans, x, y, m.name)
        out.append((model.estimate(trial, trial_chans), x, y, m, trial, trial_chans))
    return out


@dataclass
class _State:
    procs: dict[str, Proc]
    chans: list[Chan]
    estimate: float
    steps: list[tuple[str, str, str, float, int]]  # (a, b, merged, estimate, tasks) after

    @property
    def tasks(self) -> int:
        return sum(p.mult for p in self.procs.values())

    @property
    def key(self) -> frozenset:
        return frozenset(frozenset(p.nodes) for p in self.procs.values())


def plan(procs: dict[str, Proc], chans: list[Chan], model: Model, *,
         max_tasks: int | None = None, budget: float | None = None,
         no_fuse: bool = False, name=lambda a, b: f"{a}_{b}", legal=legality,
         floor: int = 1) -> Plan:
    """Beam search over legal fusion sequences (BEAM partitions per step): the partition
    with the lowest estimate (within --max-tasks when given; otherwise the fewest tasks)
    wins, and its fusion sequence is the plan. Greedy fusion alone gets stuck: balancing a
    pipeline over P CPUs often needs a fusion that does not pay off on its own.

    `legal` says which neighbours may merge (the paper's rules by default); a partition of
    `floor` tasks or fewer is not merged further."""
    start = _State(dict(procs), list(chans), model.estimate(procs, chans), [])
    out = Plan(start_estimate=start.estimate, estimate=start.estimate)
    if no_fuse:
        out.stop = "--no-fuse"
        _record_rejections(out, start.procs, start.chans, budget)
        return out

    def rank(s: _State):
        over = max(0, s.tasks - max_tasks) if max_tasks is not None else 0
        return (over, s.estimate, s.tasks)

    best, frontier, seen = start, [start], {start.key}
    while frontier:
        children = []
        for s in (s for s in frontier if s.tasks > floor):
            for est, x, y, m, trial, trial_chans in _candidates(s.procs, s.chans, model,
                                                                  budget, name, legal):
                tasks = sum(p.mult for p in trial.values())
                child = _State(trial, trial_chans, est,
                               s.steps + [(x, y, m.name, est, tasks)])
                if child.key not in seen:
                    seen.add(child.key)
                    children.append(child)
        children.sort(key=rank)
        frontier = children[:BEAM]
        if frontier and rank(frontier[0]) < rank(best):
            best = frontier[0]
    before = start.estimate
    for x, y, merged, est, tasks in best.steps:
        why = "lowers the estimate" if est < before else \
            f"on the way to the best partition ({best.estimate:.3g})"
        out.merges.append(Decision(x, y, merged, before, est, tasks, why))
        before = est
    out.estimate = best.estimate
    out.stop = (f"best estimate {best.estimate:.3g} with {best.tasks} task(s) "
                f"(from {start.estimate:.3g}; beam search, width {BEAM})")
    if max_tasks is not None and best.tasks > max_tasks:
        out.stop += f"; --max-tasks {max_tasks} not reached: the rest cannot be fused legally"
    _record_rejections(out, best.procs, best.chans, budget)
    return out


def _record_rejections(out: Plan, procs, chans, budget) -> None:
    first = lambda n: (min(procs[n].nodes, default=0), n)  # noqa: E731 - program order
    for x, y in sorted({tuple(sorted((c.src, c.dst), key=first))
                        for c in chans if c.src != c.dst}, key=lambda p: tuple(map(first, p))):
        why = legality(procs[x], procs[y], chans, budget)
        if why is not None:
            out.rejected[(x, y)] = why
