import pytest

from intercore.host.cpuinfo import parse_cpuinfo
from intercore.host.mounts import parse_mounts
from intercore.base.parse import (format_cpu_list, human_size, kernel_version, parse_cpu_list,
                                  parse_size)


@pytest.mark.parametrize("text, cpus", [
    ("0", (0,)),
    ("0-3", (0, 1, 2, 3)),
    ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)),
    ("0-3,8,10-11\n", (0, 1, 2, 3, 8, 10, 11)),
    ("3,1,2-2", (1, 2, 3)),          # out of order and degenerate range
    ("0-1,1-2", (0, 1, 2)),          # overlaps are merged
    ("", ()),                        # an empty mask prints as an empty line
    ("\n", ()),
    ("127", (127,)),
])
def test_parse_cpu_list(text, cpus):
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("bad", ["a", "1-", "-1", "3-1", "0-3:2", "1,,x"])
def test_parse_cpu_list_rejects_garbage(bad):
    with pytest.raises(ValueError, match="bad CPU list"):
        parse_cpu_list(bad)


@pytest.mark.parametrize("cpus, text", [
    ((), ""), ((0,), "0"), ((0, 1), "0-1"), ((0, 1, 2, 3, 8, 10, 11), "0-3,8,10-11"),
    ((5, 1, 3), "1,3,5"),
])
def test_format_cpu_list_round_trips(cpus, text):
    assert format_cpu_list(cpus) == text
    assert parse_cpu_list(text) == tuple(sorted(cpus))


@pytest.mark.parametrize("text, size", [
    ("48K", 48 * 1024), ("2048K", 2 * 1024 * 1024), ("266240K", 260 * 1024 * 1024),
    ("1M", 1 << 20), ("1G", 1 << 30), ("64", 64), ("2048 kB", 2 << 20), ("32KiB", 32768),
    ("48K\n", 48 * 1024),
])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["", "K", "12Q", "1.5M", "-4K"])
def test_parse_size_rejects_garbage(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize("release, version", [
    ("6.18.44-fc-v669", (6, 18)), ("5.10.103-v8+", (5, 10)), ("4.19.0", (4, 19)),
    ("5.2", (5, 2)), ("weird", (0, 0)), ("", (0, 0)),
])
def test_kernel_version(release, version):
    assert kernel_version(release) == version


def test_human_size():
    assert human_size(48 * 1024) == "48 KiB"
    assert human_size(266240 * 1024) == "260 MiB"
    assert human_size(1 << 30) == "1 GiB"
    assert human_size(1536) == "1536 B"  # 1.5 KiB is not exact in any larger unit
    assert human_size(None) == "?"


def test_cpuinfo_x86_first_block_wins():
    info = parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 207\n"
                         "model name\t: Xeon A\nflags\t\t: fpu hypervisor\n\n"
                         "processor\t: 1\nmodel name\t: Xeon B\n")
    assert info.model_name == "Xeon A"
    assert info.vendor == "GenuineIntel"
    assert info.flags == {"fpu", "hypervisor"}


def test_cpuinfo_arm_without_model_line():
    info = parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
                         "CPU part\t: 0xd03\n")
    assert info.vendor == "ARM"
    assert info.model_name == "Arm CPU part 0xd03"
    assert info.flags == {"fp", "asimd"}


def test_cpuinfo_empty():
    info = parse_cpuinfo("")
    assert (info.model_name, info.vendor, info.flags) == (None, None, frozenset())


def test_mounts_unescape_and_skip_short_lines():
    mounts = parse_mounts("cgroup2 /sys/fs/my\\040cgroup cgroup2 rw,nsdelegate 0 0\nbroken\n")
    assert len(mounts) == 1
    assert mounts[0].path == "/sys/fs/my cgroup"
    assert mounts[0].options == ("rw", "nsdelegate")
