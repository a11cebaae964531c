"""Regions as arrays: the vocabulary of instruction types and the fixed-shape batches every
model (transformer and baselines) is fed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .dataset import Example
from .features import (MAX_TOKENS, REGION, SPECIAL, TOKEN_DIM, UNK, RegionFeatures, l2_map,
                       region_vector, token_vector, window_vector)
from .hierarchy import Hierarchy

SEQ_LEN = MAX_TOKENS + 2  # the region token, the kept instructions, the folded rest
TOKENS = ("static", "window")  # one token per static instruction, or a sampled dynamic window


@dataclass(frozen=True)
class Vocab:
    """Instruction types seen at least `min_count` times in training; an unseen type falls
    back to its mnemonic alone, then to <unk>."""

    words: tuple[str, ...]

    @classmethod
    def build(cls, regions: Iterable[RegionFeatures], min_count: int = 2) -> Vocab:
        counts: Counter[str] = Counter()
        for r in regions:
            for t in r.tokens:
                counts[t.kind] += 1
                counts[t.kind.split(":")[0]] += 1
        words = [w for w, c in sorted(counts.items()) if c >= min_count and w not in SPECIAL]
        return cls(tuple(SPECIAL) + tuple(words))

    def __len__(self) -> int:
        return len(self.words)

    def index(self, kind: str) -> int:
        lookup = self._lookup
        if kind in lookup:
            return lookup[kind]
        return lookup.get(kind.split(":")[0], UNK)

    @property
    def _lookup(self) -> dict[str, int]:
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = {w: i for i, w in enumerate(self.words)}
            object.__setattr__(self, "_cache", cache)
        return cache


@dataclass
class Batch:
    ids: np.ndarray      # [N, L] int32
    feats: np.ndarray    # [N, L, TOKEN_DIM]
    region: np.ndarray   # [N, REGION_DIM]
    mask: np.ndarray     # [N, L] 1 for real positions
    l2: np.ndarray       # [N, L] L2 accesses per position (0 for the region token)
    y_med: np.ndarray    # [N] log delta (NaN when unlabelled)
    y_safe: np.ndarray   # [N] log delta_safe

    def __len__(self) -> int:
        return self.ids.shape[0]

    def take(self, idx: np.ndarray) -> Batch:
        return Batch(*(getattr(self, f)[idx] for f in
                       ("ids", "feats", "region", "mask", "l2", "y_med", "y_safe")))


def encode(regions: Sequence[RegionFeatures], vocab: Vocab, hierarchy: Hierarchy,
           labels: Sequence[tuple[float, float] | None] | None = None,
           tokens: str = "static") -> Batch:
    n = len(regions)
    ids = np.zeros((n, SEQ_LEN), np.int32)
    feats = np.zeros((n, SEQ_LEN, TOKEN_DIM), np.float32)
    region = np.stack([region_vector(r, hierarchy) for r in regions]) if n else \
        np.zeros((0, 0), np.float32)
    mask = np.zeros((n, SEQ_LEN), np.float32)
    l2 = np.zeros((n, SEQ_LEN), np.float32)
    y_med = np.full(n, np.nan, np.float32)
    y_safe = np.full(n, np.nan, np.float32)
    for i, r in enumerate(regions):
        ids[i, 0] = REGION
        mask[i, 0] = 1
        if tokens == "window":
            w = r.extra.get("window") or {"kind": [], "level": [], "stride": []}
            for j, (kind, level, stride) in enumerate(
                    zip(w["kind"][:SEQ_LEN - 1], w["level"], w["stride"]), start=1):
                ids[i, j] = vocab.index(kind)
                feats[i, j] = window_vector(level, stride)
                mask[i, j] = 1
                l2[i, j] = float(level >= 1)
        else:
            for j, t in enumerate(r.tokens[:SEQ_LEN - 1], start=1):
                ids[i, j] = vocab.index(t.kind)
                feats[i, j] = token_vector(t, r, hierarchy)
                mask[i, j] = 1
            m = l2_map(r)[:SEQ_LEN]
            l2[i, :len(m)] = m
        label = labels[i] if labels is not None else None
        if label is not None:
            y_med[i], y_safe[i] = np.log(label[0]), np.log(label[1])
    return Batch(ids, feats, region, mask, l2, y_med, y_safe)


def encode_examples(examples: Sequence[Example], vocab: Vocab, hierarchy: Hierarchy,
                    tokens: str = "static") -> Batch:
    return encode([e.region for e in examples], vocab, hierarchy,
                  [(e.label.delta, e.label.delta_safe) for e in examples], tokens)
