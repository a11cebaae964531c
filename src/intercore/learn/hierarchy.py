"""The data-cache hierarchy the tracer's cache model simulates: this host's (sysfs) or a
target's (a platform model file), from L1 data outwards.

Features are only comparable between regions simulated on the same hierarchy, so a dataset
and a model carry the hierarchy they were built with, and prediction refuses another one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..base.errors import HostUnsupported, InputError
from ..base.parse import human_size, parse_size
from ..host.topology import Topology, read_topology


MEMORY = "DRAM"  # a working set beyond the last cache level


@dataclass(frozen=True)
class Level:
    name: str  # "L1d", "L2", "L3"
    size: int  # bytes
    ways: int


@dataclass(frozen=True)
class Hierarchy:
    levels: tuple[Level, ...]
    line: int
    source: str  # "host" or the platform model's name

    def stats_arg(self) -> str:
        """The --cache argument of ic-trace-stats."""
        return ",".join(f"{lv.size}:{lv.ways}" for lv in self.levels)

    def describe(self) -> str:
        return " / ".join(f"{lv.name} {human_size(lv.size)} {lv.ways}-way"
                          for lv in self.levels) + f", {self.line} B lines ({self.source})"

    def to_dict(self) -> dict[str, Any]:
        return {"levels": [asdict(lv) for lv in self.levels], "line": self.line,
                "source": self.source}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hierarchy:
        return cls(tuple(Level(**lv) for lv in d["levels"]), int(d["line"]), str(d["source"]))

    def home(self, nbytes: int) -> str:
        """Where a working set of `nbytes` lives: the innermost level that holds it, or
        MEMORY beyond the last."""
        return next((lv.name for lv in self.levels if nbytes <= lv.size), MEMORY)

    def same_geometry(self, other: Hierarchy) -> bool:
        return self.line == other.line and [(lv.size, lv.ways) for lv in self.levels] == \
            [(lv.size, lv.ways) for lv in other.levels]


def from_topology(topo: Topology, cpu: int | None = None) -> Hierarchy:
    """The data caches one CPU sees, innermost first."""
    cpu = topo.online_cpus[0] if cpu is None else cpu
    found = topo.cpu(cpu)
    caches = sorted((c for c in (found.caches if found else ()) if c.holds_data),
                    key=lambda c: c.level)
    levels, line = [], None
    for c in caches:
        if not c.size or not c.ways:
            continue
        levels.append(Level(f"L{c.level}{'d' if c.type == 'Data' else ''}", c.size, c.ways))
        line = line or c.line
    if not levels:
        raise HostUnsupported("sysfs shows no data cache with a size and associativity for "
                              f"CPU {cpu}; give the target's caches with --platform MODEL.yaml")
    return Hierarchy(tuple(levels), line or 64, "host")


def host() -> Hierarchy:
    return from_topology(read_topology())


def from_platform(path: Path) -> Hierarchy:
    """One cache per level from a platform model: the data caches a core's loads go through."""
    from ..model.loader import load

    platform = load(path)
    by_level: dict[int, Any] = {}
    for comp in sorted(platform.components.values(), key=lambda c: c.name):
        if comp.role != "cache" or comp.level is None or "store" not in comp.services:
            continue
        by_level.setdefault(comp.level, comp)
    levels, line = [], None
    for level in sorted(by_level):
        comp = by_level[level]
        if not comp.size or not comp.ways:
            raise InputError(f"cache {comp.name} needs size and ways for the cache model",
                             source=str(path), field="components")
        levels.append(Level(f"L{level}{'d' if level == 1 else ''}", comp.size, comp.ways))
        line = line or comp.line
    if not levels:
        raise InputError("the model has no data cache (role: cache with a level)",
                         source=str(path), field="components")
    return Hierarchy(tuple(levels), line or 64, platform.name)


def parse(text: str) -> Hierarchy:
    """`48K:12,1M:16,32M:16[@64]`: sizes and ways from L1 data outwards, optional line."""
    body, _, line_text = text.partition("@")
    levels = []
    for i, item in enumerate(p for p in body.split(",") if p.strip()):
        size, sep, ways = item.partition(":")
        try:
            levels.append(Level(f"L{i + 1}{'d' if i == 0 else ''}", parse_size(size.strip()),
                                int(ways)))
        except ValueError:
            raise InputError(f"cannot parse {item!r} as SIZE:WAYS (e.g. 48K:12,1M:16)",
                             field="--caches") from None
        if not sep or levels[-1].ways < 1:
            raise InputError(f"{item!r}: give SIZE:WAYS", field="--caches")
    if not levels:
        raise InputError("no cache level given", field="--caches")
    try:
        line = int(line_text) if line_text else 64
    except ValueError:
        raise InputError(f"line size {line_text!r} is not a number", field="--caches") from None
    return Hierarchy(tuple(levels), line, "given")


def resolve(platform: Path | None = None, caches: str | None = None) -> Hierarchy:
    if platform and caches:
        raise InputError("give --platform or --caches, not both", field="--caches")
    if platform:
        return from_platform(platform)
    if caches:
        return parse(caches)
    return host()
