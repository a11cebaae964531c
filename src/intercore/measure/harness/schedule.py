"""The pair schedule: which aggressor set the victim meets at each repetition, and in what order.

One definition serves every executor: the local harness walks it, and the ssh executor sends
the same sequence to its board's driver as data, so a run measures in the same order wherever
it runs.

Sets are interleaved in *blocks*: a round gives every active set one block of `block_pairs`
pairs, the sets in a shuffled order; inside a pair the isolated and the interfered repetition
come in a random order. A host whose cache sharing comes and goes (a VM the hypervisor moves
every few tens of seconds) therefore lands on every set alike, instead of on whichever set
happened to run while it lasted. Everything is drawn from one seeded generator, so the order
is reproducible from (seed, block size, the sets still active at each round).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterator, Sequence, TypeVar

from ...base.sample import INT, ISO, Condition

# Block sizing (choose_block_pairs). A set switch (parking one set, unparking the next)
# should cost at most this share of the block it precedes, and the canary probe between
# blocks at most PROBE_SHARE: issue 24 allows the probes 5 % of a measurement. The first
# probe, timed for this, is a poor guess of the rest: the probes of a run averaged 0.8x to
# 2.3x it here (later probes meet cold chases and noisy pairs that take more walks), and a
# quiet host's short pairs then put the probes at 6.8 % of the measurement. So the size is
# only the first round's: every later round is sized again from what the rounds so far
# cost (resized_block_pairs), and the margin below 5 % covers the first round's error.
SWITCH_SHARE = 0.2
PROBE_SHARE = 0.03
# ... but a block must stay short next to the host's regime changes (tens of seconds here,
# research/stressors.md), or a block would again see one regime only.
BLOCK_MAX_NS = 4_000_000_000
# ... and every set gets at least this many blocks, so each meets several points in time.
MIN_BLOCKS = 4


T = TypeVar("T")


def shuffled_rounds(items: Sequence[T], rounds: int, seed: int) -> Iterator[tuple[int, T]]:
    """(round, item): every item once per round (numbered from 0), in an order shuffled
    afresh each round from one generator seeded with `seed`. Things compared are so measured
    interleaved in time, and slow drift (thermal state, other tenants) cannot line up with one
    of them (Google Benchmark's random interleaving, asv's rounds). Every round-robin of
    intercore draws its order here, so the same seed gives the same order everywhere."""
    rng = random.Random(seed)
    for r in range(rounds):
        order = list(items)
        rng.shuffle(order)
        for item in order:
            yield r, item


@dataclass(frozen=True)
class Rep:
    """One repetition of the victim: of pair `pair` (numbered across sets, so an iso sample
    is never shared by two sets), under set `set_index`, in block `block`."""

    set_index: int
    pair: int
    condition: Condition
    block: int


@dataclass(frozen=True)
class Block:
    index: int
    round: int
    set_index: int
    reps: tuple[Rep, ...]

    @property
    def pairs(self) -> int:
        return len(self.reps) // 2


class Rotation:
    """Rounds of blocks, drawn one round at a time so a caller may drop sets between rounds
    (adaptive stopping) or size the next round's blocks again (`block_pairs`), and still get
    an order that depends only on the seed and on what it dropped and resized."""

    def __init__(self, n_sets: int, block_pairs: int, seed: int) -> None:
        if n_sets < 1:
            raise ValueError("a schedule needs at least one aggressor set")
        if block_pairs < 1:
            raise ValueError(f"block_pairs must be at least 1, got {block_pairs}")
        self.n_sets = n_sets
        self.block_pairs = block_pairs
        self._rng = random.Random(seed)
        self._round = 0
        self._block = 0
        self._pair = 0

    @property
    def rounds_drawn(self) -> int:
        return self._round

    def round(self, remaining: dict[int, int]) -> list[Block]:
        """The next round for the sets in `remaining` (set index -> pairs it still needs);
        a set gets min(block_pairs, remaining) pairs. Sets are visited in a shuffled order."""
        order = sorted(i for i, left in remaining.items() if left > 0)
        self._rng.shuffle(order)
        blocks = []
        for s in order:
            reps = []
            for _ in range(min(self.block_pairs, remaining[s])):
                conds: list[Condition] = [ISO, INT]
                self._rng.shuffle(conds)
                reps += [Rep(s, self._pair, c, self._block) for c in conds]
                self._pair += 1
            blocks.append(Block(self._block, self._round, s, tuple(reps)))
            self._block += 1
        self._round += 1
        return blocks


def blocks(n_sets: int, pairs: int | Sequence[int], block_pairs: int, seed: int
           ) -> Iterator[Block]:
    """Every set gets exactly `pairs` pairs, or pairs[s] for set s (the last block of a set
    may be shorter)."""
    counts = [pairs] * n_sets if isinstance(pairs, int) else list(pairs)
    if len(counts) != n_sets:
        raise ValueError(f"{len(counts)} pair counts for {n_sets} sets")
    rotation = Rotation(n_sets, block_pairs, seed)
    remaining = dict(enumerate(counts))
    while any(remaining.values()):
        for block in rotation.round(remaining):
            remaining[block.set_index] -= block.pairs
            yield block


def repetitions(n_sets: int, pairs: int | Sequence[int], block_pairs: int, seed: int
                ) -> list[Rep]:
    """The whole fixed-length schedule, one entry per victim repetition, in order."""
    return [rep for block in blocks(n_sets, pairs, block_pairs, seed) for rep in block.reps]


@dataclass(frozen=True)
class BlockSize:
    pairs: int
    reason: str

    def to_dict(self) -> dict:
        return {"pairs": self.pairs, "reason": self.reason}


def uncalibrated_block_pairs(pairs: int) -> BlockSize:
    """Pairs per block where no switch cost can be measured beforehand (a remote board):
    every set gets MIN_BLOCKS blocks."""
    chosen = max(1, math.ceil(pairs / MIN_BLOCKS))
    return BlockSize(chosen, f"not calibrated: every set gets at least {MIN_BLOCKS} blocks")


def choose_block_pairs(switch_ns: float, pair_ns: float, pairs: int, probe_ns: float = 0.0
                       ) -> BlockSize:
    """Pairs per block from the measured cost of a set switch, of the probes between
    blocks (0: none) and of one pair: the smallest block that keeps the switch within
    SWITCH_SHARE and the probe within PROBE_SHARE of it, no longer than BLOCK_MAX_NS, and
    small enough that every set gets MIN_BLOCKS blocks."""
    pair_ns = max(pair_ns, 1.0)
    by_cost = max(1, math.ceil(switch_ns / (SWITCH_SHARE * pair_ns)),
                  math.ceil(probe_ns / (PROBE_SHARE * pair_ns)))
    by_time = max(1, int(BLOCK_MAX_NS // pair_ns))
    by_count = max(1, math.ceil(pairs / MIN_BLOCKS))
    chosen = max(1, min(by_cost, by_time, by_count))
    probe = f", the probes between blocks {probe_ns / 1e6:.1f} ms" if probe_ns else ""
    why = (f"a set switch costs {switch_ns / 1e6:.1f} ms{probe} and a pair "
           f"{pair_ns / 1e6:.1f} ms: {by_cost} pair(s) keep switching within "
           f"{SWITCH_SHARE:.0%}" + (f" and probing within {PROBE_SHARE:.0%}" if probe_ns else "")
           + " of a block")
    if chosen < by_cost:
        limit = (f"a block lasts at most {BLOCK_MAX_NS / 1e9:g} s" if chosen == by_time
                 else f"every set gets at least {MIN_BLOCKS} blocks")
        why += f", capped at {chosen} ({limit})"
    return BlockSize(chosen, why)


def resized_block_pairs(first: BlockSize, switch_ns: float, pair_ns: float, pairs: int,
                        probe_ns: float, rounds: int) -> BlockSize:
    """The block size for the rounds after the first `rounds`, from what they cost: the mean
    pair (`pair_ns`, both halves as measured) and the mean of the probes between blocks
    (`probe_ns`); `first` is the calibration's size, returned where the costs choose it too."""
    again = choose_block_pairs(switch_ns, pair_ns, pairs, probe_ns)
    if again.pairs == first.pairs:
        return first
    return BlockSize(again.pairs, f"{again.reason}; sized so after round {rounds} from the "
                                  f"costs measured so far (the first probe alone chose "
                                  f"{first.pairs})")
