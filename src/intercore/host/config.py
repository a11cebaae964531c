"""The host's critical configuration settings (AMC 20-193 MCP_Resource_Usage_1), each with the
sha256 of its value, so that a dossier records what the measurements ran under and a later
comparison can name the setting that drifted rather than only say that something did.

Kernel release, cgroup and resctrl state come from the doctor's HostReport; the kernel
command line, the CPU frequency governors and SMT are read here, since no other stage needs
them. A file the kernel does not provide (no cpufreq on a VM, no SMT control) is recorded as
absent (None), never guessed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .report import HostReport, host_report
from .sysfs import read_text


def _governors(root: Path, cpus: tuple[int, ...]) -> dict[str, str | None]:
    base = root / "sys/devices/system/cpu"
    return {str(cpu): read_text(base / f"cpu{cpu}/cpufreq/scaling_governor") for cpu in cpus}


def value_hash(value: Any) -> str:
    """sha256 of a setting's canonical JSON: equal values, equal hashes, on any host."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def settings(report: HostReport | None = None, root: Path = Path("/")) -> dict[str, Any]:
    """Every recorded setting by name."""
    report = report or host_report(root)
    smt = root / "sys/devices/system/cpu/smt"
    full = report.to_dict()
    return {
        "kernel_release": report.kernel_release,
        "kernel_cmdline": read_text(root / "proc/cmdline"),
        "cpufreq_governors": _governors(root, report.topology.online_cpus),
        "smt": {"control": read_text(smt / "control"), "active": read_text(smt / "active")},
        "cgroups": full["cgroups"],
        "resctrl": full["resctrl"],
    }


def snapshot(root: Path = Path("/")) -> dict[str, Any]:
    """{"fingerprint", "settings": {name: {"value", "sha256"}}}: the fingerprint is the
    store's host id (hardware and kernel), the settings what that id does not cover."""
    report = host_report(root)
    return {"fingerprint": report.fingerprint(),
            "settings": {name: {"value": value, "sha256": value_hash(value)}
                         for name, value in settings(report, root).items()}}
