"""Each refinement rule on a minimal hand-made model, verdicts written out with the rule on
and off."""

import pytest
from model_builders import platform, row, verdicts

from intercore.model import rules
from intercore.model.rules import RULES


def test_registry_ids_match_their_modules_and_codes_are_unique():
    for rule_id, rule in RULES.items():
        assert rule.id == rule_id
        assert getattr(rules, rule_id).RULE is rule
        assert rule.reference and rule.setting and rule.title
    assert sorted(r.code for r in RULES.values()) == [f"R{i}" for i in range(1, 9)]


AXI = """
    platform: r1
    components:
      c[0-1]: {kind: initiator, role: core}
      bus: {kind: transporter, role: bus, rw_independent: true}
      mem: {kind: target, role: memory}
      sram: {kind: target, role: memory}
    links: ["c[i]>bus", bus>mem, bus>sram]
    apps: {A: c0, B: c1}
    transactions:
      a_ld_mem: {app: A, op: load, target: mem}
      a_ld_sram: {app: A, op: load, target: sram}
      b_st_sram: {app: B, op: store, target: sram}
      b_ld_mem: {app: B, op: load, target: mem}
"""


def test_r1_axi_read_and_write_channels_do_not_contend():
    on = verdicts(platform(AXI))
    off = verdicts(platform(AXI, disable=["axi_rw"]))
    # a load of mem and a store of sram share only the bus, in opposite directions
    assert on[frozenset({"a_ld_mem", "b_st_sram"})] == "free"
    assert off[frozenset({"a_ld_mem", "b_st_sram"})] == "itf"
    # two loads still share the read channel; a load and a store of one sram still contend
    assert on[frozenset({"a_ld_mem", "b_ld_mem"})] == "itf"
    assert on[frozenset({"a_ld_sram", "b_st_sram"})] == "itf"
    assert row(platform(AXI), "a_ld_mem", "b_st_sram").relies_on == ("axi_rw",)


INCLUSIVE = """
    platform: r2
    components:
      c[0-1]: {kind: initiator, role: core}
      l1d[0-1]: {kind: target, role: cache, level: 1, private_to: "c[i]"}
      l2: {kind: target, role: cache, level: 2, inclusive_of: ["l1d[*]"]}
    links: ["c[i]>l1d[i]", "c[i]>l2"]
    apps: {A: c0, B: c1}
    transactions:
      a_l1: {app: A, op: load, target: l1d0}
      b_l1: {app: B, op: load, target: l1d1}
      b_l2: {app: B, op: load, target: l2}
"""


def test_r2_inclusive_cache_reaches_private_l1():
    p = platform(INCLUSIVE)
    on = verdicts(p)
    assert on[frozenset({"a_l1", "b_l2"})] == "itf"
    assert on[frozenset({"a_l1", "b_l1"})] == "free"
    r = row(p, "a_l1", "b_l2")
    assert (r.rule, r.services) == ("inclusive_cache", ("l1d0.load", "l2.load"))
    assert verdicts(platform(INCLUSIVE, disable=["inclusive_cache"]))[
        frozenset({"a_l1", "b_l2"})] == "free"


def test_r2_with_partitions_reaches_only_the_partition_s_cores():
    coloured = INCLUSIVE + "    config: {partitions: {l2: {p0: [c0], p1: [c1]}}}\n"
    v = verdicts(platform(coloured))
    assert v[frozenset({"a_l1", "b_l2"})] == "free"  # c1 uses l2's p1, which holds no l1d0
    r = row(platform(coloured), "a_l1", "b_l2")
    assert r.relies_on == ()  # nothing shared at all: l2#p1 and l1d0 are unrelated


MISS = """
    platform: r3
    components:
      c[0-1]: {kind: initiator, role: core}
      l2: {kind: target, role: cache, level: 2}
      bus: {kind: transporter, role: bus, rw_independent: true}
      ddr: {kind: target, role: memory}
      sram: {kind: target, role: memory}
    links: ["c[i]>l2", "c[i]>bus", bus>ddr, bus>sram]
    apps: {A: c0, B: c1}
    data: {d: ddr}
    transactions:
      a_miss: {app: A, op: load, data: d, refill: [l2], writeback: true}
      b_l2: {app: B, op: load, target: l2}
      b_sram: {app: B, op: store, target: sram}
"""


def test_r3_miss_refills_caches_and_writes_back():
    on, off = verdicts(platform(MISS)), verdicts(platform(MISS, disable=["miss_refill"]))
    assert (on[frozenset({"a_miss", "b_l2"})], off[frozenset({"a_miss", "b_l2"})]) == \
        ("itf", "free")  # the refill stores into l2, which b reads
    # the dirty victim's write-back uses the bus's write channel, as b's store does
    assert (on[frozenset({"a_miss", "b_sram"})], off[frozenset({"a_miss", "b_sram"})]) == \
        ("itf", "free")
    assert "bus.store" in row(platform(MISS), "a_miss", "b_sram").services


COHERENCE = """
    platform: r4
    components:
      c[0-1]: {kind: initiator, role: core}
      dev: {kind: initiator, role: device}
      l1d[0-1]: {kind: target, role: cache, level: 1, private_to: "c[i]"}
      buf: {kind: target, role: memory}
    links: ["c[i]>l1d[i]", dev>buf]
    apps: {A: c0, B: c1, D: dev}
    data:
      sh: {at: buf}
      ro: {at: buf}
    transactions:
      a_write_sh: {app: A, op: store, data: sh, target: l1d0}
      b_read_sh: {app: B, op: load, data: sh, target: l1d1}
      a_read_ro: {app: A, op: load, data: ro, target: l1d0}
      b_read_ro: {app: B, op: load, data: ro, target: l1d1}
      d_write_ro: {app: D, op: store, data: ro}
"""


def test_r4_coherence_on_data_written_by_one_core_and_read_by_another():
    on, off = verdicts(platform(COHERENCE)), verdicts(platform(COHERENCE,
                                                               disable=["coherence"]))
    assert on[frozenset({"a_write_sh", "b_read_sh"})] == "itf"
    assert off[frozenset({"a_write_sh", "b_read_sh"})] == "free"
    assert row(platform(COHERENCE), "a_write_sh", "b_read_sh").services == ("coherence(sh)",)
    # read-only between the cores; the writer is a non-coherent device (software maintenance)
    assert on[frozenset({"a_read_ro", "b_read_ro"})] == "free"


def test_r4_counts_a_master_declared_coherent():
    text = COHERENCE.replace("dev: {kind: initiator, role: device}",
                             "dev: {kind: initiator, role: device, coherent: true}")
    assert verdicts(platform(text))[frozenset({"a_read_ro", "b_read_ro"})] == "itf"


PREFETCH = """
    platform: r5
    components:
      c[0-1]: {kind: initiator, role: core}
      l2: {kind: target, role: cache, level: 2, prefetch_via: [bus]}
      bus: {kind: transporter, role: bus}
      ddr: {kind: target, role: memory}
    links: [c0>l2, c1>bus, bus>ddr]
    apps: {A: c0, B: c1}
    config: {prefetch: {l2: PREFETCH}}
    transactions:
      a_l2: {app: A, op: load, target: l2}
      b_ddr: {app: B, op: load, target: ddr}
"""


@pytest.mark.parametrize("setting, disable, expected", [
    ("true", [], "itf"), ("true", ["prefetch"], "free"), ("false", [], "free")])
def test_r5_prefetcher_traffic_follows_its_setting(setting, disable, expected):
    p = platform(PREFETCH.replace("PREFETCH", setting), disable=disable)
    assert verdicts(p)[frozenset({"a_l2", "b_ddr"})] == expected


TLB = """
    platform: r6
    components:
      c[0-1]: {kind: initiator, role: core}
      tlb[0-1]: {kind: target, role: tlb, private_to: "c[i]", walk_via: [l2]}
      l1d[0-1]: {kind: target, role: cache, level: 1, private_to: "c[i]"}
      l2: {kind: target, role: cache, level: 2}
      ddr0: {kind: target, role: memory}
    links: ["c[i]>tlb[i]", "c[i]>l1d[i]", "c[i]>l2", c0>ddr0]
    apps: {A: c0, B: c1}
    transactions:
      a_walks: {app: A, op: load, target: ddr0, page_walk: true}
      a_l1: {app: A, op: load, target: l1d0}
      b_l2: {app: B, op: store, target: l2}
      b_shootdown: {app: B, op: store, target: tlb1, tlbi: true}
"""


def test_r6_page_walks_and_tlb_shootdowns():
    on, off = verdicts(platform(TLB)), verdicts(platform(TLB, disable=["tlb_walk"]))
    assert (on[frozenset({"a_walks", "b_l2"})], off[frozenset({"a_walks", "b_l2"})]) == \
        ("itf", "free")  # the walk reads l2, which b writes
    assert (on[frozenset({"a_l1", "b_shootdown"})],
            off[frozenset({"a_l1", "b_shootdown"})]) == ("itf", "free")
    assert row(platform(TLB), "a_l1", "b_shootdown").services == ("dvm", "tlb0.load")


PORT = """
    platform: r7
    components:
      c0: {kind: initiator, role: core}
      bus: {kind: transporter, role: bus}
      gpu: {kind: composite, initiator: v3d, target: regs, port: gpu_port}
      lmem: {kind: target, role: memory}
    links: [c0>bus, bus>gpu, v3d>lmem]
    apps: {A: c0, G: gpu}
    transactions:
      a_regs: {app: A, op: load, target: gpu}
      g_local: {app: G, op: load, target: lmem}
"""


def test_r7_composite_device_parts_all_interfere():
    on, off = verdicts(platform(PORT)), verdicts(platform(PORT, disable=["shared_port"]))
    # the CPU reads the registers; the GPU works on its local memory, never crossing the port
    assert (on[frozenset({"a_regs", "g_local"})], off[frozenset({"a_regs", "g_local"})]) == \
        ("itf", "free")
    r = row(platform(PORT), "a_regs", "g_local")
    # the CPU's read crosses the port, which R7 also ties to the GPU's own traffic
    assert r.rule == "shared_port" and set(r.components) == {"gpu_port", "regs", "v3d"}


BANKS = """
    platform: r8
    components:
      c[0-1]: {kind: initiator, role: core}
      ddrc: {kind: transporter, role: controller, rw_independent: true}
      dram: {kind: target, role: memory, banks: 4}
    links: ["c[i]>ddrc", ddrc>dram]
    apps: {A: c0, B: c1}
    data:
      da: {at: dram, banks: [0]}
      db: {at: dram, banks: [1]}
      da_too: {at: dram, banks: [0]}
      spread: dram
    transactions:
      a_ld: {app: A, op: load, data: da}
      b_st: {app: B, op: store, data: db}
      b_ld: {app: B, op: load, data: db}
      b_st_same_bank: {app: B, op: store, data: da_too}
      b_st_spread: {app: B, op: store, data: spread}
"""


def test_r8_banks_apart_controller_shared():
    p = platform(BANKS)
    on, off = verdicts(p), verdicts(platform(BANKS, disable=["ddr_banks"]))
    assert (on[frozenset({"a_ld", "b_st"})], off[frozenset({"a_ld", "b_st"})]) == \
        ("free", "itf")
    assert set(row(p, "a_ld", "b_st").relies_on) == {"axi_rw", "ddr_banks"}
    # two loads in different banks still meet at the controller, and only there
    assert on[frozenset({"a_ld", "b_ld"})] == "itf"
    assert row(p, "a_ld", "b_ld").components == ("ddrc",)
    # same bank, or data spread over every bank: the bank node is back
    assert on[frozenset({"a_ld", "b_st_same_bank"})] == "itf"
    assert row(p, "a_ld", "b_st_same_bank").services == ("dram#b0.load", "dram#b0.store")
    assert on[frozenset({"a_ld", "b_st_spread"})] == "itf"
