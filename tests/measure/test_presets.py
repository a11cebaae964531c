"""Aggressor specs and footprints, on synthetic machines (no hardware needed)."""

from __future__ import annotations

import pytest

from intercore.base.errors import InputError
from intercore.host.topology import Cache, Cpu, Topology
from intercore.measure.aggressors.presets import (
    PRESETS,
    Footprints,
    bank_maps,
    parse_set,
    place,
    preset,
)
from intercore.base.units import parse_size, size_arg

KiB, MiB = 1 << 10, 1 << 20


def machine(ncpu: int, l2: int, l2_sets: int | None, llc: int, llc_level: int = 3) -> Topology:
    """ncpu cores with a private L1d and L2 each and one shared last-level cache."""
    shared = Cache(llc_level, "Unified", llc, 16, None, 64, tuple(range(ncpu)))
    cpus = []
    for i in range(ncpu):
        caches = (Cache(1, "Data", 32 * KiB, 8, 64, 64, (i,)),
                  Cache(2, "Unified", l2, 16, l2_sets, 64, (i,)), shared)
        cpus.append(Cpu(i, True, i, 0, caches))
    return Topology(tuple(cpus), "synthetic", "test", None)


def rpi4_like() -> Topology:
    """Four cores with private L1s and one shared 1 MiB L2 (the LLC)."""
    l2 = Cache(2, "Unified", 1 * MiB, 16, 1024, 64, (0, 1, 2, 3))
    cpus = tuple(Cpu(i, True, i, 0, (Cache(1, "Data", 32 * KiB, 2, 256, 64, (i,)), l2))
                 for i in range(4))
    return Topology(cpus, "Cortex-A72", "ARM", None)


def test_footprints_follow_the_caches_not_constants():
    small = Footprints.for_host(machine(2, 1 * MiB, 1024, 16 * MiB))
    big = Footprints.for_host(machine(2, 2 * MiB, 2048, 256 * MiB))
    assert small.llc == 8 * MiB and small.dram == 32 * MiB
    assert big.llc == 128 * MiB and big.dram == 512 * MiB
    # The shared-cache victim overflows the private cache and fits the shared one.
    for fp in (small, big):
        assert fp.private < fp.shared_victim <= fp.shared // 4


def test_llc_aggressor_overflows_private_cache_even_with_a_small_llc():
    fp = Footprints.for_host(machine(2, 2 * MiB, 2048, 4 * MiB))
    assert fp.llc >= 4 * fp.private


def test_arm_board_with_shared_l2_as_llc():
    fp = Footprints.for_host(rpi4_like())
    assert fp.shared == 1 * MiB and fp.private == 32 * KiB
    assert fp.llc == 512 * KiB  # half the shared L2
    assert fp.shared_victim == 128 * KiB


def test_all_ten_presets_resolve():
    fp = Footprints.for_host(machine(2, 2 * MiB, 2048, 64 * MiB))
    assert len(PRESETS) == 10
    for name, (kind, op, target) in PRESETS.items():
        spec = preset(name, fp)
        assert (spec.kind, spec.op) == (kind, op)
        assert spec.size == (fp.dram if target == "dram" else spec.size)
        assert spec.label == name


def test_bank_preset_uses_set_index_bits_above_the_page():
    fp = Footprints.for_host(machine(2, 2 * MiB, 2048, 64 * MiB))
    spec = preset("BkPLLWrite(LLC)", fp)
    # 2048 sets x 64 B lines: set index = PA[16:6]; the part above 4 KiB is PA[16:12].
    assert spec.bank.mask == 0x1F000 and spec.bank.value == 0
    assert "--bank-mask" in spec.argv() and "0x1f000" in spec.argv()


def test_bank_preset_without_geometry_is_an_input_error():
    fp = Footprints.for_host(machine(2, 2 * MiB, None, 64 * MiB))
    with pytest.raises(InputError, match="set group"):
        preset("BkPLLRead(LLC)", fp)


def test_platform_bank_maps_load_and_name_their_source():
    maps = bank_maps()
    assert {"rpi4", "jetson-nano", "zcu104"} <= set(maps)
    for m in maps.values():
        assert m.mask and m.source and m.value & ~m.mask == 0


@pytest.mark.parametrize("text,message", [
    ("BwRead(L3)", "unknown preset"),
    ("foo", "unknown aggressor"),
    ("bw:op=sideways", "op='sideways'"),
    ("bw:size=12XB", "12XB"),
    ("pll:mlp=0", "mlp=0"),
    ("pll:mlp=17", "mlp=17"),
    ("bw:speed=3", "unknown key"),
    ("BwRead(LLC)@99", "CPU 99"),
    ("bankpll:mask=0xF000,value=0x10000", "outside mask"),
    ("bankpll:platform=atari", "platform='atari'"),
    ("cmd:definitely-not-a-command-xyz", "not found"),
    ("bw:pattern=zigzag", "pattern='zigzag'"),
    ("bw:streams=0", "streams=0"),
    ("bw:pattern=rand,streams=2", "pattern=seq only"),
    ("pll:pattern=rand", "bw's"),
])
def test_bad_specs_name_the_option(text, message):
    topo = machine(2, 2 * MiB, 2048, 64 * MiB)
    fp = Footprints.for_host(topo)
    with pytest.raises(InputError) as err:
        parse_set(text, fp, topo)
    assert err.value.field == "--aggressor"
    assert message in str(err.value)


def test_sets_join_members_and_place_them_on_free_cpus():
    topo = machine(4, 2 * MiB, 2048, 64 * MiB)
    fp = Footprints.for_host(topo)
    aset = place(parse_set("BwWrite(LLC)+pll:op=write,size=64M,mlp=8@3", fp, topo), [1, 2, 3])
    assert [m.cpu for m in aset.members] == [1, 3]
    assert aset.members[1].size == 64 * MiB and aset.members[1].mlp == 8
    with pytest.raises(InputError, match="more aggressors"):
        place(parse_set("BwRead(LLC)+BwRead(LLC)", fp, topo), [1])


def test_custom_rate_and_platform_mask():
    topo = machine(2, 2 * MiB, 2048, 64 * MiB)
    fp = Footprints.for_host(topo)
    spec = parse_set("bankpll:op=write,size=1M,platform=rpi4", fp, topo).members[0]
    assert spec.bank.name == "rpi4" and spec.bank.mask == 0xF000
    bw = parse_set("bw:op=rmw,size=4K,rate=2e6", fp, topo).members[0]
    assert bw.argv() == ["bw", "--op", "rmw", "--size", "4096", "--rate", "2000000"]


def test_patterns_streams_and_non_temporal_stores_reach_the_aggressor():
    topo = machine(2, 2 * MiB, 2048, 64 * MiB)
    fp = Footprints.for_host(topo)
    rand = parse_set("bw:op=rmw,size=64M,pattern=rand", fp, topo).members[0]
    assert rand.argv() == ["bw", "--op", "rmw", "--size", str(64 * MiB), "--pattern", "rand"]
    assert rand.to_dict()["pattern"] == "rand" and "streams" not in rand.to_dict()
    streams = parse_set("bw:op=write,size=128M,streams=4", fp, topo).members[0]
    assert streams.argv()[-2:] == ["--streams", "4"] and streams.to_dict()["streams"] == 4
    assert parse_set("bw:op=nt,size=128M", fp, topo).members[0].op == "nt"


@pytest.mark.parametrize("n", [1536, 8 * MiB, 272629760, 4096])
def test_size_arg_reads_back_exactly(n):
    # demo and victim labels write sizes into spec strings that are parsed again
    assert parse_size(size_arg(n), field="x") == n


def test_user_sizes_share_the_sysfs_grammar_but_fail_as_input_errors():
    assert parse_size("4MiB", field="--size") == 4 * MiB
    assert parse_size("1T", field="--size") == 1 << 40
    for bad in ("12XB", "0", "-4K", "4 MB extra"):
        with pytest.raises(InputError) as err:
            parse_size(bad, field="--size")
        assert err.value.field == "--size"
