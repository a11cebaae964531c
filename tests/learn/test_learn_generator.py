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
    from intercore.errors import InputError

    with pytest.raises(InputError, match="unknown kernel families"):
        programs.draw(3, SMALL, seed=1, families=["matmul", "fft"])
