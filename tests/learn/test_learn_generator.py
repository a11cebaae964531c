"""The dataset generator: every family compiles at every optimisation level and its regions
are traced; the draw is reproducible and respects the shapes' budget."""

from __future__ import annotations

import random

import pytest

from intercore.learn import hierarchy, programs
from intercore.learn.extract import extract, victim_argv
from intercore.learn.families import ELEMS, FAMILIES, MAX_PASS_OPS, OPT_LEVELS
from intercore.learn.programs import ProgramSpec, RegionSpec

from _learnkit import needs_tracer

SMALL = hierarchy.parse("4K:4,16K:4,64K:8")


def _tiny(family: str, rng: random.Random) -> tuple[RegionSpec, ...]:
    """One region per variant at a few KiB, one pass: cheap to trace, same code as any size."""
    fam = FAMILIES[family]
    out = []
    for variant in fam.variants:
        elem = rng.choice(fam.elems)
        for ws in (8192, 16384, 32768):
            shape = fam.shape(variant, ELEMS[elem][1], ws, rng)
            if shape:
                break
        assert shape, f"{family}/{variant}: no shape at small sizes"
        out.append(RegionSpec(len(out) + 1, variant, elem, "L1d", 1.0, {**shape, "passes": 1}))
    return tuple(out)


@pytest.mark.slow
@needs_tracer
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_builds_and_traces_at_every_level(family, tmp_path):
    rng = random.Random(family)
    regions = _tiny(family, rng)
    for opt in OPT_LEVELS:
        spec = ProgramSpec(f"{family}-{opt}", family, opt, regions)
        exe = programs.build(spec, tmp_path)
        feats, t = extract(victim_argv(exe), SMALL, skip=1, include_total=False)
        assert t.exit_code == 0
        assert [f.region for f in feats] == [r.id for r in regions], (family, opt)
        for f, r in zip(feats, regions):
            assert f.name == r.name and f.entries == 1
            assert f.loads + f.stores > 0 and f.tokens, (family, opt, r.variant)


def test_the_draw_is_reproducible_and_within_budget():
    h = hierarchy.parse("48K:12,1M:16,32M:16")
    a = programs.draw(27, h, seed=5)
    assert a == programs.draw(27, h, seed=5)
    assert a != programs.draw(27, h, seed=6)
    assert {p.family for p in a} == set(FAMILIES)
    for p in a:
        assert 2 <= len(p.regions) <= 6 and p.opt in OPT_LEVELS
        for r in p.regions:
            assert r.shape["ops"] <= MAX_PASS_OPS and r.shape["passes"] >= 1


def test_k_sweep_is_the_papers_shape():
    sweep = programs.k_sweep()
    ks = [r.shape["k"] for p in sweep for r in p.regions]
    assert ks == sorted(ks) and ks[0] == 64 and len(ks) == 12
    assert all(r.shape["n"] == r.shape["m"] == 8 for p in sweep for r in p.regions)


def test_unknown_family_is_bad_input():
    from intercore.base.errors import InputError

    with pytest.raises(InputError, match="unknown kernel families"):
        programs.draw(3, SMALL, seed=1, families=["matmul", "fft"])


def test_a_resume_measures_with_the_stored_settings(tmp_path):
    """Not the resuming command line's: pooling attempts made under two aggressor sets would
    label a region with neither; a dataset from before SCHED_FIFO and attempts reads as one
    measured once at SCHED_OTHER."""
    from intercore.base.errors import InputError
    from intercore.learn.generate import Settings, stored_settings
    from intercore.store import Store

    db = tmp_path / "s.db"
    began = Settings(aggressor="@worst:ptrchase:size=8M", priority=3, block_pairs=2)
    legacy = {k: v for k, v in Settings().to_dict().items()
              if k not in ("priority", "block_pairs", "target_pairs", "max_attempts")}
    with Store.open(db) as store:
        store.learn.create("new", {"generator": began.to_dict()}, [])
        store.learn.create("old", {"generator": legacy}, [])
    assert stored_settings(db, "new") == began
    old = stored_settings(db, "old")
    assert (old.priority, old.block_pairs, old.max_attempts) == (0, None, 1)
    with pytest.raises(InputError, match="new"):  # the error names the datasets there are
        stored_settings(db, "neither")


# --- coverage of the sensitive range (issue 22) ----------------------------------------------

@pytest.mark.parametrize("caches", ["48K:12,1M:16,32M:16", "48K:12,2M:16,260M:20"])
def test_the_draw_spans_the_hierarchy_patterns_and_knobs(caches):
    """Working sets in every level and in DRAM, most at the shared level or beyond; every
    access pattern, chain count, read/write mix and compute intensity; every program within
    its memory and every pass within its budget."""
    from collections import Counter

    from intercore.learn.families import (CHAINS, MEMORY_BYTES, MIXES, PROGRAM_BYTES,
                                          WORK)
    from intercore.learn.hierarchy import MEMORY

    h = hierarchy.parse(caches)
    drawn = programs.draw(450, h, seed=1)
    regions = [(p.family, r) for p in drawn for r in p.regions]
    homes = Counter(h.home(r.shape["bytes"]) for _, r in regions)
    for level in [lv.name for lv in h.levels] + [MEMORY]:
        assert homes[level] >= 0.08 * len(regions), (level, homes)
    assert homes["L3"] + homes[MEMORY] >= 0.4 * len(regions), homes
    llc = h.levels[-1].size
    biggest = max(r.shape["bytes"] for _, r in regions)
    assert biggest >= min(3 * llc, 0.9 * MEMORY_BYTES)  # several LLCs, or the memory cap
    for p in drawn:
        assert sum(r.shape["bytes"] for r in p.regions) <= PROGRAM_BYTES
        for r in p.regions:
            assert r.shape["ops"] <= MAX_PASS_OPS
    by = {f: [r for g, r in regions if g == f] for f in FAMILIES}
    # patterns: sequential and strided streams, random indices, dependent chases
    assert {r.variant for r in by["triad"]} == {"unit", "strided"}
    assert {r.shape["order"] for r in by["gather"]} == {"random", "local", "strided"}
    assert {r.variant for r in by["chase"]} == set(FAMILIES["chase"].variants)
    # memory-level parallelism, read/write mix, compute per element
    assert {r.shape["chains"] for r in by["chase"]} == set(CHAINS)
    assert {r.shape["mix"] for r in by["triad"]} == set(MIXES)
    assert {r.shape["work"] for r in by["triad"]} == set(WORK)
    # DRAM-sized streams and chases are bounded by a window, not refused
    assert any(r.shape["span"] < r.shape["n"] and h.home(r.shape["bytes"]) == MEMORY
               for r in by["triad"])
    assert any(r.shape["hops"] < r.shape["nodes"] and h.home(r.shape["bytes"]) == MEMORY
               for r in by["chase"])


def test_shapes_from_before_the_new_knobs_render_as_they_did():
    """A resume of a stored dataset rebuilds its programs and compares them with the traced
    binaries: a shape without mix, work, span or chains is the code it always was."""
    old_triad = RegionSpec(1, "unit", "f32", "L1d", 1.0,
                           {"n": 1000, "stride": 1, "ops": 1000, "bytes": 12000, "passes": 3})
    old_chase = RegionSpec(1, "random", "u64", "L2", 1.0,
                           {"node": 8, "nodes": 5000, "hops": 5000, "ops": 5000,
                            "bytes": 40000, "passes": 3})
    triad = programs.render(ProgramSpec("t", "triad", "O2", (old_triad,)))
    assert "r1_a[i] = r1_b[i] + (r1_t)3 * r1_c[i];" in triad and "r1_at" not in triad
    chase = programs.render(ProgramSpec("c", "chase", "O2", (old_chase,)))
    assert "static size_t r1_at;" in chase and "at0" not in chase


def _traced(spec: ProgramSpec, into, caches=SMALL):
    exe = programs.build(spec, into)
    feats, t = extract(victim_argv(exe), caches, skip=1, include_total=False)
    assert t.exit_code == 0
    return {f.region: f for f in feats}


@pytest.mark.slow
@needs_tracer
def test_a_streams_mix_and_work_and_a_chases_chains_are_the_code_traced(tmp_path):
    """Per element, a mix reads and writes the arrays it names (triad 2 + 1, read 2 + 0,
    write 0 + 1, update 2 + 1: a is read and written) and `work` adds that many dependent
    operations; a chase of k chains makes the same loads as one."""
    from intercore.learn.families import MIXES

    n = 512
    shapes = [(mix, work) for mix in MIXES for work in (0, 8)]
    regions = tuple(RegionSpec(i + 1, "unit", "u64", "L1d", 1.0,
                               {"n": n, "stride": 1, "span": n, "mix": mix, "work": work,
                                "ops": n, "bytes": 8 * n * len(MIXES[mix]), "passes": 1})
                    for i, (mix, work) in enumerate(shapes))
    feats = _traced(ProgramSpec("mix", "triad", "O1", regions), tmp_path)
    reads = {"triad": 2, "read": 2, "write": 0, "update": 2}
    writes = {"triad": 1, "read": 0, "write": 1, "update": 1}
    for r, (mix, work) in zip(regions, shapes):
        f = feats[r.id]
        # a few more for the window's cursor and the region's marks
        assert 0 <= f.loads - reads[mix] * n <= 8, (mix, work, f.loads)
        assert 0 <= f.stores - writes[mix] * n <= 4, (mix, work, f.stores)
    for i in range(0, len(shapes), 2):  # work 8 against work 0, same mix
        extra = (feats[i + 2].insns - feats[i + 1].insns) / n
        assert 8 <= extra <= 24, (shapes[i], extra)
    chases = tuple(RegionSpec(i + 1, "random", "u64", "L2", 1.0,
                              {"node": 64, "nodes": 1024, "hops": 1024, "chains": k,
                               "ops": 1024, "bytes": 65536, "passes": 1})
                   for i, k in enumerate((1, 4, 8)))
    feats = _traced(ProgramSpec("chains", "chase", "O1", chases), tmp_path)
    assert all(1024 <= feats[r.id].loads <= 1024 + 16 for r in chases), feats


@needs_tracer
@pytest.mark.parametrize("family", ["triad", "chase"])
def test_a_windowed_regions_trace_reads_like_the_whole_ones(family, tmp_path):
    """A DRAM-sized region walks a window per pass (families.py): its trace must describe the
    same memory behaviour as the whole sweep's, at an eighth of the traced work. Here 16 times
    the modelled LLC: where accesses are served, their strides and regularity, bytes per
    access and the share whose reuse reaches beyond the last level (the window's lines were
    last touched a lap ago, before the traced warm-up: first touches to the trace, as
    distant as the whole sweep's reuse to the hardware)."""
    from intercore.learn.features import MAX_LEVELS, REGION_NAMES, region_vector

    n = 1 << 17
    if family == "triad":  # a pass of the whole arrays, of an eighth of them
        whole, window = ({"n": n, "stride": 1, "span": span, "mix": "update", "work": 0,
                          "ops": span, "bytes": 16 * n, "passes": 1} for span in (n, n // 8))
        variant = "unit"
    else:  # a lap of the cycle, an eighth of one
        whole, window = ({"node": 64, "nodes": n // 8, "hops": hops, "chains": 1,
                          "ops": hops, "bytes": 8 * n, "passes": 1} for hops in (n // 8, n // 64))
        variant = "random"
    regions = tuple(RegionSpec(i + 1, variant, "u64", "DRAM", 16.0, s)
                    for i, s in enumerate((whole, window)))
    feats = _traced(ProgramSpec(f"window-{family}", family, "O2", regions), tmp_path)
    assert feats[2].insns < feats[1].insns / 6  # the traced work is bounded
    a, b = (region_vector(feats[i], SMALL) for i in (1, 2))
    idx = {k: i for i, k in enumerate(REGION_NAMES)}
    same = [k for k in REGION_NAMES if k.startswith(("served_", "stride_"))] + \
        ["bytes_per_access", "regular", "vector_share"]
    for k in same:
        assert abs(a[idx[k]] - b[idx[k]]) <= 0.02, (k, a[idx[k]], b[idx[k]])
    # reuse beyond the last level, and first touches
    far = [idx[f"reuse_{len(SMALL.levels)}"], idx[f"reuse_{MAX_LEVELS + 1}"]]
    assert abs(a[far].sum() - b[far].sum()) <= 0.02
    memory = idx[f"served_{MAX_LEVELS}"]
    assert a[memory] > 0.02 and a[far].sum() > 0.02  # the whole sweep does reach memory
