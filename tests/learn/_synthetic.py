"""Synthetic regions and labels with a planted rule, for the learning tests."""

from __future__ import annotations

import random

from intercore.learn.dataset import Example, Label
from intercore.learn.features import RegionFeatures, Token
from intercore.learn.hierarchy import parse

HIER = parse("48K:12,1M:16,32M:16")
KINDS = ("mov:R,M8", "add:R,R", "imul:R,R", "cmp:R,I", "jne:I", "vmovupd:Y,M32", "add:M8,R")


def region(rng: random.Random, rid: int, mem_share: float, hot: int | None = None
           ) -> RegionFeatures:
    """A region whose accesses reach memory with probability mem_share; with `hot`, token
    `hot` makes every L2 access."""
    tokens = []
    n = rng.randint(6, 14)
    for j in range(n):
        execs = rng.randint(1000, 5000)
        accesses = execs if j % 2 == 0 else 0
        far = int(accesses * mem_share) if hot is None or j == hot else 0
        if hot is not None and j == hot:
            far = accesses
        served = (accesses - far, 0, 0, far)
        stride = [0] * 33
        stride[16 + 3] = max(accesses - 1, 0)
        reuse = [0] * 27
        reuse[2] = accesses - far
        reuse[26] = far
        tokens.append(Token(0x1000 + 4 * j, rng.choice(KINDS), execs, accesses, 0,
                            8 * accesses, max(accesses - 2, 0), served, tuple(stride),
                            tuple(reuse)))
    served = tuple(sum(t.served[i] for t in tokens) for i in range(4))
    reuse = tuple(sum(t.reuse[i] for t in tokens) for i in range(27))
    return RegionFeatures(rid, f"r{rid}", 1, sum(t.execs for t in tokens),
                          sum(t.loads for t in tokens), 0, sum(t.bytes for t in tokens),
                          served[3] + 10, served, reuse, tuple(tokens))


def examples(n_programs: int, seed: int, families=("a", "b", "c"), hot=False) -> list[Example]:
    """Planted rule: Δ = 1 + 2 x (share of accesses served by memory), Δ_safe 5 % above."""
    rng = random.Random(seed)
    out = []
    for p in range(n_programs):
        fam = families[p % len(families)]
        for rid in range(1, rng.randint(2, 5)):
            share = rng.random() ** 2
            r = region(rng, rid, share, hot=rng.randrange(0, 6, 2) if hot else None)
            acc = sum(r.served)
            d = 1 + 2 * r.served[-1] / acc
            out.append(Example(f"{fam}-{p}", fam, "O2", r,
                               Label(30, d, (d * 0.98, d * 1.02), d * 1.05, 1e6, "shared",
                                     {"shared": 30})))
    return out
