"""A simulated host for the canary's logic: a chase's walk times in a cache-sharing state the
test sets, with the behaviour measured on the real host (docs/canary.md) and noise on top.

- A probe starts cold: the measured blocks (or another tenant, while the canary's CPU idled)
  evicted the chase, so its first walk runs at memory speed and each walk after it brings
  back part of it (here 125 -> 95 -> 45 -> 35 ns per access over four laps; the second
  walk can be as slow as the first).
- Alone, a settled chase runs at cache speed. Beside the running thrasher it runs `effect`
  times slower when the cache is shared (the state "present") and 0-5 % slower when not
  (memory traffic only).
- Noise: every walk is off by a log-normal factor of spread `sigma`, and with probability
  `tenant` another tenant takes the CPU during it (1.5-3x slower).

`state` is a function of the simulated time (one tick per walk), so a test can switch the
state between probes, inside a block, or in the middle of a probe.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from _state_checks import shuffled_pair

from intercore.measure.harness import paired as harness
from intercore.base.sample import INT, ISO

PRESENT, ABSENT = True, False
CACHE_NS, MEMORY_NS = 34.0, 125.0


@dataclass
class SimulatedCache:
    state: Callable[[int], bool]
    seed: int = 1
    sigma: float = 0.03
    tenant: float = 0.0
    effect: tuple[float, float] = (1.8, 3.0)
    rng: random.Random = field(init=False)
    tick: int = field(default=0, init=False)
    warmth: float = field(default=0.0, init=False)
    thrashed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def evict(self) -> None:
        """What a measured block does to the canary's chase."""
        self.warmth = 0.0

    def walk(self, condition: str) -> float:
        """One walk's ns per access."""
        self.tick += 1
        shared = self.state(self.tick)
        if condition == ISO and self.thrashed:
            self.warmth = 0.0  # the thrasher evicted the chase from the shared cache
        self.thrashed = condition == INT and shared
        level = CACHE_NS
        if condition == INT:
            level *= self.rng.uniform(*self.effect) if shared else self.rng.uniform(1.0, 1.05)
        t = level + (1 - self.warmth) * max(MEMORY_NS - level, 0.0)
        self.warmth = min(1.0, self.warmth + self.rng.uniform(0.1, 0.6))
        t *= self.rng.lognormvariate(0.0, self.sigma)
        if self.rng.random() < self.tenant:
            t *= self.rng.uniform(1.5, 3.0)
        return t

    def pair(self, settle_walks: int) -> tuple[float, float]:
        """One probe pair as RunningCanary takes it: halves in a random order, each settled."""
        return shuffled_pair(self.rng,
                             lambda c: harness.settle(lambda: self.walk(c), settle_walks))

    def probe(self, plan: harness.CanaryPlan) -> harness.Probe:
        """A probe after a measured block, with the running canary's own logic."""
        self.evict()
        start = self.tick
        ratios, iso = harness.take_probe(lambda: self.pair(plan.settle_walks), plan.pairs,
                                         plan.most_pairs)
        return harness.Probe(self.tick, harness.classify_probe(ratios), tuple(ratios), start,
                             tuple(iso))
