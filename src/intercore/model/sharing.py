"""What two pinned tasks can share, by the platform model: the interference channels between
the host CPUs they run on, from the calculus's relation (the services on which a transaction
of one CPU's initiator and a transaction of the other's meet).

A task set names host CPUs, a model names initiators with `cpu:`; the link is that attribute.
Two tasks on one CPU also share its time, which the model does not describe (it models
the memory system) and no freezer of the other task can be ruled out for: that is a channel.
An empty answer is the model's claim that the pair is interference-free, which a plan may
only act on once a measurement has checked it (see mitigate/plan/region_matrix.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .calculus import Problem, build
from .platform import Platform


@dataclass(frozen=True)
class Sharing:
    """The channels the model finds between two CPUs; `unknown` says why it cannot tell."""

    channels: tuple[str, ...] = ()
    unknown: str | None = None

    @property
    def free(self) -> bool:
        return self.unknown is None and not self.channels


class CpuChannels:
    """The model's relation, asked per pair of host CPUs."""

    def __init__(self, platform: Platform, problem: Problem | None = None):
        self.platform = platform
        self.problem = build(platform) if problem is None else problem

    def _transactions(self, cpu: int) -> list[int]:
        initiators = {c.name for c in self.platform.components.values()
                      if c.kind == "initiator" and c.cpu == cpu}
        return [i for i, who in enumerate(self.problem.initiators) if who in initiators]

    def between(self, a: int | None, b: int | None) -> Sharing:
        """The channels between a task on CPU `a` and one on CPU `b` (None: not pinned)."""
        if a is None or b is None:
            return Sharing(unknown="a task is not pinned to a CPU, so the model cannot say "
                                   "which initiator runs it")
        mine, theirs = self._transactions(a), self._transactions(b)
        for cpu, txs in ((a, mine), (b, theirs)):
            if not txs:
                return Sharing(unknown=f"no initiator of {self.platform.name} with "
                                       f"transactions names host CPU {cpu} (cpu: {cpu})")
        mask = 0
        for x in mine:
            for y in theirs:
                if self.problem.interferes(x, y) or self.problem.interferes(y, x):
                    mask |= self.problem.pair_channel(x, y)
        channels = self.problem.names(mask, self.problem.services)
        return Sharing(channels=((f"cpu{a} time",) if a == b else ()) + channels)
