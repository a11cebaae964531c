"""From a trace to what the models read.

A region becomes a short sequence: one token per static instruction, ordered by address, each
carrying its instruction type (mnemonic + operand signature, a vocabulary id) and a vector
of dynamic statistics (share of the region's executions, accesses per execution, which cache
level served them, stride and reuse-distance buckets relative to the modelled caches, L2
accesses). The region itself adds a vector of totals, which is also all the baselines see.

Why one token per static instruction rather than windows of the dynamic trace: a region's
dynamic trace is 10^5-10^8 instructions, its static code tens to hundreds, and the loop
structure repeats; the summary keeps every access's statistics while a window keeps a sliver.
docs/learn.md has the measured comparison (`learn train --tokens window`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .hierarchy import Hierarchy
from .tracer import REUSE_COLD, STRIDE_ZERO, InsnStats, RegionStats

MAX_TOKENS = 64          # static instructions kept per region, by executions
MAX_LEVELS = 4           # cache levels a feature vector has room for
SPECIAL = ("<pad>", "<unk>", "<region>", "<rest>", "<mark>")
PAD, UNK, REGION, REST, MARK = range(len(SPECIAL))


@dataclass(frozen=True)
class Token:
    """One static instruction of a region with its dynamic statistics (raw counts)."""

    pc: int  # link-time address in its object
    kind: str  # mnemonic:signature, "<mark>" for a marker, "<rest>" for folded tail
    execs: int
    loads: int
    stores: int
    bytes: int
    regular: int
    served: tuple[int, ...]
    stride: tuple[int, ...]
    reuse: tuple[int, ...]
    vector: bool = False
    branch: bool = False
    source: str | None = None  # file:line
    function: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("served", "stride", "reuse"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Token:
        return cls(**{**d, "served": tuple(d["served"]), "stride": tuple(d["stride"]),
                      "reuse": tuple(d["reuse"])})


@dataclass(frozen=True)
class RegionFeatures:
    """A region as stored in a dataset: totals and tokens, all raw counts."""

    region: int
    name: str
    entries: int  # counted entries (the statistics cover these)
    insns: int
    loads: int
    stores: int
    bytes: int
    footprint_lines: int
    served: tuple[int, ...]
    reuse: tuple[int, ...]
    tokens: tuple[Token, ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def l2_accesses(self) -> int:
        return sum(self.served[1:])

    def to_dict(self) -> dict[str, Any]:
        return {"region": self.region, "name": self.name, "entries": self.entries,
                "insns": self.insns, "loads": self.loads, "stores": self.stores,
                "bytes": self.bytes, "footprint_lines": self.footprint_lines,
                "served": list(self.served), "reuse": list(self.reuse),
                "tokens": [t.to_dict() for t in self.tokens], "extra": self.extra}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RegionFeatures:
        return cls(d["region"], d["name"], d["entries"], d["insns"], d["loads"], d["stores"],
                   d["bytes"], d["footprint_lines"], tuple(d["served"]), tuple(d["reuse"]),
                   tuple(Token.from_dict(t) for t in d["tokens"]), d.get("extra", {}))


# --- from a trace ----------------------------------------------------------------------------

def _fold(tokens: Sequence[Token]) -> Token:
    """Instructions beyond MAX_TOKENS, summed into one <rest> token."""
    def add(attr):
        return tuple(int(x) for x in np.sum([getattr(t, attr) for t in tokens], axis=0))
    return Token(tokens[0].pc, SPECIAL[REST], sum(t.execs for t in tokens),
                 sum(t.loads for t in tokens), sum(t.stores for t in tokens),
                 sum(t.bytes for t in tokens), sum(t.regular for t in tokens), add("served"),
                 add("stride"), add("reuse"))


def region_tokens(insns: Iterable[InsnStats], resolve) -> tuple[Token, ...]:
    """Tokens of one region's instructions. `resolve(pc)` gives (link-time address,
    StaticInsn or None, source or None, function or None, is_marker)."""
    out = []
    for x in insns:
        addr, static, source, function, marker = resolve(x.pc)
        kind = SPECIAL[MARK] if marker else static.token if static else SPECIAL[UNK]
        vector = bool(static and any(c in static.signature for c in "XYZ"))
        branch = bool(static and ("jump" in static.groups or "call" in static.groups
                                  or "ret" in static.groups))
        out.append(Token(addr, kind, x.execs, x.loads, x.stores, x.bytes, x.regular,
                         x.served, x.stride, x.reuse, vector, branch, source, function))
    out.sort(key=lambda t: -t.execs)
    kept, rest = out[:MAX_TOKENS], out[MAX_TOKENS:]
    kept.sort(key=lambda t: t.pc)
    return tuple(kept + ([_fold(rest)] if rest else []))


def region_features(stats: RegionStats, name: str, tokens: tuple[Token, ...]) -> RegionFeatures:
    return RegionFeatures(stats.region, name, stats.counted_entries, stats.insns, stats.loads,
                          stats.stores, stats.bytes, stats.footprint_lines, stats.served,
                          stats.reuse, tokens)


# --- to numbers ------------------------------------------------------------------------------

def _log(x: float) -> float:
    return math.log1p(max(x, 0.0))


def _served(served: Sequence[int], accesses: int) -> list[float]:
    """Share of line accesses served per level, padded to MAX_LEVELS + memory."""
    levels, mem = list(served[:-1]), served[-1]
    levels = (levels + [0] * MAX_LEVELS)[:MAX_LEVELS]
    return [v / accesses if accesses else 0.0 for v in levels + [mem]]


def _reuse_by_level(reuse: Sequence[int], hierarchy: Hierarchy) -> list[float]:
    """Reuse-distance shares: within each level's capacity (as a fully associative LRU of its
    size would hit), beyond the last, and first touches."""
    total = sum(reuse)
    if not total:
        return [0.0] * (MAX_LEVELS + 2)
    bounds = [math.log2(max(lv.size // hierarchy.line, 1)) for lv in hierarchy.levels]
    shares = [0.0] * (MAX_LEVELS + 2)
    for b, count in enumerate(reuse):
        if not count:
            continue
        if b == REUSE_COLD:
            shares[-1] += count
            continue
        # bucket b holds distances below 2^b lines
        level = next((i for i, lim in enumerate(bounds) if b <= lim), len(bounds))
        shares[min(level, MAX_LEVELS)] += count
    return [s / total for s in shares]


_STRIDE_EDGES = (1, 4, 7, 10, 13)  # |stride| buckets: 1-8 B, 9-64, 65-512, 513-4096, larger


def _stride(stride: Sequence[float] | np.ndarray) -> list[float]:
    total = sum(stride)
    if not total:
        return [0.0] * 7
    mags = [0.0] * 6
    negative = 0.0
    for i, count in enumerate(stride):
        if not count:
            continue
        off = i - STRIDE_ZERO
        if off < 0:
            negative += count
        b = abs(off)
        mags[0 if b == 0 else 1 + sum(b > e for e in _STRIDE_EDGES[1:])] += count
    return [m / total for m in mags] + [negative / total]


def beyond_private(r: RegionFeatures, hierarchy: Hierarchy) -> float:
    """Accesses per instruction whose reuse distance exceeds the private caches (every level
    but the last, which the cores share), first touches included: the accesses that reach
    the shared cache an aggressor contends for."""
    private = max(len(hierarchy.levels) - 1, 1)
    shares = _reuse_by_level(r.reuse, hierarchy)
    return sum(shares[private:]) * sum(r.served) / max(r.insns, 1)


TOKEN_DIM = 1 + 3 + 1 + (MAX_LEVELS + 1) + 3 + (MAX_LEVELS + 2) + 7 + 1 + 2


def token_vector(t: Token, region: RegionFeatures, hierarchy: Hierarchy) -> np.ndarray:
    entries = max(region.entries, 1)
    accesses = sum(t.served)
    l2 = sum(t.served[1:])
    per_exec = 1 / t.execs if t.execs else 0.0
    v = [
        t.execs / region.insns if region.insns else 0.0,
        t.loads * per_exec, t.stores * per_exec, (t.bytes / max(t.loads + t.stores, 1)) / 64,
        _log(t.execs / entries) / 20,
        *_served(t.served, accesses),
        _log(l2 / entries) / 20, l2 / max(region.l2_accesses, 1),
        sum(t.served[2:]) / max(sum(region.served[2:]), 1),
        *_reuse_by_level(t.reuse, hierarchy),
        *_stride(t.stride),
        t.regular / accesses if accesses else 0.0,
        float(t.vector), float(t.branch),
    ]
    return np.asarray(v, dtype=np.float32)


REGION_NAMES = (
    ["log_insns", "log_accesses", "loads_per_insn", "stores_per_insn", "bytes_per_access"]
    + [f"served_{i}" for i in range(MAX_LEVELS + 1)]
    + [f"per_kinsn_{i}" for i in range(MAX_LEVELS + 1)]
    + ["log_l2", "l2_per_kinsn", "log_footprint"]
    + [f"footprint_over_{i}" for i in range(MAX_LEVELS)]
    + [f"reuse_{i}" for i in range(MAX_LEVELS + 2)]
    + [f"stride_{i}" for i in range(7)] + ["regular", "vector_share", "tokens"])
REGION_DIM = len(REGION_NAMES)


def region_vector(r: RegionFeatures, hierarchy: Hierarchy) -> np.ndarray:
    """Totals of a region, scaled to about [0, 1]: the region token's features, and the input
    of the random-forest and quantile baselines."""
    entries = max(r.entries, 1)
    insns = max(r.insns, 1)
    accesses = sum(r.served)
    l2 = r.l2_accesses
    stride = np.zeros(33)
    regular = 0
    vector = 0
    for t in r.tokens:
        stride += t.stride
        regular += t.regular
        vector += t.execs if t.vector else 0
    footprint = r.footprint_lines / entries
    levels = [lv.size // hierarchy.line for lv in hierarchy.levels]
    v = [
        _log(r.insns / entries) / 20, _log(accesses / entries) / 20, r.loads / insns,
        r.stores / insns, (r.bytes / max(r.loads + r.stores, 1)) / 64,
        *_served(r.served, accesses),
        *[_log(1000 * s / insns) / 7 for s in (list(r.served[:-1]) + [0] * MAX_LEVELS)
          [:MAX_LEVELS] + [r.served[-1]]],
        _log(l2 / entries) / 20, _log(1000 * l2 / insns) / 7, _log(footprint) / 20,
        *[min(footprint / lv, 16.0) / 16 if lv else 0.0 for lv in
          (levels + [0] * MAX_LEVELS)[:MAX_LEVELS]],
        *_reuse_by_level(r.reuse, hierarchy),
        *_stride(stride),
        regular / accesses if accesses else 0.0, vector / insns,
        len(r.tokens) / (MAX_TOKENS + 1),
    ]
    return np.asarray(v, dtype=np.float32)


def window_vector(level: int, stride: int) -> np.ndarray:
    """A dynamic instruction of a sampled window in the token vector's layout: which level
    served its access (one-hot in the served slots) and its stride bucket."""
    v = np.zeros(TOKEN_DIM, np.float32)
    if level >= 0:
        v[5 + min(level, MAX_LEVELS)] = 1.0  # the served slots follow 5 leading statistics
        b = abs(stride)
        v[19 + (0 if b == 0 else 1 + sum(b > e for e in _STRIDE_EDGES[1:]))] = 1.0
        v[25] = float(stride < 0)
    return v


def l2_map(r: RegionFeatures) -> np.ndarray:
    """L2 accesses per token (the alignment target), region token first (0)."""
    return np.asarray([0.0] + [float(sum(t.served[1:])) for t in r.tokens], dtype=np.float32)
