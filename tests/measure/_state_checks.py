"""Checks a probe between blocks must pass on a simulated host whose state changes: the cache
canary (_simulated_cache.py) and the core probe (_simulated_core.py) alike. A host here has
`tick` (its simulated time, one tick per walk) and `probe(plan)`."""

from __future__ import annotations

from typing import Callable

from intercore.measure.harness import paired as harness
from intercore.base.sample import INT, ISO

State = Callable[[int], bool]


def change_inside_block(make_host: Callable[[State, int], object], plan, trials: int = 200
                        ) -> tuple[int, int]:
    """(unknown, decided) over `trials` blocks during which the host changed state once."""
    unknown = decided = 0
    for trial in range(trials):
        first = trial % 2 == 0
        flip_at: list[int] = []
        host = make_host(lambda tick, first=first, flip_at=flip_at:
                         first if not flip_at or tick < flip_at[0] else not first, trial)
        before = host.probe(plan)
        flip_at.append(host.tick + 1)  # the host changes during the block
        after = host.probe(plan)
        got = harness.block_regime(before, after)
        unknown += got == harness.UNKNOWN
        decided += got != harness.UNKNOWN
    return unknown, decided


def follow_random_flips(host, state: State, plan, block_ticks: int, until: int,
                        expected: dict[bool, str], opposite: dict[bool, str]
                        ) -> tuple[int, int, int]:
    """(right, steady, flipped): blocks of `block_ticks` between probes until tick `until`; a
    block whose probes and itself lay in one state (steady) must never get the opposite
    state, and counts as right when it gets its own. (A state that comes and goes between
    two probes is not seen: no probe between blocks can.)"""
    probes = [host.probe(plan)]
    right = steady = flipped = 0
    while host.tick < until:
        host.tick += block_ticks  # the measured block
        probes.append(host.probe(plan))
        before, after = probes[-2], probes[-1]
        got = harness.block_regime(before, after)
        span = {state(t) for t in range(before.start_ns, after.at_ns + 1)}
        if len(span) == 1:
            held = span.pop()
            steady += 1
            right += got == expected[held]
            assert got != opposite[held], (before, after)
        else:
            flipped += 1
    return right, steady, flipped


def shuffled_pair(rng, half: Callable[[str], float]) -> tuple[float, float]:
    """One pair as the running probes take it: its halves in a random order; (iso, int)."""
    conditions = [ISO, INT]
    rng.shuffle(conditions)
    times = {c: half(c) for c in conditions}
    return times[ISO], times[INT]
