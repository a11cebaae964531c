"""The generators of paper 001 §3 against hand-computed sets."""

from __future__ import annotations

import itertools

import pytest

from intercore.campaign.generators import (
    EngineVariant,
    bandwidth_space,
    colour_assignments,
    colour_count,
    engine_space,
    exclude_by_min_colours,
    is_uncoloured,
    span_mask,
)


def test_engine_space_is_the_cartesian_product_of_equation_1():
    g = engine_space(["auto", "1-3"], [None, 128], [32768, 1 << 20], ["read", "write", "rw"])
    assert len(g) == 2 * 2 * 2 * 3
    assert len(set(g)) == len(g)
    assert g[0] == EngineVariant("auto", None, 32768, "read")
    assert g[-1] == EngineVariant("1-3", 128, 1 << 20, "rw")
    assert {v.op for v in g} == {"read", "write", "rw"}


def test_paper_engine_space_has_12_variants():
    # §4.1: L = 1, C = 1, W = 6, O = 2.
    sizes = [32 << 10, 512 << 10, 1 << 20, 1536 << 10, 2 << 20, 4 << 20]
    assert len(engine_space(["1-3"], [None], sizes, ["read", "write"])) == 12


def test_span_mask_is_equation_3():
    assert span_mask(0, 0) == 0
    assert span_mask(0, 3) == 0b111
    assert span_mask(2, 5) == 0b11100
    assert span_mask(7, 8) == 0x80


def test_s8_n2_gives_the_eight_boundary_assignments():
    expected = ((0x00, 0xFF), (0x01, 0xFE), (0x03, 0xFC), (0x07, 0xF8),
                (0x0F, 0xF0), (0x1F, 0xE0), (0x3F, 0xC0), (0x7F, 0x80))
    assert colour_assignments(8, 2) == expected


def test_s16_n3_gives_every_pair_of_boundaries():
    # Written from the sizes, not the shifts: guest 0 has b1 colours, guest 1 b2 - b1, guest 2
    # the rest, laid out from colour 0 upwards.
    expected = tuple((2 ** b1 - 1, 2 ** b2 - 2 ** b1, 2 ** 16 - 2 ** b2)
                     for b1, b2 in itertools.combinations(range(16), 2))
    got = colour_assignments(16, 3)
    assert got == expected
    assert len(got) == 120  # C(16, 2)
    assert got[0] == (0x0000, 0x0001, 0xFFFE)
    assert got[-1] == (0x3FFF, 0x4000, 0x8000)
    for masks in got:
        assert sum(masks) == 0xFFFF            # they cover all colours ...
        assert sum(m.bit_count() for m in masks) == 16  # ... without overlapping
        for m in masks[1:]:
            assert m and (m + (m & -m)) & m == 0  # later guests: one contiguous run, non-empty


def test_assignments_are_unique_and_n1_is_everything():
    assert colour_assignments(4, 1) == ((0xF,),)
    for s, n in ((8, 2), (16, 3), (6, 4)):
        a = colour_assignments(s, n)
        assert len(set(a)) == len(a)


@pytest.mark.parametrize("s, n", [(0, 1), (4, 0), (4, 5)])
def test_impossible_spaces_are_refused(s, n):
    with pytest.raises(ValueError):
        colour_assignments(s, n)


def test_empty_and_full_masks_are_uncoloured_as_in_bao():
    assert is_uncoloured(0, 8) and is_uncoloured(0xFF, 8)
    assert not is_uncoloured(0x7F, 8)
    assert colour_count(0, 8) == 8  # an uncoloured guest may use every colour
    assert colour_count(0xC0, 8) == 2


def test_min_colours_exclusion_drops_the_single_colour_critical_guest():
    # Paper §4.1: guests [engine, critical], the critical guest never gets a single colour.
    kept = exclude_by_min_colours(colour_assignments(8, 2), 8, [1, 2])
    assert len(kept) == 7
    assert (0x7F, 0x80) not in kept
    assert [colour_count(crit, 8) for _, crit in kept] == [8, 7, 6, 5, 4, 3, 2]


def test_min_colours_applies_to_every_guest():
    kept = exclude_by_min_colours(colour_assignments(16, 3), 16, [3, 3, 3])
    assert kept and all(colour_count(m, 16) >= 3 for a in kept for m in a)
    # b1 = 0 leaves guest 0 uncoloured (all 16 colours), so it passes a minimum of 3.
    assert any(a[0] == 0 for a in kept)
    # every guest-1 width from 3 to 13 occurs with b1 >= 3 or b1 = 0
    assert len(kept) == sum(1 for b1, b2 in itertools.combinations(range(16), 2)
                            if (b1 == 0 or b1 >= 3) and b2 - b1 >= 3 and 16 - b2 >= 3)


def test_bandwidth_space_is_equation_4_per_guest_combined():
    space = bandwidth_space({"engine": ([100, 200], [1000, 5000]), "linux": ([50], [1000])})
    assert len(space) == 4  # |B_e × P_e| × |B_l × P_l| = 4 × 1
    assert {(d["engine"], d["linux"]) for d in space} == {
        ((100, 1000), (50, 1000)), ((100, 5000), (50, 1000)),
        ((200, 1000), (50, 1000)), ((200, 5000), (50, 1000))}
    assert bandwidth_space({}) == ({},)
