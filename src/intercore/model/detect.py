"""`model detect`: a platform model of the running host, from what sysfs tells.

sysfs gives the caches (level, type, size, ways, sets, line) and which CPUs share each; it
does not give the inclusion policy, the interconnect, the memory controller, channels or
banks. What it cannot tell is still in the model, marked `verified: false` with a note, and
chosen conservatively: a shared cache is taken as inclusive of the private data caches below
it (more channels, never fewer). On a virtual machine the shared caches and memory also
serve other tenants, so an `external` initiator uses them, and `topology_trust: low` says
that the vCPUs' placement on physical cores is unknown.

`build_model` is a pure function of the Topology (tests feed it fake sysfs trees through
`read_topology(root)`); `detect` does the reading.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..host.features import parse_meminfo
from ..base.parse import format_cpu_list
from ..host.sysfs import kernel_release, read_text
from ..host.topology import Cache, Topology, read_topology

SYSFS_CACHE = "/sys/devices/system/cpu/cpu*/cache/index*"
_OP = {"load": "ld", "store": "st"}


@dataclass(frozen=True)
class Ref:
    """A per-CPU name (`l1d_3`); written `l1d_[i]` when an entry is folded into a range."""

    stem: str
    index: int

    def __str__(self) -> str:
        return f"{self.stem}{self.index}"


@dataclass(frozen=True)
class _Level:
    stem: str              # l1d, l2, l3 ...
    cache: Cache
    name: str | Ref        # component name (a Ref when private to one CPU)
    users: tuple[int, ...]  # online CPUs using it


def _stem(cache: Cache) -> str:
    kind = {"Data": "d", "Instruction": "i"}.get(cache.type, "")
    return f"l{cache.level}{kind}"


def _levels(topo: Topology) -> dict[int, list[_Level]]:
    """Per online CPU, its caches from the lowest level up, each with its model name."""
    online = set(topo.online_cpus)
    groups: dict[str, list[Cache]] = {}
    for cache in topo.caches():
        if set(cache.shared_cpus) & online:
            groups.setdefault(_stem(cache), []).append(cache)
    per_cpu: dict[int, list[_Level]] = {c: [] for c in topo.online_cpus}
    for stem, caches in groups.items():
        users_of = [tuple(c for c in cache.shared_cpus if c in online) for cache in caches]
        private = all(len(u) == 1 for u in users_of)
        for j, (cache, users) in enumerate(zip(caches, users_of)):
            if private:
                name: str | Ref = Ref(f"{stem}_", users[0])
            else:
                name = stem if len(caches) == 1 else f"{stem}_{j}"
            for cpu in users:
                per_cpu[cpu].append(_Level(stem, cache, name, users))
    for levels in per_cpu.values():
        levels.sort(key=lambda lv: (lv.cache.level, lv.stem))
    return per_cpu


def _size(n: int | None) -> str | None:
    if n is None:
        return None
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def _clean(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None and v != []}


def build_model(topo: Topology, *, kernel: str | None = None, memory: int | None = None,
                now: datetime | None = None) -> dict[str, Any]:
    """The model of `topo` as plain data (the YAML document `detect` writes)."""
    now = now or datetime.now(timezone.utc)
    cpus = topo.online_cpus
    levels = _levels(topo)
    vm = topo.hypervisor is not None
    entries = _Entries()
    for cpu in cpus:
        entries.add("components", Ref("cpu", cpu), {"kind": "initiator", "role": "core",
                                                     "cpu": Ref("", cpu)})
    data_levels: dict[int, list[_Level]] = {c: [lv for lv in levels[c]
                                                if lv.cache.holds_data] for c in cpus}
    shared_data = sorted({str(lv.name) for c in cpus for lv in data_levels[c]
                          if len(lv.users) > 1})
    seen: set[str] = set()
    for cpu in cpus:
        for lv in levels[cpu]:
            key = str(lv.name)
            if key in seen:
                continue
            seen.add(key)
            entries.add("components", lv.name, _cache_entry(lv, cpu, data_levels))
    entries.plain("components", "fabric", {
        "kind": "transporter", "role": "bus", "verified": False,
        "note": "the interconnect from the cores to memory is not visible in sysfs"})
    entries.plain("components", "memctrl", {
        "kind": "transporter", "role": "controller", "verified": False,
        "note": "memory controller: channels and arbitration are not visible in sysfs"})
    entries.plain("components", "dram", _clean({
        "kind": "target", "role": "memory", "size": _size(memory), "verified": False,
        "note": "banks and channels are not visible in sysfs, so no bank split (R8)"}))
    for cpu in cpus:
        for lv in levels[cpu]:
            entries.link(f"{_tmpl(Ref('cpu', cpu), cpu)}>{_tmpl(lv.name, cpu)}", cpu)
        entries.link(f"{_tmpl(Ref('cpu', cpu), cpu)}>fabric", cpu)
    entries.plain_link("fabric>memctrl")
    entries.plain_link("memctrl>dram")
    for cpu in cpus:
        entries.add("apps", Ref("app", cpu), Ref("cpu", cpu))
        entries.add("data", Ref("mem", cpu), "dram")
        _transactions(entries, cpu, data_levels[cpu])
    assumptions = []
    if vm:
        _external(entries, shared_data, _top_shared(data_levels))
        assumptions.append({
            "premise": "the guest's CPUs run on distinct physical cores, so the caches sysfs "
                       "lists as private are private",
            "why": "the hypervisor may place vCPUs on SMT siblings of one core, which share "
                   "their L1 and L2; a guest cannot see this",
            "ref": f"hypervisor {topo.hypervisor} detected; sysfs shows the guest's view only"})
    model: dict[str, Any] = {
        "format": 1,
        "platform": "host",
        "title": f"{topo.model_name or 'unknown CPU'}, {len(cpus)} CPU"
                 + ("s" if len(cpus) != 1 else "")
                 + (f" ({topo.hypervisor} guest)" if vm else ""),
        "sources": {"sysfs": f"Linux sysfs {SYSFS_CACHE} and cpu*/topology, read by intercore "
                             f"{__version__}"},
        "topology_trust": "low" if vm else "high",
        "host": _clean({"model_name": topo.model_name, "hypervisor": topo.hypervisor,
                        "kernel": kernel, "cpus": format_cpu_list(cpus),
                        "detected_at": now.isoformat(timespec="seconds")}),
        **entries.render(),
    }
    if assumptions:
        model["assumptions"] = assumptions
    return model


def _top_shared(data_levels: dict[int, list[_Level]]) -> list[str]:
    """The shared data caches of the highest shared level (one per cluster or socket)."""
    shared = [lv for levels in data_levels.values() for lv in levels if len(lv.users) > 1]
    if not shared:
        return []
    top = max(lv.cache.level for lv in shared)
    return sorted({str(lv.name) for lv in shared if lv.cache.level == top})


def _cache_entry(lv: _Level, cpu: int, data_levels: dict[int, list[_Level]]
                 ) -> dict[str, Any]:
    cache = lv.cache
    entry: dict[str, Any] = {
        "kind": "target", "role": "cache", "level": cache.level, "size": _size(cache.size),
        "ways": cache.ways, "sets": cache.sets, "line": cache.line,
        "services": ["load"] if cache.type == "Instruction" else None,
        "private_to": Ref("cpu", cpu) if isinstance(lv.name, Ref) else None,
        "ref": "sysfs"}
    below = sorted({str(inner.name) for c in lv.users for inner in data_levels[c]
                    if inner.cache.level < cache.level})
    if len(lv.users) > 1 and cache.holds_data and below:
        entry["inclusive_of"] = below
        entry["verified"] = False
        entry["note"] = (f"shared by CPUs {format_cpu_list(lv.users)}; size, geometry and "
                         "sharing from sysfs; the inclusion policy is not in sysfs and is "
                         "assumed inclusive (conservative)")
    elif len(lv.users) > 1:
        entry["note"] = f"shared by CPUs {format_cpu_list(lv.users)} (sysfs shared_cpu_list)"
    return _clean(entry)


def _transactions(entries: _Entries, cpu: int, data_levels: list[_Level]) -> None:
    """Per CPU: a load and a store served by each data cache level, and by memory; each
    refills the levels below the one serving it, a store to memory also writes back."""
    app, home = Ref("app", cpu), Ref("mem", cpu)
    for depth, lv in enumerate(data_levels):
        below = [inner.name for inner in reversed(data_levels[:depth])]
        for op in ("load", "store"):
            entries.add("transactions", Ref("cpu", cpu), _clean({
                "app": app, "op": op, "target": lv.name, "refill": below or None}),
                suffix=f"_{lv.stem}_{_OP[op]}")
    refill = [lv.name for lv in reversed(data_levels)]
    for op in ("load", "store"):
        entries.add("transactions", Ref("cpu", cpu), _clean({
            "app": app, "op": op, "data": home, "refill": refill or None,
            "writeback": True if op == "store" else None}), suffix=f"_dram_{_OP[op]}")


def _external(entries: _Entries, shared: list[str], top: list[str]) -> None:
    entries.plain("components", "external", {
        "kind": "initiator", "role": "core", "verified": False,
        "note": "other tenants of the physical machine: unknown CPUs that share its caches "
                "and memory with this virtual machine"})
    entries.plain("apps", "tenants", "external")
    entries.plain("data", "tenant_mem", "dram")
    entries.plain_link("external>fabric")
    for name in shared:
        entries.plain_link(f"external>{name}")
    for name in top:
        for op in ("load", "store"):
            entries.plain("transactions", f"external_{name}_{_OP[op]}",
                          {"app": "tenants", "op": op, "target": name})
    for op in ("load", "store"):
        entries.plain("transactions", f"external_dram_{_OP[op]}", _clean({
            "app": "tenants", "op": op, "data": "tenant_mem", "refill": top or None,
            "writeback": True if op == "store" else None}))


# ---- folding per-CPU entries into ranges -----------------------------------------------------

def _tmpl(value: Any, index: int | None = None) -> Any:
    """Render a value; Refs of the entry's own index become `stem[i]` (folded form)."""
    if isinstance(value, Ref):
        return f"{value.stem}[i]" if value.index == index else str(value)
    if isinstance(value, dict):
        return {k: _tmpl(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [_tmpl(v, index) for v in value]
    return value


class _Entries:
    """Per-CPU entries that fold into `name[0-3]` keys when every CPU's entry is the same up
    to its own index; entries that differ (clusters, big.LITTLE) are written one by one."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, Any]] = {}
        self.folded: dict[str, dict[tuple[str, str, str], list[int]]] = {}
        self.links: dict[str, list[int]] = {}
        self.plain_links: list[str] = []

    def add(self, section: str, name: str | Ref, value: Any, suffix: str = "") -> None:
        if not isinstance(name, Ref):
            self.plain(section, name + suffix, _tmpl(value))
            return
        template = json.dumps(_tmpl(value, name.index), sort_keys=False)
        self.folded.setdefault(section, {}).setdefault(
            (name.stem, suffix, template), []).append(name.index)
        self.sections.setdefault(section, {})

    def plain(self, section: str, name: str, value: Any) -> None:
        self.sections.setdefault(section, {})[name] = value

    def link(self, template: str, cpu: int) -> None:
        self.links.setdefault(template, []).append(cpu)

    def plain_link(self, text: str) -> None:
        self.plain_links.append(text)

    def render(self) -> dict[str, Any]:
        all_cpus = sorted({i for group in self.folded.get("components", {}).values()
                           for i in group})
        out: dict[str, Any] = {}
        for section in ("components", "apps", "data", "transactions"):
            entries: dict[str, Any] = {}
            for (stem, suffix, template), indices in self.folded.get(section, {}).items():
                value = json.loads(template)
                if len(indices) == 1:
                    entries[f"{stem}{indices[0]}{suffix}"] = _literal(value, indices[0])
                else:
                    entries[f"{stem}[{format_cpu_list(indices)}]{suffix}"] = value
            entries.update(self.sections.get(section, {}))
            if entries:
                out[section] = entries
            if section == "components":
                out["links"] = self._links(all_cpus)
        return out

    def _links(self, all_cpus: list[int]) -> list[str]:
        out = []
        for template, cpus in self.links.items():
            if len(all_cpus) > 1 and sorted(cpus) == all_cpus and "[i]" in template:
                out.append(template)
            else:
                out.extend(template.replace("[i]", str(c)) for c in cpus)
        return out + self.plain_links


def _literal(value: Any, index: int) -> Any:
    """A folded template for one index, written out: `cpu[i]` -> `cpu0`, `"[i]"` -> 0."""
    if isinstance(value, str):
        text = value.replace("[i]", str(index))
        return int(text) if value == "[i]" else text
    if isinstance(value, dict):
        return {k: _literal(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [_literal(v, index) for v in value]
    return value


def to_yaml(model: dict[str, Any]) -> str:
    header = [f"# Platform model of this host, written by `intercore model detect` "
              f"(intercore {__version__}).",
              "# Cache facts come from sysfs; components marked `verified: false` hold what "
              "sysfs cannot tell",
              "# (inclusion, interconnect, memory controller, banks): review them against the "
              "processor's manual.",
              "# Analyse with: intercore model analyze FILE; validate with: intercore model "
              "validate FILE"]
    body = yaml.safe_dump(model, sort_keys=False, default_flow_style=None, width=100,
                          allow_unicode=True)
    return "\n".join(header) + "\n" + body


def detect(root: Path = Path("/"), *, now: datetime | None = None) -> dict[str, Any]:
    """Read the host under `root` and return its model as plain data."""
    topo = read_topology(root)
    meminfo = parse_meminfo(read_text(root / "proc/meminfo") or "")
    return build_model(topo, kernel=kernel_release(root), memory=meminfo.get("MemTotal"),
                       now=now)
