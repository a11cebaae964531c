"""The tracer against hand counts: records, strides and the split into regions."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

from intercore.learn import binary, hierarchy, tracer
from intercore.learn.extract import extract

from _learnkit import compile_c, needs_tracer

KERNEL = r"""
#include "ic_mark.h"
int a[4096];
long b[512];
int main(void) {
  long s = 0;
  IC_TRACE_BEGIN(1);
  for (int i = 0; i < 1024; i += 2)   /* 512 loads of 4 bytes, 8 bytes apart */
    s += ((volatile int *)a)[i];
  IC_TRACE_END(1);
  IC_TRACE_BEGIN(2);
  for (int i = 0; i < 512; i++)       /* 512 stores of 8 bytes, 8 bytes apart */
    ((volatile long *)b)[i] = s + i;
  IC_TRACE_END(2);
  return (int)(s & 1);
}
"""

SMALL = hierarchy.parse("1K:2,4K:4,16K:4")


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(KERNEL.splitlines(), 1) if text in ln)


def _records(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from("<QQ", data, i) for i in range(0, len(data), 16)]


@needs_tracer
def test_raw_records_match_a_hand_count(tmp_path):
    exe = compile_c(KERNEL, tmp_path)
    info = tracer.tracer_info()
    lib = tracer._valgrind_lib(info, tmp_path)
    out = tmp_path / "trace.bin"
    subprocess.run(["valgrind", "--quiet", "--tool=ictrace", f"--out={out}", str(exe)],
                   env={"VALGRIND_LIB": str(lib), "PATH": "/usr/bin:/bin"}, check=False)
    recs = _records(out)
    kinds = [b & 0xFF for _, b in recs]
    assert kinds[-1] == 6, "the stream ends with its end record"
    marks = [(i, a, (b >> 8) & 0x7FFF, (b >> 23) & 1) for i, (a, b) in enumerate(recs)
             if b & 0xFF == 5]
    assert [(m[2], m[3]) for m in marks] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    static = sorted(m.address for m in binary.Binary(exe).markers)
    bias = marks[0][1] - static[0]  # the executable is position-independent
    assert sorted(m[1] - bias for m in marks) == static, "marks carry the markers' addresses"
    first = recs[marks[0][0]:marks[1][0]]
    second = recs[marks[2][0]:marks[3][0]]
    loads = [a for a, b in first if b & 0xFF == 2]
    stores = [(a, b >> 8) for a, b in second if b & 0xFF == 3]
    assert len(loads) == 512 and not [1 for _, b in first if b & 0xFF == 3]
    assert {b - a for a, b in zip(loads, loads[1:])} == {8}
    assert len(stores) == 512 and {s for _, s in stores} == {8}
    assert {b[0] - a[0] for a, b in zip(stores, stores[1:])} == {8}
    # Nothing outside the regions is recorded: the stream is marks, their contents and the end.
    assert marks[0][0] == 0 and marks[1][0] + 1 == marks[2][0] and marks[3][0] + 2 == len(recs)


@needs_tracer
def test_statistics_per_region_and_instruction(tmp_path):
    exe = compile_c(KERNEL, tmp_path)
    regions, t = extract([str(exe)], SMALL)
    by = {r.region: r for r in regions}
    assert set(by) == {1, 2} and t.exit_code == 0
    r1, r2 = by[1], by[2]
    assert (r1.loads, r1.stores, r2.loads, r2.stores) == (512, 0, 0, 512)
    # 512 x 4 B spread over 4 KiB: 64 lines, each first touched once; 4096 B of b likewise.
    assert r1.footprint_lines == 64 and r2.footprint_lines == 64
    assert r1.reuse[-1] == 64 and r2.reuse[-1] == 64
    load = next(tk for tk in r1.tokens if tk.loads == 512)
    assert load.stride[16 + 4] == 511  # +8 bytes: signed log2 bucket 4
    assert load.regular == 510  # every stride after the first repeats the one before
    assert load.kind.startswith("mov") and "M4" in load.kind
    assert load.source and load.source.endswith(f"prog.c:{_line('s += ')}")
    store = next(tk for tk in r2.tokens if tk.stores == 512)
    assert store.stride[16 + 4] == 511 and store.source.endswith(f"prog.c:{_line('b)[i] =')}")
    marks = [tk for tk in r1.tokens if tk.kind == "<mark>"]
    # Both markers lie inside their region, once each: the begin is recorded after tracing
    # starts, the end before it stops.
    assert [tk.execs for tk in marks] == [1, 1]


@needs_tracer
def test_warm_up_entries_are_simulated_not_counted(tmp_path):
    src = KERNEL.replace("int main(void) {\n  long s = 0;",
                         "int main(void) {\n  long s = 0;\n  for (int rep = 0; rep < 2; rep++) {")
    src = src.replace("  return (int)(s & 1);", "  }\n  return (int)(s & 1);")
    exe = compile_c(src, tmp_path)
    regions, _ = extract([str(exe)], hierarchy.parse("64K:8"), skip=2)
    by = {r.region: r for r in regions}
    # The second pass of region 1 finds its 64 lines in the (large enough) L1: all hits.
    assert by[1].entries == 1 and by[1].served == (512, 0)
    assert by[1].reuse[-1] == 0


@needs_tracer
def test_a_warm_up_run_warms_the_caches_as_a_warm_up_repetition_does(tmp_path):
    """A user's program is one repetition per run: its warm-up is a run traced into the same
    stream. Valgrind lays the program out the same way every run, so the counted run finds
    its data where the warm-up left it, as the second pass of the in-process loop above."""
    exe = compile_c(KERNEL, tmp_path)
    cold, _ = extract([str(exe)], hierarchy.parse("64K:8"))
    warm, t = extract([str(exe)], hierarchy.parse("64K:8"), runs=2)
    by_cold, by_warm = {r.region: r for r in cold}, {r.region: r for r in warm}
    assert by_cold[1].served == (448, 64) and by_cold[1].reuse[-1] == 64
    assert by_warm[1].entries == 1 and by_warm[1].served == (512, 0)
    assert by_warm[1].reuse[-1] == 0
    assert t.records > 2 * by_warm[1].insns  # both runs went through the stream


@needs_tracer
def test_the_sampled_window_is_consecutive_dynamic_instructions(tmp_path):
    exe = compile_c(KERNEL, tmp_path)
    regions, _ = extract([str(exe)], SMALL, window=16)
    w = {r.region: r.extra["window"] for r in regions}
    assert len(w[1]["kind"]) == len(w[1]["level"]) == len(w[1]["stride"]) == 16
    # Region 1's loop body repeats: a window of 16 holds its load every few instructions,
    # each 8 bytes on from the last (stride bucket 4), served by some level (>= 0).
    loads = [i for i, k in enumerate(w[1]["kind"]) if "M4" in k and k.startswith("mov")]
    assert len(loads) >= 2
    assert all(w[1]["stride"][i] == 4 for i in loads[1:])
    assert all(w[1]["level"][i] >= 0 for i in loads)
