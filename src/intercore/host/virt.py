"""Is this a virtual machine, and which hypervisor? A VM shares its last-level cache with
other tenants, so interference measured there can come from outside the experiment."""

from __future__ import annotations

from pathlib import Path

from .sysfs import read_text

# DMI product/vendor strings only hypervisors report (the only clue on many Arm guests).
_DMI_HYPERVISORS = ("QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Bochs", "Parallels",
                    "Virtual Machine", "Firecracker", "Cloud Hypervisor")
# Paravirtual clocksources name their hypervisor even where DMI is absent (Firecracker).
_CLOCKSOURCES = {"kvm-clock": "KVM", "xen": "Xen", "hyperv_clocksource_tsc_page": "Hyper-V"}


def _from_dmi(root: Path) -> str | None:
    dmi = root / "sys/devices/virtual/dmi/id"
    for field in ("product_name", "sys_vendor"):
        value = (read_text(dmi / field) or "").lower()
        for name in _DMI_HYPERVISORS:
            if name.lower() in value:
                return name
    return None


def _from_clocksource(root: Path) -> str | None:
    text = read_text(root / "sys/devices/system/clocksource/clocksource0/available_clocksource")
    return next((_CLOCKSOURCES[s] for s in (text or "").split() if s in _CLOCKSOURCES), None)


def detect_hypervisor(root: Path, cpu_flags: frozenset[str]) -> str | None:
    """A name for the hypervisor, "unknown" when only the CPU flag says so, None on bare metal."""
    named = read_text(root / "sys/hypervisor/type") or _from_dmi(root) or _from_clocksource(root)
    if named:
        return named
    return "unknown" if "hypervisor" in cpu_flags else None
