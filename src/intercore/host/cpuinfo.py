"""/proc/cpuinfo: CPU model, vendor and feature flags, for x86 and Arm layouts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .sysfs import read_text

# Arm cpuinfo has no vendor string, only the MIDR implementer code.
_ARM_IMPLEMENTERS = {
    0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
    0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x53: "Samsung", 0x61: "Apple",
    0x6D: "Microsoft", 0xC0: "Ampere",
}


@dataclass(frozen=True)
class CpuInfo:
    model_name: str | None
    vendor: str | None
    flags: frozenset[str]


def _first_block(text: str) -> dict[str, str]:
    """Fields of the first processor block, plus machine-wide trailer lines (Arm's "Model")."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key not in fields:
            fields[key] = value.strip()
    return fields


def _arm_vendor(fields: dict[str, str]) -> str | None:
    code = fields.get("cpu implementer")
    if code is None:
        return None
    try:
        return _ARM_IMPLEMENTERS.get(int(code, 0), f"implementer {code}")
    except ValueError:
        return None


def _arm_model(fields: dict[str, str]) -> str | None:
    part = fields.get("cpu part")
    return f"Arm CPU part {part}" if part else None


def parse_cpuinfo(text: str) -> CpuInfo:
    fields = _first_block(text)
    model = (fields.get("model name") or fields.get("model") or fields.get("hardware")
             or _arm_model(fields))
    vendor = fields.get("vendor_id") or _arm_vendor(fields)
    flags = fields.get("flags") or fields.get("features") or ""
    return CpuInfo(model_name=model or None, vendor=vendor or None, flags=frozenset(flags.split()))


def read_cpuinfo(root: Path) -> CpuInfo:
    return parse_cpuinfo(read_text(root / "proc/cpuinfo") or "")
