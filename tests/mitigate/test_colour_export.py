"""Colour assignments as Bao and Jailhouse configuration fragments."""

from __future__ import annotations

import pytest

from intercore.mitigate.bandwidth.colours import (ColourAssignment, bao, colour_ranges, export,
                                                  jailhouse)

CC4 = ColourAssignment("cc4", 8, (("interf", 0x0F), ("linux", 0xF0)),
                       ("interf_write_1MiB_cc4", "solo_cc4"))


@pytest.mark.parametrize("mask, ranges", [
    (0, []), (0b1, [(0, 1)]), (0xF0, [(4, 4)]), (0b01110011, [(0, 2), (4, 3)]),
    (0x8000_0001, [(0, 1), (31, 1)]),
])
def test_colour_ranges_are_runs_of_set_bits(mask, ranges):
    assert colour_ranges(mask) == ranges


def test_bao_gives_each_vm_its_colour_bitmap():
    text = bao([CC4])
    assert text.startswith("/* cc4: S = 8 colours; interf: colours 0-3; linux: colours 4-7\n"
                           " * used by interf_write_1MiB_cc4, solo_cc4 */\n")
    assert "/* vmlist entry of VM 'interf' */\n.colors = 0b00001111,\n" in text
    assert "/* vmlist entry of VM 'linux' */\n.colors = 0b11110000,\n" in text


def test_bao_writes_an_uncoloured_vm_as_zero():
    text = bao([ColourAssignment("cc16", 16, (("linux", 0), ("other", 0x00FF)))])
    assert "linux: uncoloured (every colour)" in text
    assert ".colors = 0b0000000000000000," in text and ".colors = 0b0000000011111111," in text


def test_jailhouse_gives_cache_regions_per_cell_and_the_way_size_once():
    split = ColourAssignment("cc3", 8, (("a", 0b11000001), ("b", 0b00111110)))
    text = jailhouse([CC4, split])
    assert text.count(".llc_way_size = 0x8000,") == 1  # 8 colours x 4 KiB pages
    cell_b = text[text.index("/* cell 'b'"):]
    assert "{ .start = 1, .size = 5, }," in cell_b
    cell_a = text[text.index("/* cell 'a'"):text.index("/* cell 'b'")]
    assert "cache_regions[2]" in cell_a
    assert "{ .start = 0, .size = 1, }," in cell_a and "{ .start = 6, .size = 2, }," in cell_a
    assert ".num_cache_regions = ARRAY_SIZE(config.cache_regions)," in text


def test_jailhouse_leaves_an_uncoloured_cell_without_regions():
    text = jailhouse([ColourAssignment("cc8", 8, (("linux", 0xFF), ("x", 0)))])
    assert ".cache_regions" not in text
    assert "cell 'linux': uncoloured" in text and "cell 'x': uncoloured" in text


def test_export_dispatches_and_refuses_unknown_formats():
    assert export("bao", [CC4]) == bao([CC4])
    assert export("jailhouse", [CC4]) == jailhouse([CC4])
    with pytest.raises(ValueError, match="unknown format"):
        export("xen", [CC4])
