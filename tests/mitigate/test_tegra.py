"""Tegra X1 GPU throttling against a fake debugfs tree that acts as the throttle module does
(a written level is read back from throttleAmount; out-of-range values are stored masked, as
the register would hold them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from intercore.base.errors import HostUnsupported, InputError
from intercore.mitigate.bandwidth import tegra


class FakeModule(tegra.TegraThrottle):
    """The module's two write handlers: level -> throttleAmount, limit -> throttleLimit."""

    def _write_file(self, path: Path, text: str) -> None:
        value = int(text)
        if path.name == "throttle":
            (path.parent / "throttleAmount").write_text(f"{value & 0x1f}\n")
        elif path.name == "limit":
            (path.parent / "throttleLimit").write_text(f"{value & 0x1ff}\n")
        else:
            raise PermissionError(13, "Permission denied")


def nano(root: Path, module: bool = True) -> Path:
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/compatible").write_bytes(b"nvidia,p3450-0000\0nvidia,tegra210\0")
    debugfs = root / "sys/kernel/debug"
    (debugfs / "clk").mkdir(parents=True)
    if module:
        d = debugfs / "throttle"
        d.mkdir()
        for name, value in (("throttle", ""), ("limit", ""), ("throttleAmount", "0"),
                            ("throttleLimit", "0")):
            (d / name).write_text(value)
    return root


def test_set_and_read_back_the_gpu_throttle(tmp_path):
    root = nano(tmp_path)
    module = FakeModule(tegra.TegraThrottle.from_system(root).directory)
    assert module.state() == tegra.ThrottleState(0, 0)
    assert module.set(level=20, limit=511) == tegra.ThrottleState(20, 511)
    assert module.set(level=0).level == 0


def test_out_of_range_levels_are_bad_input(tmp_path):
    module = FakeModule(tegra.TegraThrottle.from_system(nano(tmp_path)).directory)
    with pytest.raises(InputError, match="0..31"):
        module.set(level=32)
    with pytest.raises(InputError, match="0..511"):
        module.set(limit=-1)


def test_a_module_that_does_not_take_the_level_is_reported(tmp_path):
    class Deaf(FakeModule):
        def _write_file(self, path: Path, text: str) -> None:
            pass

    module = Deaf(tegra.TegraThrottle.from_system(nano(tmp_path)).directory)
    with pytest.raises(HostUnsupported, match="reads back level 0, not 7"):
        module.set(level=7)


@pytest.mark.parametrize("make, reason", [
    (lambda root: root, "this machine is no device tree"),
    (lambda root: nano(root, module=False), "load the memory-controller throttle module"),
])
def test_what_the_host_lacks_is_said(tmp_path, make, reason):
    with pytest.raises(HostUnsupported, match=reason):
        tegra.TegraThrottle.from_system(make(tmp_path))


def test_not_a_tegra(tmp_path):
    (tmp_path / "proc/device-tree").mkdir(parents=True)
    (tmp_path / "proc/device-tree/compatible").write_bytes(b"raspberrypi,4-model-b\0brcm,bcm2711\0")
    with pytest.raises(HostUnsupported, match="raspberrypi,4-model-b, brcm,bcm2711"):
        tegra.TegraThrottle.from_system(tmp_path)


@pytest.mark.slow
def test_cli_exits_3_here():
    if tegra.TEGRA_X1 in tegra.soc_compatible():
        pytest.skip("this is a Tegra X1")
    got = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "tegra", "status"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 3 and "Tegra X1" in got.stderr
