"""ic-trace-stats' cache model and reuse distances against reference simulations written
independently here (an OrderedDict per set; a naive LRU stack)."""

from __future__ import annotations

import json
import random
import struct
import subprocess
from collections import OrderedDict

from intercore.base.native import tool

LINE = 64
LEVELS = [(1024, 2), (4096, 4), (16384, 8)]  # small, so a short stream evicts at every level


def _stream(addresses, sizes):
    recs = [struct.pack("<QQ", 0x1000, 5 | (1 << 8))]  # mark: begin region 1
    for a, s in zip(addresses, sizes):
        recs.append(struct.pack("<QQ", 0x400000, 1 | (4 << 8)))  # the instruction
        recs.append(struct.pack("<QQ", a, 2 | (s << 8)))        # its load
    recs.append(struct.pack("<QQ", 0x1008, 5 | (1 << 8) | (1 << 23)))
    recs.append(struct.pack("<QQ", 0, 6))
    return b"".join(recs)


def _stats(data: bytes) -> dict:
    cache = ",".join(f"{s}:{w}" for s, w in LEVELS)
    out = subprocess.run([str(tool("ic-trace-stats")), "--cache", cache, "--line", str(LINE)],
                         input=data, capture_output=True, check=True).stdout
    lines = [json.loads(x) for x in out.decode().splitlines()]
    return next(x for x in lines if x["event"] == "region")


def _reference_levels(lines):
    caches = [[OrderedDict() for _ in range(size // (ways * LINE))] for size, ways in LEVELS]
    served = [0] * (len(LEVELS) + 1)
    for line in lines:
        level = len(LEVELS)
        for i, ((_size, ways), sets) in enumerate(zip(LEVELS, caches)):
            s = sets[line % len(sets)]
            if line in s:
                s.move_to_end(line)
                level = i
                break
            s[line] = True
            if len(s) > ways:
                s.popitem(last=False)
        served[level] += 1
    return served


def _reference_reuse(lines):
    stack: list[int] = []
    buckets = [0] * 27
    for line in lines:
        if line in stack:
            d = len(stack) - 1 - stack.index(line)  # distinct lines touched since
            stack.remove(line)
            buckets[min(d.bit_length(), 25)] += 1
        else:
            buckets[26] += 1
        stack.append(line)
    return buckets


def test_cache_levels_and_reuse_match_the_references():
    rng = random.Random(7)
    addresses, sizes = [], []
    for _ in range(6000):  # a mix of a hot set, a strided sweep and random far accesses
        pick = rng.random()
        if pick < 0.5:
            addresses.append(0x10000 + 64 * rng.randrange(24))
        elif pick < 0.8:
            addresses.append(0x40000 + 64 * (len(addresses) % 300))
        else:
            addresses.append(0x100000 + 8 * rng.randrange(40000))
        sizes.append(rng.choice((4, 8)))
    # Two accesses that straddle a line boundary touch both lines.
    addresses += [0x10000 + 60, 0x40000 + 62]
    sizes += [8, 4]
    lines = []
    for a, s in zip(addresses, sizes):
        lines += range(a // LINE, (a + s - 1) // LINE + 1)
    got = _stats(_stream(addresses, sizes))
    assert got["served"] == _reference_levels(lines)
    assert got["reuse"] == _reference_reuse(lines)
    assert got["loads"] == len(addresses) and got["insns"] == len(addresses)


def test_a_truncated_stream_is_an_error():
    data = _stream([0x1000] * 10, [8] * 10)[:-16]  # no end record
    done = subprocess.run([str(tool("ic-trace-stats")), "--cache", "1K:2"], input=data,
                          capture_output=True)
    assert done.returncode == 1 and b"without its end record" in done.stderr


def test_an_impossible_geometry_is_a_usage_error():
    done = subprocess.run([str(tool("ic-trace-stats")), "--cache", "1000:3"], input=b"",
                          capture_output=True)
    assert done.returncode == 2 and b"--cache" in done.stderr
