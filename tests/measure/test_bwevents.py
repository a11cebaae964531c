"""The memory-traffic event table against fake sysfs trees of the machines it names.

Each tree is built as the kernel lays it out (PMU type, format/ bit ranges, named events/,
cpumask), so resolution runs through the same code as on the real machine: every event of a
matched model must resolve, and what is missing must say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from intercore.measure.bandwidth import events as b


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def pmu(root: Path, name: str, type_: int, formats: dict[str, str],
        events: dict[str, str] | None = None, cpumask: str | None = None,
        cpus: str | None = None) -> None:
    d = root / b.PMU_ROOT / name
    write(d / "type", str(type_))
    for field, spec in formats.items():
        write(d / "format" / field, spec)
    for event, spec in (events or {}).items():
        write(d / "events" / event, spec)
    if cpumask is not None:
        write(d / "cpumask", cpumask)
    if cpus is not None:
        write(d / "cpus", cpus)


def cpuinfo(root: Path, text: str) -> None:
    write(root / "proc/cpuinfo", text)


@pytest.fixture
def jetson_nano(tmp_path: Path) -> Path:
    """Tegra X1: four Cortex-A57 (implementer 0x41, part 0xd07), one PMUv3."""
    cpuinfo(tmp_path, "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd07\n")
    pmu(tmp_path, "armv8_pmuv3", 8, {"event": "config:0-15"},
        {"l2d_cache_refill": "event=0x0017", "bus_access": "event=0x0019"}, cpus="0-3")
    pmu(tmp_path, "software", 1, {})
    return tmp_path


@pytest.fixture
def cascade_lake(tmp_path: Path) -> Path:
    cpuinfo(tmp_path, "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n")
    core = {"event": "config:0-7", "umask": "config:8-15", "cmask": "config:24-31"}
    pmu(tmp_path, "cpu", 4, core)
    for i in range(6):
        pmu(tmp_path, f"uncore_imc_{i}", 13 + i, {"event": "config:0-7", "umask": "config:8-15"},
            {"cas_count_read": "event=0x04,umask=0x03", "cas_count_write": "event=0x04,umask=0x0c"},
            cpumask="0,28")
    return tmp_path


@pytest.fixture
def zen3(tmp_path: Path) -> Path:
    cpuinfo(tmp_path, "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n")
    pmu(tmp_path, "cpu", 4, {"event": "config:0-7,32-35", "umask": "config:8-15"})
    pmu(tmp_path, "amd_df", 11, {"event": "config:0-7,32-35,59-60", "umask": "config:8-15"},
        cpumask="0")
    pmu(tmp_path, "amd_l3", 12, {"event": "config:0-7", "umask": "config:8-15"}, cpumask="0")
    return tmp_path


@pytest.fixture
def zen5(tmp_path: Path) -> Path:
    cpuinfo(tmp_path, "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n")
    pmu(tmp_path, "cpu", 4, {"event": "config:0-7,32-35", "umask": "config:8-15"})
    for i in range(4):
        pmu(tmp_path, f"amd_umc_{i}", 20 + i, {"event": "config:0-7", "rdwrmask": "config:8-9"},
            cpumask="0")
    return tmp_path


def report(root: Path, arch: str, cpu: int = 1) -> b.EventReport:
    return b.resolve(b.read_ident(root, arch), b.read_pmus(root), cpu)


def test_jetson_nano_every_arm_event_resolves(jetson_nano):
    r = report(jetson_nano, "aarch64")
    assert r.models == ("arm-cortex-a",)
    got = {e.name: e for e in r.events}
    assert all(e.available for e in r.events), [e.reason for e in r.events]
    # Named events come from events/, the others are encoded through format/event.
    assert got["l2d_cache_refill"].terms == (b.Term("armv8_pmuv3", 8, 0x17, 0, 1),)
    assert got["l2d_cache_wb"].terms[0].config == 0x18
    assert got["bus_access"].event.bytes is None  # a count of beats, not bytes
    assert got["l2d_cache_refill"].source_spec() == "perf:8:0x17/cpu:1"


def test_cascade_lake_sums_every_memory_channel(cascade_lake):
    r = report(cascade_lake, "x86_64")
    got = {e.name: e for e in r.events}
    required = [e for e in r.events if not e.event.optional]
    assert all(e.available for e in required), [(e.name, e.reason) for e in required]
    reads = got["uncore_imc.cas_count_read"]
    assert [t.pmu for t in reads.terms] == [f"uncore_imc_{i}" for i in range(6)]
    assert {t.config for t in reads.terms} == {0x0304}
    assert {t.cpu for t in reads.terms} == {0}  # opened on the first CPU of cpumask
    assert reads.source_spec().count("+perf:") == 5
    assert got["longest_lat_cache.miss"].terms[0].config == 0x412E
    # The client controller's counters are optional and absent here, with the reason.
    assert "no PMU uncore_imc" in got["uncore_imc.data_reads"].reason


def test_zen3_data_fabric_fields_are_spread_as_the_format_says(zen3):
    r = report(zen3, "x86_64")
    assert r.models == ("amd-zen1-3",)
    dram = next(e for e in r.events if e.name == "amd_df.dram_channel_data")
    assert dram.available and len(dram.terms) == 8
    # event 0x107: bits 0-7 in config 0-7, bits 8-11 in config 32-35.
    assert dram.terms[4].config == 0x07 | (0x38 << 8) | (0x1 << 32)
    assert dram.terms[0].config == 0x3807


def test_zen5_unified_memory_controllers(zen5):
    r = report(zen5, "x86_64")
    assert r.models == ("amd-zen4-5",)
    assert all(e.available for e in r.events), [(e.name, e.reason) for e in r.events]
    rd = next(e for e in r.events if e.name == "amd_umc.umc_cas_cmd.rd")
    assert [t.config for t in rd.terms] == [0x10A] * 4


def test_missing_pmu_and_missing_field_say_why(tmp_path):
    cpuinfo(tmp_path, "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n")
    pmu(tmp_path, "cpu", 4, {"event": "config:0-7"})  # no umask field in this format
    r = report(tmp_path, "x86_64")
    got = {e.name: e for e in r.events}
    assert "no format field umask" in got["ls_any_fills_from_sys.dram_io_all"].reason
    assert "no PMU amd_umc_*" in got["amd_umc.umc_cas_cmd.rd"].reason
    assert not r.available


def test_named_event_absent_from_the_pmu(cascade_lake):
    (cascade_lake / b.PMU_ROOT / "uncore_imc_3/events/cas_count_write").unlink()
    got = {e.name: e for e in report(cascade_lake, "x86_64").events}
    assert "uncore_imc_3 lists no event cas_count_write" in got["uncore_imc.cas_count_write"].reason


def test_an_unknown_cpu_has_no_table_entry(tmp_path):
    cpuinfo(tmp_path, "vendor_id\t: CentaurHauls\ncpu family\t: 6\nmodel\t\t: 15\n")
    r = report(tmp_path, "x86_64")
    assert r.models == () and "no memory-traffic events are tabulated" in b.no_model_reason(r)


def test_big_little_uses_the_target_cpus_pmu(tmp_path):
    cpuinfo(tmp_path, "CPU implementer\t: 0x41\nCPU part\t: 0xd03\n")
    pmu(tmp_path, "armv8_cortex_a53", 8, {"event": "config:0-15"}, cpus="0-3")
    pmu(tmp_path, "armv8_cortex_a72", 9, {"event": "config:0-15"}, cpus="4-5")
    got = {e.name: e for e in b.resolve(b.read_ident(tmp_path, "aarch64"),
                                        b.read_pmus(tmp_path), 5).events}
    assert got["l2d_cache_refill"].terms == (b.Term("armv8_cortex_a72", 9, 0x17, 0, 5),)


@pytest.mark.parametrize("values, formats, expected", [
    ({"event": 0x2E, "umask": 0x41}, {"event": "config:0-7", "umask": "config:8-15"}, 0x412E),
    ({"event": 0x1FF}, {"event": "config:0-7,32-35"}, 0xFF | (1 << 32)),
    ({"rdwrmask": 2}, {"rdwrmask": "config:8-9"}, 0x200),
])
def test_encode(values, formats, expected):
    fmts = {k: b.parse_format(v) for k, v in formats.items()}
    assert b.encode(values, fmts)["config"] == expected


def test_encode_refuses_a_value_wider_than_its_field():
    with pytest.raises(ValueError, match="does not fit"):
        b.encode({"rdwrmask": 4}, {"rdwrmask": b.parse_format("config:8-9")})


def test_this_host_reports_every_event_with_a_verdict():
    report = b.host_report(0)
    for e in report.events:
        assert e.available or e.reason
