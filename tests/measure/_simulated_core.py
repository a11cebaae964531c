"""A simulated host for the core probe's logic: register-only work timed alone and beside a
register-only spinner on the other CPU, in a core-sharing state the test sets.

- On one core's threads, the spinner slows the work by `effect` (issue 24 saw 1.6x on a
  compute-bound matmul); on separate cores, not at all: register-only work shares nothing.
- The isolated half leaves the other CPU to the host: with probability `sibling_tenant`
  another tenant runs there, which on a shared core slows the isolated half as the spinner
  would (the reason the probe can miss sharing under load, never invent it).
- Noise: every walk is off by a log-normal factor of spread `sigma`, and with probability
  `hit` something else (an interrupt, a frequency step) slows it 1.2-2x.

`state` is a function of the simulated time (one tick per walk), so a test can switch the
state between probes, inside a block or in the middle of a probe.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from _state_checks import shuffled_pair

from intercore.measure.harness import paired as harness
from intercore.base.sample import INT

SHARED, SEPARATE = True, False
WORK_NS = 500_000.0


@dataclass
class SimulatedCore:
    state: Callable[[int], bool]
    seed: int = 1
    sigma: float = 0.02
    hit: float = 0.0
    sibling_tenant: float = 0.0
    effect: tuple[float, float] = (1.3, 1.8)
    rng: random.Random = field(init=False)
    tick: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def walk(self, condition: str) -> float:
        self.tick += 1
        shared = self.state(self.tick)
        beside = condition == INT or self.rng.random() < self.sibling_tenant
        t = WORK_NS * (self.rng.uniform(*self.effect) if shared and beside else 1.0)
        t *= self.rng.lognormvariate(0.0, self.sigma)
        if self.rng.random() < self.hit:
            t *= self.rng.uniform(1.2, 2.0)
        return t

    def pair(self) -> tuple[float, float]:
        return shuffled_pair(self.rng, lambda c: harness.fastest_after_first(
            lambda: self.walk(c), harness.CORE_WALKS))

    def probe(self, plan: harness.CorePlan) -> harness.Probe:
        """A probe with the running core probe's own logic."""
        start = self.tick
        ratios, iso = harness.take_probe(self.pair, plan.pairs, plan.max_pairs,
                                         harness.CORE_RULE)
        return harness.Probe(self.tick, harness.classify_probe(ratios, harness.CORE_RULE),
                             tuple(ratios), start, tuple(iso))
