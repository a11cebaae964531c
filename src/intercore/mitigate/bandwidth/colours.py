"""Colour assignments in the configuration syntax of static-partitioning hypervisors.

- Bao: each VM of `config.vmlist` has `.colors`, a bitmap of the page colours it may use;
  0 (like a full bitmap) leaves the VM uncoloured (Bao's `all_clrs`). Bao derives the number of
  colours from the LLC way size and the page size, and may cap it (8 on the ZCU104 in paper 001).
- Jailhouse (arm64 colouring): each cell lists `.cache_regions`, ranges `{.start, .size}` of
  colour indices, applied to every memory region it flags `JAILHOUSE_MEM_COLORED`; the root
  cell's `.platform_info.llc_way_size` sets how many colours exist (way size / page size).

The output is fragments to paste into those C configuration files, one block per assignment,
each commented with the setups that use it.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE_SIZE = 4096
FORMATS = ("bao", "jailhouse")


@dataclass(frozen=True)
class ColourAssignment:
    label: str                      # e.g. "cc4", what the setup names carry
    colours: int                    # S
    masks: tuple[tuple[str, int], ...]  # (guest, mask) in VM order; 0 = uncoloured
    used_by: tuple[str, ...] = ()   # setup names


def colour_ranges(mask: int) -> list[tuple[int, int]]:
    """Runs of set bits as (start, size): 0b01110011 -> [(0, 2), (4, 3)]."""
    ranges, bit = [], 0
    while mask >> bit:
        if mask >> bit & 1:
            start = bit
            while mask >> bit & 1:
                bit += 1
            ranges.append((start, bit - start))
        else:
            bit += 1
    return ranges


def _describe(mask: int, colours: int) -> str:
    if mask == 0 or mask == (1 << colours) - 1:
        return "uncoloured (every colour)"
    return "colours " + ", ".join(str(s) if n == 1 else f"{s}-{s + n - 1}"
                                  for s, n in colour_ranges(mask))


def _header(a: ColourAssignment) -> str:
    used = ", ".join(a.used_by[:6]) + (f" and {len(a.used_by) - 6} more"
                                       if len(a.used_by) > 6 else "")
    return (f"/* {a.label}: S = {a.colours} colours; "
            + "; ".join(f"{g}: {_describe(m, a.colours)}" for g, m in a.masks)
            + (f"\n * used by {used}" if used else "") + " */\n")


def bao(assignments: list[ColourAssignment]) -> str:
    out = []
    for a in assignments:
        block = _header(a)
        for guest, mask in a.masks:
            bits = format(mask, f"0{a.colours}b")
            block += f"/* vmlist entry of VM {guest!r} */\n.colors = 0b{bits},\n"
        out.append(block)
    return "\n".join(out)


def jailhouse(assignments: list[ColourAssignment]) -> str:
    out = []
    for s in sorted({a.colours for a in assignments}):
        way = s * PAGE_SIZE
        out.append(f"/* root cell .platform_info: {s} colours of {PAGE_SIZE // 1024} KiB pages "
                   f"mean an LLC way of {way} bytes;\n * on a board with larger ways, scale "
                   f"every range below by way_size / {way} */\n.llc_way_size = {way:#x},\n")
    for a in assignments:
        block = _header(a)
        for guest, mask in a.masks:
            if mask == 0 or mask == (1 << a.colours) - 1:
                block += (f"/* cell {guest!r}: uncoloured: no cache_regions, no "
                          "JAILHOUSE_MEM_COLORED region */\n")
                continue
            ranges = colour_ranges(mask)
            block += (f"/* cell {guest!r}: struct jailhouse_cache cache_regions[{len(ranges)}];"
                      " flag its RAM JAILHOUSE_MEM_COLORED */\n"
                      ".num_cache_regions = ARRAY_SIZE(config.cache_regions),\n"
                      ".cache_regions = {\n"
                      + "".join(f"\t{{ .start = {s}, .size = {n}, }},\n" for s, n in ranges)
                      + "},\n")
        out.append(block)
    return "\n".join(out)


def export(fmt: str, assignments: list[ColourAssignment]) -> str:
    if fmt == "bao":
        return bao(assignments)
    if fmt == "jailhouse":
        return jailhouse(assignments)
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
