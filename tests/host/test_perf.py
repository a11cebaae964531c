import ctypes
import errno
from pathlib import Path

import pytest
from fake_host import FakeHost

from intercore.host import perf

# Core-PMU names under /sys/bus/event_source/devices: x86 ("cpu", or cpu_core/cpu_atom on
# hybrid parts) and Arm ("armv8_pmuv3_0", "armv8_cortex_a72", "armv7_cortex_a7" ...).
CORE_PMU_PREFIXES = ("cpu", "armv8", "armv7")


def has_core_pmu() -> bool:
    devices = Path("/sys/bus/event_source/devices")
    return any(d.name.startswith(CORE_PMU_PREFIXES) for d in devices.iterdir())


def test_attr_matches_the_kernel_abi_size():
    assert ctypes.sizeof(perf.PerfEventAttr) == perf.PERF_ATTR_SIZE_VER5
    assert perf.PerfEventAttr.flags.offset == 40  # the bitfield word after read_format


def test_hw_cache_config_encoding():
    l1d, llc = (e for e in perf.EVENTS if e.type == perf.PERF_TYPE_HW_CACHE)
    assert l1d.config == 0x10000  # L1D | READ << 8 | MISS << 16
    assert llc.config == 0x10002


@pytest.mark.parametrize("err, expected", [
    (errno.ENOENT, "not supported by this CPU or hypervisor (no PMU)"),
    (errno.EOPNOTSUPP, "not supported by this CPU or hypervisor (no PMU)"),
    (errno.EACCES, "perf_event_paranoid=3 forbids it"),
    (errno.EPERM, "perf_event_paranoid=3 forbids it"),
    (errno.ENOSYS, "kernel built without perf events"),
])
def test_reason_for_errno(err, expected):
    assert perf.reason_for_errno(err, paranoid=3) == expected


def test_reason_for_unexpected_errno_names_it():
    reason = perf.reason_for_errno(errno.EINVAL, paranoid=2)
    assert "errno 22" in reason and "Invalid argument" in reason
    assert perf.reason_for_errno(errno.EPERM, None) == "perf_event_paranoid=? forbids it"


def test_paranoid_from_tree(tmp_path):
    FakeHost(tmp_path).proc("sys/kernel/perf_event_paranoid", "3")
    assert perf.read_paranoid(tmp_path) == 3
    assert perf.read_paranoid(tmp_path / "nowhere") is None


def test_unknown_architecture_is_reported_not_guessed():
    status = perf.probe_event(perf.EVENTS[0], paranoid=2, machine="sparc64")
    assert not status.available and "sparc64" in status.reason


def test_real_probe_on_this_host():
    statuses = {s.name: s for s in perf.probe_events()}
    assert set(statuses) == {e.name for e in perf.EVENTS}
    control = statuses[perf.CONTROL_EVENT]
    assert (control.available, control.reason) == (True, None)
    hardware = [s for name, s in statuses.items() if name != perf.CONTROL_EVENT]
    if has_core_pmu():
        assert any(s.available for s in hardware)
    else:
        for status in hardware:
            assert not status.available
            assert status.reason == "not supported by this CPU or hypervisor (no PMU)"


def test_probe_closes_its_descriptors():
    fds = len(list(Path("/proc/self/fd").iterdir()))
    for _ in range(20):
        perf.probe_events()
    assert len(list(Path("/proc/self/fd").iterdir())) == fds
