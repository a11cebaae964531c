"""The parametric kernel families of the dataset generator, and how one region of each is
shaped for a working-set size.

A region is (family, variant, element type, working set); its shape turns those into the
loop bounds of the family's C template (kernels/<family>.c.j2) and a number of passes, so
that every region does about TARGET_OPS inner iterations per repetition whatever its working
set: long enough to time, short enough to trace.

Working sets beyond a pass's budget (MAX_PASS_OPS) are bounded, not swept whole: the
dependent (chase), random (gather, histogram) and streaming (triad) families walk a window of
the budget's size per pass, the next pass going on where the last stopped, so the traced work
of a DRAM-sized region is that of a window while its accesses still come from memory (no
window is touched again before the whole working set has been). The other families refuse
such a shape and the generator draws again.

The knobs that span the sensitive range (issue 22): working sets from a quarter of L1 to
MEMORY_MULTIPLE times the last level (programs.py draws the level first), access patterns
sequential and strided (triad, reduction), random (gather, histogram) and dependent (chase),
memory-level parallelism (a chase's independent `chains`), the read/write mix of a stream
(triad's `mix`) and its compute per element (triad's `work`, dependent arithmetic).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

TARGET_OPS = 300_000        # inner iterations per region and repetition
MAX_PASS_OPS = 2_000_000    # a single pass above this is too long to trace
RANDOM_HOPS = 250_000       # dependent random accesses per pass (DRAM-bound: ~25 ms)
MAX_NODES = 1 << 22         # nodes of a chase's cycle of 8-byte nodes (32 MiB)

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

# Working sets reach this multiple of the last cache level (DRAM-sized), at most
# MEMORY_BYTES, and a program's regions PROGRAM_BYTES together: allocating and filling
# 1 GiB took 10 s here, and a host reporting a 260 MiB L3 would otherwise draw programs of
# several GiB.
MEMORY_MULTIPLE = 4.0
MEMORY_BYTES = 512 << 20
PROGRAM_BYTES = 1 << 30
# A stream's read/write mix -> the arrays it touches: triad a = b + 3c, read s += b + 3c,
# write a = i, update a += 3b (a read-modify-write).
MIXES: dict[str, tuple[str, ...]] = {"triad": ("a", "b", "c"), "read": ("b", "c"),
                                     "write": ("a",), "update": ("a", "b")}
WORK = (0, 0, 2, 8, 32)     # dependent arithmetic operations per streamed element
CHAINS = (1, 1, 2, 4, 8)    # independent pointer chases in flight

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
    mix, work = rng.choice(list(MIXES)), rng.choice(WORK)
    arrays = len(MIXES[mix])
    n = ws // (arrays * esize)
    stride = {"unit": 1, "strided": rng.choice((2, 4, 8, 16))}[variant]
    span = min(n, MAX_PASS_OPS * stride)
    n -= n % span  # windows tile the arrays: each pass's window starts where the last ended
    if n < 16:
        return None
    return _done({"n": n, "stride": stride, "span": span, "mix": mix, "work": work},
                 span // stride, arrays * esize * n)


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
    # Linking the cycle costs a random access per node at start-up (most of a DRAM-sized
    # chase's run, and more under the tracer): beyond MAX_NODES the nodes are lines.
    node, chains = rng.choice((8, 64)) if ws // 8 <= MAX_NODES else 64, rng.choice(CHAINS)
    nodes = ws // node
    if nodes < 16 * chains:
        return None
    # Beyond RANDOM_HOPS a pass walks part of the cycle and the next pass goes on from there;
    # `chains` cursors start spread over the cycle and each walks hops / chains of them.
    hops = min(nodes, RANDOM_HOPS if variant != "sequential" else MAX_PASS_OPS)
    hops -= hops % chains
    return _done({"node": node, "nodes": nodes, "hops": hops, "chains": chains}, hops,
                 node * nodes)


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
           "STREAM-like sweeps over every element or every k-th: triad, read-only, write-only "
           "or update, with 0-32 dependent operations per element"),
    Family("gather", ("gather", "scatter"), _ALL, _gather,
           "indirect loads or stores through random, block-local or strided indices"),
    Family("chase", ("random", "sequential", "local"), ("u64",), _chase,
           "dependent loads through a linked cycle of 8 or 64 byte nodes, 1-8 chains at once"),
    Family("histogram", ("uniform", "skewed", "sorted"), _ALL, _histogram,
           "counting keys into bins: uniform, skewed or sorted keys"),
    Family("sort", ("insertion", "shell", "merge"), _ALL, _sort,
           "chunked insertion, Shell and bottom-up merge sorts of a copied array"),
)}
