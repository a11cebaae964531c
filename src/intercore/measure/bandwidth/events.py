"""Memory-traffic perf events per CPU model, resolved against this host's PMUs.

The table (data/bw_events.yaml) says, per CPU model, which events count memory traffic and
how many bytes one count stands for. Resolving an event is what perf(1) does with a name:
find the PMU directories under /sys/bus/event_source/devices, take the PMU's `type`, and
encode the event's fields through the PMU's `format/` files (or read a named event from its
`events/` directory). Everything here reads files below a root directory, so the tests run it
on fake sysfs trees of an Arm board, a Xeon and a Zen server; `open_check` then asks the
kernel whether each resolved event actually opens.

A missing event is never silently dropped: it carries the reason (no such PMU, no such named
event, a field the PMU's format lacks, or the errno of perf_event_open in words).
"""

from __future__ import annotations

import ctypes
import os
import fnmatch
import platform
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from ...base.parse import parse_cpu_list
from ...host.perf import (
    ATTR_DISABLED,
    SYSCALL_NUMBERS,
    PerfEventAttr,
    read_paranoid,
    reason_for_errno,
)
from ...host.sysfs import read_text

PMU_ROOT = "sys/bus/event_source/devices"

Direction = Literal["read", "write", "both"]
Scope = Literal["cpu", "package"]


# ---- the CPU ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CpuIdent:
    """What the table matches on."""

    arch: str
    vendor: str | None
    family: int | None   # x86 "cpu family"
    model: int | None    # x86 "model"
    part: int | None     # Arm "CPU part"

    def describe(self) -> str:
        if self.family is not None:
            return f"{self.vendor} family {self.family:#x} model {self.model:#x} ({self.arch})"
        if self.part is not None:
            return f"Arm part {self.part:#x} ({self.arch})"
        return f"{self.vendor or 'unknown vendor'} ({self.arch})"


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text, 0)
    except ValueError:
        return None


def parse_ident(cpuinfo: str, arch: str) -> CpuIdent:
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    return CpuIdent(arch=arch, vendor=fields.get("vendor_id"),
                    family=_int(fields.get("cpu family")), model=_int(fields.get("model")),
                    part=_int(fields.get("cpu part")))


def read_ident(root: Path = Path("/"), arch: str | None = None) -> CpuIdent:
    return parse_ident(read_text(root / "proc/cpuinfo") or "", arch or platform.machine())


# ---- the table ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class EventDef:
    name: str
    pmus: tuple[str, ...]                       # glob patterns of PMU directory names
    bytes: int | None                           # traffic per count; None: a count
    direction: Direction
    scope: Scope
    note: str
    named: str | None = None                    # an events/<named> file of the PMU
    fields: tuple[tuple[tuple[str, int], ...], ...] = ()  # one or more encodings, summed
    optional: bool = False                      # absent on many machines of the model


@dataclass(frozen=True)
class ModelDef:
    name: str
    description: str
    match: dict[str, Any]
    events: tuple[EventDef, ...]

    def matches(self, ident: CpuIdent) -> bool:
        m = self.match
        if "arch" in m and ident.arch not in m["arch"]:
            return False
        if "vendor" in m:
            vendors = m["vendor"] if isinstance(m["vendor"], list) else [m["vendor"]]
            if ident.vendor not in vendors:
                return False
        if "family_models" in m:
            ranges = m["family_models"].get(ident.family)
            if ranges is None or ident.model is None:
                return False
            return any(lo <= ident.model <= hi for lo, hi in ranges)
        return True


def _event(raw: dict) -> EventDef:
    encodings = raw.get("fields_sum") or ([raw["fields"]] if "fields" in raw else [])
    return EventDef(name=raw["name"], pmus=tuple(raw["pmu"]), bytes=raw.get("bytes"),
                    direction=raw["direction"], scope=raw["scope"], note=raw.get("note", ""),
                    named=raw.get("named"),
                    fields=tuple(tuple(sorted(e.items())) for e in encodings),
                    optional=bool(raw.get("optional", False)))


def parse_table(text: str) -> tuple[ModelDef, ...]:
    doc = yaml.safe_load(text)
    return tuple(ModelDef(m["name"], m.get("description", ""), m.get("match", {}),
                          tuple(_event(e) for e in m["events"])) for m in doc["models"])


@lru_cache(maxsize=1)
def table() -> tuple[ModelDef, ...]:
    text = resources.files("intercore.measure").joinpath("data/bw_events.yaml").read_text()
    return parse_table(text)


def models_for(ident: CpuIdent, models: tuple[ModelDef, ...] | None = None) -> list[ModelDef]:
    return [m for m in (models if models is not None else table()) if m.matches(ident)]


# ---- PMUs in sysfs ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FormatField:
    """`event: config:0-7,32-35` -> register 'config', bit ranges [(0, 7), (32, 35)]."""

    register: str
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Pmu:
    name: str
    type: int
    formats: dict[str, FormatField]
    events: dict[str, str]        # named events: "event=0x04,umask=0x03"
    cpus: tuple[int, ...] | None  # core PMUs of heterogeneous systems list their CPUs
    cpumask: tuple[int, ...]      # uncore PMUs: the CPU(s) to open them on


def parse_format(text: str) -> FormatField:
    register, _, bits = text.strip().partition(":")
    ranges = []
    for part in bits.split(","):
        lo, _, hi = part.partition("-")
        ranges.append((int(lo), int(hi or lo)))
    return FormatField(register.strip(), tuple(ranges))


def _dir_files(path: Path) -> dict[str, str]:
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return {}
    return {p.name: read_text(p) or "" for p in entries if p.is_file()}


def read_pmus(root: Path = Path("/")) -> dict[str, Pmu]:
    base = root / PMU_ROOT
    try:
        dirs = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return {}
    pmus = {}
    for d in dirs:
        type_ = _int(read_text(d / "type"))
        if type_ is None:
            continue
        formats = {}
        for name, text in _dir_files(d / "format").items():
            try:
                formats[name] = parse_format(text)
            except ValueError:
                continue
        cpus = read_text(d / "cpus")
        mask = read_text(d / "cpumask")
        pmus[d.name] = Pmu(d.name, type_, formats, _dir_files(d / "events"),
                           parse_cpu_list(cpus) if cpus else None,
                           parse_cpu_list(mask) if mask else ())
    return pmus


def parse_event_terms(text: str) -> dict[str, int]:
    """`event=0x04,umask=0x03` -> {"event": 4, "umask": 3}; a bare term means 1."""
    out = {}
    for term in text.split(","):
        key, eq, value = term.strip().partition("=")
        if key:
            out[key] = int(value, 0) if eq else 1
    return out


def encode(values: dict[str, int], formats: dict[str, FormatField]) -> dict[str, int]:
    """Field values into perf_event_attr registers (config, config1, config2), as perf does:
    the value's bits fill the format's ranges lowest first. KeyError names a field the PMU
    has no format for; ValueError a value wider than its field."""
    regs = {"config": 0, "config1": 0, "config2": 0}
    for name, value in values.items():
        fmt = formats[name]
        width = sum(hi - lo + 1 for lo, hi in fmt.ranges)
        if value >> width:
            raise ValueError(f"{name}={value:#x} does not fit its {width}-bit field")
        shift = 0
        for lo, hi in fmt.ranges:
            n = hi - lo + 1
            regs[fmt.register] |= ((value >> shift) & ((1 << n) - 1)) << lo
            shift += n
    return regs


# ---- resolution ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Term:
    """One perf_event_open: a PMU instance, its encoding, and the CPU it is opened on."""

    pmu: str
    type: int
    config: int
    config1: int
    cpu: int

    def spec(self) -> str:
        regs = f"{self.type}:{self.config:#x}" + (f":{self.config1:#x}" if self.config1 else "")
        return f"{regs}/cpu:{self.cpu}"


@dataclass(frozen=True)
class ResolvedEvent:
    model: str
    event: EventDef
    terms: tuple[Term, ...] = ()
    reason: str | None = None   # why it cannot be used; None when it can

    @property
    def available(self) -> bool:
        return self.reason is None

    @property
    def name(self) -> str:
        return self.event.name

    def source_spec(self) -> str:
        """ic-profile's --source: every term summed."""
        return "perf:" + "+perf:".join(t.spec() for t in self.terms)

    def to_dict(self) -> dict:
        return {"model": self.model, "name": self.name, "bytes": self.event.bytes,
                "direction": self.event.direction, "scope": self.event.scope,
                "note": self.event.note, "available": self.available, "reason": self.reason,
                "pmus": sorted({t.pmu for t in self.terms}),
                "spec": self.source_spec() if self.terms else None}


def _matching_pmus(ev: EventDef, pmus: dict[str, Pmu], cpu: int) -> list[Pmu]:
    found = [p for name, p in pmus.items() if any(fnmatch.fnmatchcase(name, g) for g in ev.pmus)]
    if ev.scope == "cpu":
        # A big.LITTLE system has one core PMU per cluster: only the target CPU's counts.
        found = [p for p in found if p.cpus is None or cpu in p.cpus][:1]
    return found


def resolve_event(model: str, ev: EventDef, pmus: dict[str, Pmu], cpu: int) -> ResolvedEvent:
    """The perf terms of `ev` on this host, counting CPU `cpu` for core events."""
    found = _matching_pmus(ev, pmus, cpu)
    if not found:
        where = ", ".join(ev.pmus)
        return ResolvedEvent(model, ev, reason=f"no PMU {where} in /{PMU_ROOT} (not exposed by "
                                               "this CPU, kernel or hypervisor)")
    terms = []
    for pmu in found:
        if ev.named is not None:
            text = pmu.events.get(ev.named)
            if text is None:
                return ResolvedEvent(model, ev, reason=f"PMU {pmu.name} lists no event "
                                                       f"{ev.named} (kernel too old or other "
                                                       "memory controller)")
            encodings = [parse_event_terms(text)]
        else:
            encodings = [dict(e) for e in ev.fields]
        for values in encodings:
            try:
                regs = encode(values, pmu.formats)
            except KeyError as exc:
                return ResolvedEvent(model, ev, reason=f"PMU {pmu.name} has no format field "
                                                       f"{exc.args[0]}")
            except ValueError as exc:
                return ResolvedEvent(model, ev, reason=f"PMU {pmu.name}: {exc}")
            on = cpu if ev.scope == "cpu" else (pmu.cpumask[0] if pmu.cpumask else 0)
            terms.append(Term(pmu.name, pmu.type, regs["config"], regs["config1"], on))
    return ResolvedEvent(model, ev, tuple(terms))


@dataclass(frozen=True)
class EventReport:
    """Every event of every model matching this CPU, resolved, for one target CPU."""

    ident: CpuIdent
    cpu: int
    models: tuple[str, ...]
    events: tuple[ResolvedEvent, ...]
    pmus: tuple[str, ...] = field(default=())

    @property
    def available(self) -> tuple[ResolvedEvent, ...]:
        return tuple(e for e in self.events if e.available)

    def to_dict(self) -> dict:
        return {"cpu": self.ident.describe(), "target_cpu": self.cpu,
                "models": list(self.models), "pmus": list(self.pmus),
                "events": [e.to_dict() for e in self.events]}


def resolve(ident: CpuIdent, pmus: dict[str, Pmu], cpu: int,
            models: tuple[ModelDef, ...] | None = None) -> EventReport:
    matched = models_for(ident, models)
    events = tuple(resolve_event(m.name, ev, pmus, cpu) for m in matched for ev in m.events)
    return EventReport(ident, cpu, tuple(m.name for m in matched), events, tuple(sorted(pmus)))


def no_model_reason(report: EventReport) -> str | None:
    if report.models:
        return None
    return (f"no memory-traffic events are tabulated for {report.ident.describe()}; add the "
            "CPU to src/intercore/measure/data/bw_events.yaml")


# ---- asking the kernel --------------------------------------------------------------------------

def _open_errno(term: Term, number: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = PerfEventAttr()
    attr.type = term.type
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = term.config
    attr.config1 = term.config1
    attr.flags = ATTR_DISABLED
    fd = libc.syscall(ctypes.c_long(number), ctypes.byref(attr), ctypes.c_int(-1),
                      ctypes.c_int(term.cpu), ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def open_check(event: ResolvedEvent, root: Path = Path("/"),
               machine: str | None = None) -> ResolvedEvent:
    """The event with the kernel's verdict: still available only if every term opens."""
    if not event.available:
        return event
    machine = machine or platform.machine()
    number = SYSCALL_NUMBERS.get(machine)
    if number is None:
        return ResolvedEvent(event.model, event.event, event.terms,
                             f"perf_event_open is not wired up for {machine} in intercore")
    for term in event.terms:
        err = _open_errno(term, number)
        if err:
            return ResolvedEvent(event.model, event.event, event.terms,
                                 f"{term.pmu}: {reason_for_errno(err, read_paranoid(root))}")
    return event


def host_report(cpu: int, root: Path = Path("/")) -> EventReport:
    """This host's table for target CPU `cpu`, each event checked by opening it."""
    report = resolve(read_ident(root), read_pmus(root), cpu)
    checked = tuple(open_check(e, root) for e in report.events)
    return EventReport(report.ident, cpu, report.models, checked, report.pmus)
