"""The configuration-space generators of paper 001 (SP-IMPact) §3: pure functions, no I/O.

- `engine_space`: the contention engine's variants G = M × L × W × O, equation (1);
- `colour_assignments`: N contiguous, non-overlapping colour masks over S colours from every
  (N−1)-combination of boundary bits, equations (2)–(3), deduplicated, with an exclusion rule;
- `bandwidth_space`: every (budget, period) pair per guest, equation (4), combined over guests.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

OPERATIONS = ("read", "write", "rw")  # O of equation (1); "rw" is the paper's read/write


@dataclass(frozen=True)
class EngineVariant:
    """One element (m, l, w, o) of G_baremetal."""

    cpus: str        # a CPU configuration: "auto" or a CPU list such as "1-3"
    line: int | None  # bytes between accesses; None = the target's own cache-line size
    size: int         # workload (buffer) size in bytes
    op: str           # "read" | "write" | "rw"


def engine_space(cpus: Sequence[str], lines: Sequence[int | None], sizes: Sequence[int],
                 ops: Sequence[str]) -> tuple[EngineVariant, ...]:
    """Equation (1): every (m, l, w, o) in M × L × W × O, in that nesting order."""
    return tuple(EngineVariant(m, ln, w, o) for m, ln, w, o in itertools.product(cpus, lines,
                                                                                sizes, ops))


def span_mask(start: int, end: int) -> int:
    """Equation (3): M_i = ((1 << (e_i − s_i)) − 1) << s_i, the bits start..end−1."""
    return ((1 << (end - start)) - 1) << start


def colour_assignments(colours: int, guests: int) -> tuple[tuple[int, ...], ...]:
    """Equations (2)–(3): one mask per guest for each (N−1)-combination of boundary bits.

    With boundaries 0 ≤ b_1 < … < b_{N−1} < S, guest i gets the bits s_i..e_i−1 where s_0 = 0,
    e_i = b_{i+1} (the paper's b_i, 1-based) and e_{N−1} = S. Guest 0 gets no bit when b_1 = 0;
    every later guest gets at least one. Assignments are kept in generation order, duplicates
    dropped (the paper's `colors_assignments` set).
    """
    if colours < 1:
        raise ValueError(f"the number of colours S must be >= 1 (got {colours})")
    if not 1 <= guests <= colours:
        raise ValueError(f"the number of guests N must be in 1..S={colours} (got {guests})")
    seen: dict[tuple[int, ...], None] = {}
    for bounds in itertools.combinations(range(colours), guests - 1):
        ends = (*bounds, colours)
        starts = (0, *bounds)
        seen.setdefault(tuple(span_mask(s, e) for s, e in zip(starts, ends)), None)
    return tuple(seen)


def colour_count(mask: int, colours: int) -> int:
    """Colours a guest may use: an empty mask means *all* of them, as in Bao (`all_clrs`)."""
    return colours if mask == 0 else mask.bit_count()


def is_uncoloured(mask: int, colours: int) -> bool:
    """Bao's `all_clrs`: a zero mask and a full mask both leave the guest uncoloured."""
    return mask == 0 or mask == (1 << colours) - 1


def exclude_by_min_colours(assignments: Iterable[tuple[int, ...]], colours: int,
                           min_colours: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The exclusion rule: drop assignments giving guest i fewer than min_colours[i] colours.

    Paper 001 §4.1 excludes the critical guest getting a single colour: min_colours 2 for it.
    """
    return tuple(a for a in assignments
                 if all(colour_count(m, colours) >= need for m, need in zip(a, min_colours)))


def bandwidth_space(per_guest: Mapping[str, tuple[Sequence[int], Sequence[int]]]
                    ) -> tuple[dict[str, tuple[int, int]], ...]:
    """Equation (4) for every guest, MBR_g = B_g × P_g, combined across guests.

    `per_guest` maps a guest to (budgets, periods); each result maps every guest to one
    (budget, period) pair. O(G × B × P) pairs, their product over guests as configurations.
    """
    guests = list(per_guest)
    choices = [list(itertools.product(*per_guest[g])) for g in guests]
    return tuple(dict(zip(guests, combo)) for combo in itertools.product(*choices))
