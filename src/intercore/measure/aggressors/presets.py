"""Aggressor specifications: the ten attacks of paper 002 by name, and free-form specs.

Footprints are never constants: they are derived from the caches detected on the host
(`Footprints.for_host`), so `BwRead(LLC)` means "fits the shared cache, not the private one"
on a Raspberry Pi 4 and on a 260 MiB-L3 server alike.

Spec grammar (one aggressor *set* per --aggressor option; its members run together):

    SET   := ITEM ("+" ITEM)*
    ITEM  := (PRESET | KIND ":" KEY=VALUE ("," KEY=VALUE)*) ["@" CPU]
    PRESET:= BwRead(LLC) | BwWrite(DRAM) | PLLRead(LLC) | BkPLLWrite(LLC) | ...
    KIND  := bw | pll | bankpll ;  KEY := op | size | mlp | rate | mask | value | platform
                                          | pattern | streams (bw)
    ITEM  := "cmd:" COMMAND LINE     an external stressor (stress-ng ...), paused with SIGSTOP
                                     while a register-only spinner holds its CPU

e.g. `BwWrite(LLC)`, `PLLRead(DRAM)@1`, `bw:op=rmw,size=4M,rate=2e6`, `BwRead(LLC)+PLLRead(DRAM)`,
`bw:op=rmw,size=32M,pattern=rand` (random lines, many misses in flight), `bw:op=write,size=128M,
streams=4` (four sequential streams in lockstep), `bw:op=nt,size=128M` (non-temporal stores).
"""

from __future__ import annotations

import math
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import yaml

from ...base.errors import InputError
from ...base.parse import format_cpu_list, human_size
from ...host.topology import Topology, largest_private, llc
from ...base.units import workload_size

KINDS = ("bw", "pll", "bankpll")
OPS = {"bw": ("read", "write", "rmw", "nt"), "pll": ("read", "write"),
       "bankpll": ("read", "write")}
MLP_RANGE = (1, 16)
PATTERNS = ("seq", "rand")
STREAMS_RANGE = (1, 16)

# IsolBench's pll runs with 6 lists in the published setups; enough to fill the line-fill
# buffers of the Arm cores paper 002 targets without exceeding the 16 the tool allows.
PRESET_MLP = 6

# name -> (kind, op, target level)
PRESETS: dict[str, tuple[str, str, str]] = {
    "BwRead(LLC)": ("bw", "read", "llc"),
    "BwWrite(LLC)": ("bw", "write", "llc"),
    "BwRead(DRAM)": ("bw", "read", "dram"),
    "BwWrite(DRAM)": ("bw", "write", "dram"),
    "PLLRead(LLC)": ("pll", "read", "llc"),
    "PLLWrite(LLC)": ("pll", "write", "llc"),
    "PLLRead(DRAM)": ("pll", "read", "dram"),
    "PLLWrite(DRAM)": ("pll", "write", "dram"),
    "BkPLLRead(LLC)": ("bankpll", "read", "llc"),
    "BkPLLWrite(LLC)": ("bankpll", "write", "llc"),
}


@dataclass(frozen=True)
class BankMap:
    name: str
    mask: int
    value: int
    selects: str
    source: str
    verified: bool


@dataclass(frozen=True)
class Footprints:
    """Working-set sizes for one host, derived from its private and shared caches."""

    private: int      # largest cache private to one CPU (bytes)
    shared: int       # last-level (shared) cache (bytes)
    line: int
    llc: int          # LLC-targeted aggressor: fits the shared cache, overflows the private one
    dram: int         # DRAM-targeted aggressor: twice the shared cache
    shared_victim: int  # a victim that fits the shared but not the private cache
    host_bank: BankMap | None

    @classmethod
    def for_host(cls, topo: Topology, cpu: int | None = None) -> "Footprints":
        shared = llc(topo)
        if shared is None or not shared.size:
            raise InputError("no cache hierarchy found in sysfs; give sizes explicitly "
                             "(e.g. bw:op=read,size=4M)", field="--aggressor")
        cpu = topo.online_cpus[0] if cpu is None else cpu
        private = largest_private(topo, cpu)
        private_size = (private.size or 0) if private is not None else 0
        line = shared.line or 64
        # Half the shared cache leaves room for the victim's lines; at least 4x the private
        # cache so the aggressor's traffic really leaves the core.
        llc_fp = max(4 * private_size, shared.size // 2)
        victim = min(max(4 * private_size, 2 * line), shared.size // 4)
        return cls(private=private_size, shared=shared.size, line=line, llc=llc_fp,
                   dram=2 * shared.size, shared_victim=victim,
                   host_bank=host_set_group(private, line))


def host_set_group(private, line: int) -> BankMap | None:
    """Set-group mask of the host's largest private cache: its set-index bits above 4 KiB.

    A BkPLL confined to 1/2^k of the private cache's sets overflows it with a small footprint
    and concentrates its misses on the matching sets of the shared cache.
    """
    if private is None or not private.sets or private.sets & (private.sets - 1):
        return None
    low = (line - 1).bit_length()
    high = low + (private.sets - 1).bit_length()  # one past the top set-index bit
    page_bits = 12
    if high <= page_bits:
        return None
    bits = min(high, page_bits + 5) - page_bits  # at most 32 groups: keeps the pool small
    mask = ((1 << bits) - 1) << page_bits
    return BankMap("host", mask, 0, "set-group",
                   f"derived from the L{private.level} geometry ({private.sets} sets, "
                   f"{line} B lines)", False)


@lru_cache(maxsize=1)
def bank_maps() -> dict[str, BankMap]:
    text = resources.files("intercore.measure").joinpath("data/bankmaps.yaml").read_text()
    raw = yaml.safe_load(text)["platforms"]
    return {name: BankMap(name, int(e["mask"]), int(e["value"]), e["selects"], e["source"],
                          bool(e["verified"])) for name, e in raw.items()}


@dataclass(frozen=True)
class AggressorSpec:
    """One aggressor process: what `ic-aggr` is told to run, and where."""

    kind: str
    op: str
    size: int
    label: str
    mlp: int = 1
    rate: float = 0.0
    bank: BankMap | None = None
    cpu: int | None = None
    command: tuple[str, ...] = ()  # kind "cmd": an external stressor such as stress-ng
    pattern: str = "seq"  # bw: sequential or pseudo-random lines
    streams: int = 1      # bw, seq: streams in lockstep

    def argv(self) -> list[str]:
        if self.kind == "cmd":
            return list(self.command)
        args = [self.kind, "--op", self.op, "--size", str(self.size)]
        if self.kind != "bw":
            args += ["--mlp", str(self.mlp)]
        if self.pattern != "seq":
            args += ["--pattern", self.pattern]
        if self.streams != 1:
            args += ["--streams", str(self.streams)]
        if self.rate:
            args += ["--rate", str(int(self.rate))]
        if self.bank is not None:
            args += ["--bank-mask", hex(self.bank.mask), "--bank-value", hex(self.bank.value)]
        return args

    def to_dict(self) -> dict:
        d = {"label": self.label, "kind": self.kind, "op": self.op, "size": self.size,
             "size_h": human_size(self.size), "cpu": self.cpu}
        if self.kind != "bw":
            d["mlp"] = self.mlp
        if self.pattern != "seq":
            d["pattern"] = self.pattern
        if self.streams != 1:
            d["streams"] = self.streams
        if self.rate:
            d["rate"] = self.rate
        if self.command:
            d["command"] = list(self.command)
        if self.bank is not None:
            d["bank"] = {"name": self.bank.name, "mask": hex(self.bank.mask),
                         "value": hex(self.bank.value), "selects": self.bank.selects,
                         "verified": self.bank.verified}
        return d


@dataclass(frozen=True)
class AggressorSet:
    """Aggressors that run together during the 'interference' half of each pair."""

    label: str
    members: tuple[AggressorSpec, ...]

    def to_dict(self) -> dict:
        return {"label": self.label, "members": [m.to_dict() for m in self.members]}


def preset(name: str, fp: Footprints) -> AggressorSpec:
    try:
        kind, op, target = PRESETS[name]
    except KeyError:
        raise InputError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}",
                         field="--aggressor") from None
    if kind == "bankpll":
        bank = fp.host_bank
        if bank is None:
            raise InputError("this host's private cache geometry gives no set group above the "
                             "page offset; use bankpll:mask=...,value=... or platform=NAME",
                             field="--aggressor")
        groups = 1 << bin(bank.mask).count("1")
        size = max(2 * fp.private // groups, min(4 * fp.private // groups,
                                                 fp.shared // groups // 2), fp.line * 64)
        return AggressorSpec(kind, op, size, name, mlp=PRESET_MLP, bank=bank)
    size = fp.llc if target == "llc" else fp.dram
    return AggressorSpec(kind, op, size, name, mlp=PRESET_MLP if kind == "pll" else 1)


_ITEM = re.compile(r"^(?P<body>[^@]+?)(?:@(?P<cpu>\d+))?$")


def _external(body: str) -> AggressorSpec:
    command = tuple(shlex.split(body.partition(":")[2]))
    if not command or shutil.which(command[0]) is None:
        raise InputError(f"{body!r}: command {command[0] if command else ''!r} not found",
                         field="--aggressor")
    return AggressorSpec("cmd", "", 0, body, command=command)


def _custom(body: str, fp: Footprints) -> AggressorSpec:
    kind, _, rest = body.partition(":")
    kind = kind.strip()
    if kind == "cmd":
        return _external(body)
    if kind not in KINDS:
        raise InputError(f"unknown aggressor {body!r}: expected a preset ({', '.join(PRESETS)}) "
                         f"or KIND:key=value with KIND one of {', '.join(KINDS)}",
                         field="--aggressor")
    keys: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        k, eq, v = pair.partition("=")
        if not eq:
            raise InputError(f"{pair!r} in {body!r} is not key=value", field="--aggressor")
        if k.strip() in keys:
            raise InputError(f"{k.strip()!r} given twice in {body!r}", field="--aggressor")
        keys[k.strip()] = v.strip()
    allowed = {"op", "size", "mlp", "rate", "mask", "value", "platform"}
    if kind == "bw":
        allowed |= {"pattern", "streams"}
    unknown = set(keys) - allowed
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))} in {body!r}"
                         + (" (pattern and streams are bw's)" if unknown & {"pattern",
                                                                            "streams"} else ""),
                         field="--aggressor")
    pattern = keys.get("pattern", "seq")
    if pattern not in PATTERNS:
        raise InputError(f"pattern={pattern!r} in {body!r}: choose {', '.join(PATTERNS)}",
                         field="--aggressor")
    streams = _int_in(keys.get("streams", "1"), "streams", body, *STREAMS_RANGE)
    if streams > 1 and pattern != "seq":
        raise InputError(f"streams={streams} in {body!r}: streams apply to pattern=seq only",
                         field="--aggressor")
    op = keys.get("op", "read")
    if op not in OPS[kind]:
        raise InputError(f"op={op!r} in {body!r}: {kind} supports {', '.join(OPS[kind])}",
                         field="--aggressor")
    size = workload_size(keys["size"], field="--aggressor") if "size" in keys else fp.llc
    mlp = _int_in(keys.get("mlp", "1"), "mlp", body, *MLP_RANGE)
    rate = _float_min(keys.get("rate", "0"), "rate", body)
    bank = None
    if kind == "bankpll":
        bank = _bank(keys, fp, body)
    return AggressorSpec(kind, op, size, body, mlp=mlp, rate=rate, bank=bank, pattern=pattern,
                         streams=streams)


def _bank(keys: dict[str, str], fp: Footprints, body: str) -> BankMap:
    if "platform" in keys:
        name = keys["platform"]
        if name == "host":
            if fp.host_bank is None:
                raise InputError("no host set group can be derived", field="--aggressor")
            return fp.host_bank
        maps = bank_maps()
        if name not in maps:
            raise InputError(f"platform={name!r}: known platforms are host, "
                             f"{', '.join(maps)}", field="--aggressor")
        return maps[name]
    if "mask" not in keys:
        if fp.host_bank is None:
            raise InputError(f"{body!r}: bankpll needs mask=0x..,value=0x.. or platform=NAME",
                             field="--aggressor")
        return fp.host_bank
    mask = _int_in(keys["mask"], "mask", body, 1, 2**63)
    value = _int_in(keys.get("value", "0"), "value", body, 0, 2**63)
    if value & ~mask:
        raise InputError(f"value={keys.get('value')} has bits outside mask={keys['mask']}",
                         field="--aggressor")
    return BankMap("cli", mask, value, "user", "command line", False)


def _int_in(text: str, key: str, body: str, lo: int, hi: int) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise InputError(f"{key}={text!r} in {body!r} is not an integer",
                         field="--aggressor") from None
    if not lo <= v <= hi:
        raise InputError(f"{key}={v} in {body!r} is outside {lo}..{hi}", field="--aggressor")
    return v


def _float_min(text: str, key: str, body: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{key}={text!r} in {body!r} is not a number",
                         field="--aggressor") from None
    if not 0 <= v < math.inf:
        raise InputError(f"{key}={text!r} in {body!r} must be a finite number >= 0",
                         field="--aggressor")
    return v


def parse_set(text: str, fp: Footprints, topo: Topology) -> AggressorSet:
    """Parse one --aggressor value into an aggressor set; CPUs are checked against the host."""
    members = []
    for raw in text.split("+"):
        m = _ITEM.match(raw.strip())
        if not m:
            raise InputError(f"cannot parse {raw!r}", field="--aggressor")
        body = m.group("body").strip()
        spec = preset(body, fp) if body in PRESETS or "(" in body else _custom(body, fp)
        if m.group("cpu") is not None:
            cpu = int(m.group("cpu"))
            if cpu not in topo.online_cpus:
                raise InputError(f"CPU {cpu} in {raw.strip()!r} is not an online CPU "
                                 f"(online: {format_cpu_list(topo.online_cpus)})",
                                 field="--aggressor")
            spec = replace(spec, cpu=cpu)
        members.append(spec)
    return AggressorSet(text.strip(), tuple(members))


def place(aset: AggressorSet, aggressor_cpus: list[int]) -> AggressorSet:
    """Give members without an explicit CPU the aggressor CPUs in order (one per CPU)."""
    free = [c for c in aggressor_cpus if c not in {m.cpu for m in aset.members}]
    placed = []
    for m in aset.members:
        if m.cpu is None:
            if not free:
                raise InputError(f"{aset.label!r} has more aggressors than free aggressor CPUs "
                                 f"({aggressor_cpus}); pin some with @CPU",
                                 field="--aggressor")
            m = replace(m, cpu=free.pop(0))
        placed.append(m)
    return replace(aset, members=tuple(placed))
