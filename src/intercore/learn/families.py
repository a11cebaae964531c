"""The parametric kernel families of the dataset generator, and how one region of each is
shaped for a working-set size.

A region is (family, variant, element type, working set); its shape turns those into the
loop bounds of the family's C template (kernels/<family>.c.j2) and a number of passes, so
that every region does about TARGET_OPS inner iterations per repetition whatever its working
set: long enough to time, short enough to trace. A shape that would need more than one
pass's budget (a streaming sweep of 256 MiB) is refused and the generator draws again.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

TARGET_OPS = 300_000        # inner iterations per region and repetition
MAX_PASS_OPS = 2_000_000    # a single pass above this is too long to trace
RANDOM_HOPS = 250_000       # dependent random accesses per pass (DRAM-bound: ~25 ms)

# name -> (C type, bytes, floating point)
ELEMS: dict[str, tuple[str, int, bool]] = {
    "u32": ("uint32_t", 4, False),
    "u64": ("uint64_t", 8, False),
    "f32": ("float", 4, True),
    "f64": ("double", 8, True),
}

# Optimisation levels and vectorisation: name -> compiler flags.
OPT_LEVELS: dict[str, tuple[str, ...]] = {
    "O0": ("-O0",),
    "O1": ("-O1",),
    "O2": ("-O2",),
    "O3": ("-O3",),
    "O3-novec": ("-O3", "-fno-tree-vectorize"),
    "O3-avx2": ("-O3", "-mavx2", "-mfma"),
}

# Working sets are drawn as these multiples of each cache level's size (0.25x to 8x).
WS_MULTIPLES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)

Shape = dict[str, Any]


@dataclass(frozen=True)
class Family:
    name: str
    variants: tuple[str, ...]
    elems: tuple[str, ...]
    shape: Callable[[str, int, int, random.Random], Shape | None]
    summary: str


def _passes(ops: int) -> int:
    return max(1, round(TARGET_OPS / max(ops, 1)))


def _done(shape: Shape, ops: int, nbytes: int) -> Shape | None:
    if ops < 1 or ops > MAX_PASS_OPS:
        return None
    return {**shape, "ops": ops, "bytes": nbytes, "passes": _passes(ops)}


def _matmul(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    m = rng.choice((4, 8, 16, 32))
    k = ws // (esize * 2 * m)
    if k < 16:
        return None
    return _done({"n": m, "m": m, "k": k}, m * m * k, esize * (2 * m * k + m * m))


def _stencil(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    cells = ws // (2 * esize)
    if variant == "1d3":
        rows, cols = 1, cells
    else:
        cols = rng.choice((64, 256, 1024, 4096))
        rows = cells // cols
        if rows < 3:
            return None
    return _done({"rows": rows, "cols": cols}, rows * cols, 2 * esize * rows * cols)


def _transpose(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    n = math.isqrt(ws // (2 * esize))
    if n < 8:
        return None
    return _done({"n": n, "tile": rng.choice((8, 16, 32))}, n * n, 2 * esize * n * n)


def _reduction(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    n = ws // esize
    return _done({"n": n, "stride": rng.choice((2, 8, 16, 64))}, n, esize * n)


def _triad(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    n = ws // (3 * esize)
    stride = {"unit": 1, "strided": rng.choice((2, 4, 8, 16))}[variant]
    return _done({"n": n, "stride": stride}, n // stride, 3 * esize * n)


def _gather(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    order = rng.choice(("random", "local", "strided"))
    cap = MAX_PASS_OPS if order == "strided" else RANDOM_HOPS
    # x holds the working set; idx and y the `count` accesses of a pass.
    n = ws // (2 * esize + 4)
    count = min(n, cap)
    n = (ws - count * (esize + 4)) // esize
    step = rng.choice((17, 257, 4099))
    while math.gcd(step, n) != 1:  # i·step mod n visits every element once per n
        n -= 1
    if n < 16 or n >= 1 << 32:
        return None
    return _done({"n": n, "count": count, "order": order, "step": step,
                  "block": rng.choice((64, 512, 4096))}, count,
                 esize * n + (esize + 4) * count)


def _chase(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    node = rng.choice((8, 64))
    nodes = ws // node
    if nodes < 16:
        return None
    # Beyond RANDOM_HOPS a pass walks part of the cycle and the next pass goes on from there.
    hops = min(nodes, RANDOM_HOPS if variant != "sequential" else MAX_PASS_OPS)
    return _done({"node": node, "nodes": nodes, "hops": hops}, hops, node * nodes)


def _histogram(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    bins = max(16, ws // (2 * esize))
    n = min(max(1024, ws // 8), RANDOM_HOPS)
    return _done({"bins": bins, "n": n}, n, esize * bins + 4 * n)


def _sort(variant: str, esize: int, ws: int, rng: random.Random) -> Shape | None:
    arrays = 3 if variant == "merge" else 2
    n = ws // (arrays * esize)
    chunk = {"insertion": rng.choice((16, 64)), "shell": rng.choice((1024, 4096)),
             "merge": rng.choice((4096, 65536))}[variant]
    if n < 32:
        return None
    chunk = min(chunk, n)
    per = {"insertion": chunk / 4, "shell": 4 * math.log2(chunk),
           "merge": math.log2(chunk)}[variant]
    return _done({"n": n, "chunk": chunk}, int(n * per), arrays * esize * n)


_ALL = ("u32", "u64", "f32", "f64")
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("matmul", ("ijk", "ikj", "dot"), _ALL, _matmul,
           "C += A·B with N = M small and K long (paper 000's shape); loop order as variant"),
    Family("stencil", ("1d3", "2d5", "2d5c"), _ALL, _stencil,
           "3-point line and 5-point grid stencils, the grid swept by rows or by columns"),
    Family("transpose", ("naive", "tiled"), _ALL, _transpose,
           "out-of-place n×n transpose, naive or tiled"),
    Family("reduction", ("unit", "multi", "strided"), _ALL, _reduction,
           "array sums: one accumulator, four, or strided sweeps"),
    Family("triad", ("unit", "strided"), _ALL, _triad,
           "STREAM triad over every element or every k-th"),
    Family("gather", ("gather", "scatter"), _ALL, _gather,
           "indirect loads or stores through random, block-local or strided indices"),
    Family("chase", ("random", "sequential", "local"), ("u64",), _chase,
           "dependent loads through a linked cycle of 8 or 64 byte nodes"),
    Family("histogram", ("uniform", "skewed", "sorted"), _ALL, _histogram,
           "counting keys into bins: uniform, skewed or sorted keys"),
    Family("sort", ("insertion", "shell", "merge"), _ALL, _sort,
           "chunked insertion, Shell and bottom-up merge sorts of a copied array"),
)}
