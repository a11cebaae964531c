"""CPU and cache topology from /sys/devices/system/cpu and /proc/cpuinfo.

`read_topology(root)` does all the reading; everything else here is a pure function of the
`Topology` it returns, so placement rules are tested on synthetic machines (see tests/host)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from ..base.errors import InputError
from .cpuinfo import read_cpuinfo
from ..base.parse import format_cpu_list, parse_cpu_list, parse_size
from .sysfs import read_int, read_text
from .virt import detect_hypervisor

CPU_DIR = "sys/devices/system/cpu"


@dataclass(frozen=True)
class Cache:
    level: int
    type: str  # "Data", "Instruction" or "Unified", as sysfs spells it
    size: int | None  # bytes
    ways: int | None
    sets: int | None
    line: int | None
    shared_cpus: tuple[int, ...]

    @property
    def holds_data(self) -> bool:
        return self.type != "Instruction"


@dataclass(frozen=True)
class Cpu:
    id: int
    online: bool
    core_id: int | None
    package_id: int | None
    caches: tuple[Cache, ...]
    # topology/thread_siblings_list: the hardware threads of this CPU's core, itself included
    # (None where sysfs does not say). A hypervisor may show every vCPU as a core of its own
    # and still place two on one core's threads: measure/regime/core.py probes for that.
    thread_siblings: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Topology:
    cpus: tuple[Cpu, ...]
    model_name: str | None
    vendor: str | None
    hypervisor: str | None
    flags: frozenset[str] = frozenset()

    @property
    def online_cpus(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.cpus if c.online)

    def cpu(self, cpu_id: int) -> Cpu | None:
        return next((c for c in self.cpus if c.id == cpu_id), None)

    def caches(self) -> tuple[Cache, ...]:
        """Each physical cache once (sysfs lists a shared cache under every CPU sharing it)."""
        seen: dict[Cache, None] = {}
        for cpu in self.cpus:
            seen.update(dict.fromkeys(cpu.caches))
        return tuple(sorted(seen, key=lambda c: (c.level, c.type, c.shared_cpus)))


# ---- reading -----------------------------------------------------------------------------------

def _read_cache(index: Path) -> Cache | None:
    level = read_int(index / "level")
    ctype = read_text(index / "type")
    if level is None or ctype is None:
        return None
    size = read_text(index / "size")
    shared = read_text(index / "shared_cpu_list")
    # 0 in ways/sets/line means the firmware did not say (arm64 ACPI PPTT often leaves them out).
    return Cache(
        level=level,
        type=ctype,
        size=parse_size(size) if size else None,
        ways=read_int(index / "ways_of_associativity") or None,
        sets=read_int(index / "number_of_sets") or None,
        line=read_int(index / "coherency_line_size") or None,
        shared_cpus=parse_cpu_list(shared) if shared else (),
    )


def _read_caches(cpu_dir: Path, cpu_id: int) -> tuple[Cache, ...]:
    indexes = sorted(cpu_dir.glob("cache/index[0-9]*"), key=lambda p: int(p.name[5:]))
    caches = (_read_cache(index) for index in indexes)
    # A cache without shared_cpu_list is at least this CPU's own.
    return tuple(c if c.shared_cpus else replace(c, shared_cpus=(cpu_id,)) for c in caches if c)


def _online_set(base: Path, cpu_ids: list[int]) -> set[int]:
    listed = read_text(base / "online")
    if listed is not None:
        return set(parse_cpu_list(listed))
    # No global list: fall back to per-CPU files; CPU0 often has none because it cannot go offline.
    return {i for i in cpu_ids if read_int(base / f"cpu{i}" / "online") != 0}


def _cpu_ids(base: Path) -> list[int]:
    ids = [int(m.group(1)) for p in base.glob("cpu*") if (m := re.fullmatch(r"cpu(\d+)", p.name))]
    if ids:
        return sorted(ids)
    present = read_text(base / "present")
    return list(parse_cpu_list(present)) if present else []


def _read_siblings(path: Path) -> tuple[int, ...] | None:
    text = read_text(path)
    return tuple(parse_cpu_list(text)) if text else None


def read_topology(root: Path = Path("/")) -> Topology:
    base = root / CPU_DIR
    ids = _cpu_ids(base)
    online = _online_set(base, ids)
    cpus = tuple(
        Cpu(
            id=i,
            online=i in online,
            core_id=read_int(base / f"cpu{i}/topology/core_id"),
            package_id=read_int(base / f"cpu{i}/topology/physical_package_id"),
            caches=_read_caches(base / f"cpu{i}", i),
            thread_siblings=_read_siblings(base / f"cpu{i}/topology/thread_siblings_list"),
        )
        for i in ids
    )
    info = read_cpuinfo(root)
    return Topology(cpus=cpus, model_name=info.model_name, vendor=info.vendor,
                    hypervisor=detect_hypervisor(root, info.flags), flags=info.flags)


# ---- pure helpers ------------------------------------------------------------------------------

def _caches_of(topo: Topology, cpu: int) -> tuple[Cache, ...]:
    found = topo.cpu(cpu)
    return found.caches if found else ()


def llc(topo: Topology, cpu: int | None = None) -> Cache | None:
    """Last-level cache: the highest-level unified cache of `cpu`, or of the whole machine
    (then the most widely shared, then the largest, one of that level)."""
    pool = _caches_of(topo, cpu) if cpu is not None else topo.caches()
    unified = [c for c in pool if c.type == "Unified"]
    if not unified:
        return None
    return max(unified, key=lambda c: (c.level, len(c.shared_cpus), c.size or 0))


def private_caches(topo: Topology, cpu: int) -> tuple[Cache, ...]:
    return tuple(c for c in _caches_of(topo, cpu) if c.shared_cpus == (cpu,))


def largest_private(topo: Topology, cpu: int) -> Cache | None:
    """The largest cache only `cpu` uses (data or unified): a working set that fits it sees no
    cross-core interference from cache sharing."""
    private = [c for c in private_caches(topo, cpu) if c.holds_data]
    return max(private, key=lambda c: (c.size or 0, c.level)) if private else None


def shared_caches(topo: Topology) -> tuple[Cache, ...]:
    return tuple(c for c in topo.caches() if len(c.shared_cpus) > 1)


class Placement(NamedTuple):
    victim: int
    aggressors: tuple[int, ...]

    @property
    def note(self) -> str | None:
        if not self.aggressors:
            return "only one online CPU: no CPU is left to run an aggressor beside the victim"
        return None


def core_siblings(topo: Topology, cpu: int) -> set[int]:
    """Hardware threads of `cpu`'s core (SMT), `cpu` itself included: sysfs's
    thread_siblings_list where it has one, else the CPUs with its core and package id."""
    me = topo.cpu(cpu)
    if me is None:
        return {cpu}
    if me.thread_siblings is not None:
        return set(me.thread_siblings) | {cpu}
    if me.core_id is None:
        return {cpu}
    return {c.id for c in topo.cpus
            if c.core_id == me.core_id and c.package_id == me.package_id}


def default_placement(topo: Topology) -> Placement:
    """Victim on the highest-numbered online CPU (away from CPU0, where housekeeping and most
    interrupts land); aggressors on the other online CPUs sharing its last-level cache, else on
    any other online CPU. SMT siblings are used only when nothing else shares the cache,
    because they also share the core and would mix core contention into cache interference.
    CPU0 comes last so that a caller taking only the first aggressor avoids it."""
    online = topo.online_cpus
    if not online:
        raise InputError("no online CPU found in sysfs", source="host topology")
    victim = max(online)
    others = [c for c in online if c != victim]
    cache = llc(topo, victim)
    sharing = [c for c in others if cache and c in cache.shared_cpus]
    siblings = core_siblings(topo, victim)
    chosen = [c for c in sharing if c not in siblings] or sharing or others
    return Placement(victim, tuple(sorted(chosen, key=lambda c: (c == 0, c))))


def validate_cpu(topo: Topology, cpu: int, option: str = "--cpu") -> int:
    """`cpu` if it exists and is online; otherwise an InputError naming `option`."""
    online = topo.online_cpus
    found = topo.cpu(cpu)
    listing = f"online CPUs: {format_cpu_list(online) or 'none'}"
    if found is None:
        raise InputError(f"CPU {cpu} does not exist on this host ({listing})", field=option)
    if not found.online:
        raise InputError(f"CPU {cpu} is offline ({listing})", field=option)
    return cpu
