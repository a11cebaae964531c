"""Load a platform model file: expand ranges, check its shape, resolve and route everything.

Every error names the file, the line and the field (through intercore.base.yamlfile), including
the model-level ones pydantic cannot see: a link to an unknown component, a transaction whose
path does not connect, a name declared twice, a bad range, an unknown rule.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

from ..base import yamlfile
from ..base.errors import InputError
from . import ranges
from .platform import (Assumption, Component, Composite, Config, Data, Leg, NonInterference,
                       Path_, Platform, Routing, Transaction)
from .routing import RoutingError, route
from .rules import RULES
from .schema import OPS, ComponentSpec, ModelSpec

SECTIONS = ("components", "apps", "data", "transactions")

# Fields holding references, per section: one name, or a list of names (`X[*]` splices in).
_ONE = {"components": ("private_to", "cpu", "initiator", "target", "port"),
        "data": ("at",), "transactions": ("app", "data", "target"), "legs": ("data", "target")}
_MANY = {"components": ("inclusive_of", "prefetch_via", "walk_via"),
         "data": ("writers", "readers"), "transactions": ("refill", "via", "avoid"),
         "apps": ("runs_on", "reads", "writes"), "legs": ("via", "avoid")}
_ROUTING_NAMES = ("from", "to", "via", "avoid")
_ASSUMPTION_NAMES = ("tx", "app", "exclusive", "transparent")
_ASSUMPTION_SERVICES = ("interfere_with", "not_interfere_with", "interfere")


def load(path: str | Path, config: str | None = None) -> Platform:
    """Read a model file; `config` names one of its `configurations` to analyse."""
    raw = yamlfile.read_bytes(path)
    return loads(yamlfile.decode(raw, str(path)), str(path),
                 digest=hashlib.sha256(raw).hexdigest(), config=config)


def loads(text: str, source: str = "<model>", *, digest: str | None = None,
          config: str | None = None) -> Platform:
    doc, groups = expand(yamlfile.parse(text, source))
    spec = yamlfile.validate(doc, ModelSpec)
    digest = digest or hashlib.sha256(text.encode()).hexdigest()
    return _Builder(spec, doc, groups, config).build(digest, text)


def with_rules(platform: Platform, enable: Iterable[str] = (), disable: Iterable[str] = ()
               ) -> Platform:
    """The platform with rules switched on or off (the CLI's --enable / --disable)."""
    enable, disable = list(enable), list(disable)
    for rule_id in (*enable, *disable):
        if rule_id not in RULES:
            raise InputError(f"unknown rule {rule_id!r}; known: {', '.join(RULES)}",
                             field="--enable" if rule_id in enable else "--disable")
    chosen = (set(platform.rules) | set(enable)) - set(disable)
    return replace(platform, rules=tuple(r for r in RULES if r in chosen))


# ---- range expansion ---------------------------------------------------------------------------

def expand(doc: yamlfile.Document) -> tuple[yamlfile.Document, ranges.Groups]:
    """The document with ranged keys expanded and range references resolved; each expanded
    entry keeps the line of the key it came from. Also returns the groups (`core[...]` ->
    its indexes), with which the links are expanded later."""
    if not isinstance(doc.data, dict):
        return doc, {}
    data = dict(doc.data)
    lines = dict(doc.lines)
    origin: dict[str, tuple] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    plan: dict[str, list[tuple[str, str, int | None]]] = {}
    for section in SECTIONS:
        entries = data.get(section)
        if not isinstance(entries, dict):
            continue
        plan[section] = []
        for key in entries:
            loc = (section, key)
            try:
                members = ranges.expand_key(str(key))
            except ValueError as exc:
                raise doc.error(str(exc), loc) from None
            for name, index in members:
                if name in origin:
                    first = doc.line_of(origin[name])
                    raise doc.error(f"{name!r} is declared twice (first at line {first}); "
                                    "names are unique across components, apps, data and "
                                    "transactions", loc)
                origin[name] = loc
                plan[section].append((name, key, index))
            pat = ranges.pattern(str(key))
            if pat is not None:
                groups.setdefault(pat.group, []).extend(i for _, i in members)
    frozen = {g: tuple(v) for g, v in groups.items()}
    for section, entries in plan.items():
        out = {}
        for name, key, index in entries:
            loc = (section, key)
            out[name] = _expand_entry(doc, section, data[section][key], index, frozen, loc)
            for raw_loc, line in doc.lines.items():
                if raw_loc[:2] == loc:
                    lines[(section, name) + raw_loc[2:]] = line
        data[section] = out
    if isinstance(data.get("assumptions"), list):
        data["assumptions"] = [_expand_assumption(doc, a, frozen, ("assumptions", i))
                               for i, a in enumerate(data["assumptions"])]
    if isinstance(data.get("non_interfering"), list):
        data["non_interfering"] = [_expand_pairs(doc, a, frozen, ("non_interfering", i))
                                   for i, a in enumerate(data["non_interfering"])]
    if isinstance(data.get("routing"), list):
        data["routing"] = [
            {f: (_many(doc, v, None, frozen, ("routing", i, f)) if f in _ROUTING_NAMES else v)
             for f, v in r.items()} if isinstance(r, dict) else r
            for i, r in enumerate(data["routing"])]
    if isinstance(data.get("configurations"), dict):
        data["configurations"] = {
            name: ({f: (_disabled(doc, v, frozen, ("configurations", name, f))
                        if f == "disabled" else v) for f, v in c.items()}
                   if isinstance(c, dict) else c)
            for name, c in data["configurations"].items()}
    if isinstance(data.get("config"), dict):
        data["config"] = _expand_config(doc, data["config"], frozen)
    return yamlfile.Document(data, lines, doc.source), frozen


def _one(doc, text: Any, index: int | None, groups, loc) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return ranges.resolve_one(ranges.substitute(text, index), groups)
    except ValueError as exc:
        raise doc.error(str(exc), loc) from None


def _many(doc, items: Any, index: int | None, groups, loc) -> Any:
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return items
    out: list[Any] = []
    for j, item in enumerate(items):
        if not isinstance(item, str):
            out.append(item)
            continue
        try:
            out.extend(ranges.resolve(ranges.substitute(item, index), groups))
        except ValueError as exc:
            raise doc.error(str(exc), loc + (j,)) from None
    return out


def _expand_entry(doc, section: str, value: Any, index: int | None, groups, loc) -> Any:
    if isinstance(value, str):  # apps: `A: core0`; data: `d: bank0`
        return _one(doc, value, index, groups, loc)
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for field in _ONE.get(section, ()):
        if field in out:
            out[field] = _one(doc, out[field], index, groups, loc + (field,))
    for field in _MANY.get(section, ()):
        if field in out:
            out[field] = _many(doc, out[field], index, groups, loc + (field,))
    if section == "transactions" and isinstance(out.get("legs"), list):
        out["legs"] = [_expand_entry(doc, "legs", leg, index, groups, loc + ("legs", j))
                       for j, leg in enumerate(out["legs"])]
    return out


def _expand_pairs(doc, value: Any, groups, loc) -> Any:
    """Platform-level non_interfering: `[noc.load, "bank[*].store"]` -> one pair per name."""
    if not isinstance(value, dict) or not isinstance(value.get("pairs"), list):
        return value
    pairs: list[Any] = []
    for j, pair in enumerate(value["pairs"]):
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, str) for x in pair)):
            pairs.append(pair)  # the schema reports it
            continue
        left, right = (_service_refs(doc, [x], groups, loc + ("pairs", j)) for x in pair)
        pairs.extend([a, b] for a in left for b in right)
    return {**value, "pairs": pairs}


def _disabled(doc, items: Any, groups, loc) -> Any:
    """Components (ranges allowed) and links `a>b` a configuration switches off."""
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return items
    out: list[Any] = []
    for j, item in enumerate(items):
        if isinstance(item, str) and (">" in item or "<" in item):
            both = "<>" in item
            left, sep, right = item.partition("<>" if both else ">")
            try:
                pairs = _link_pairs(left.strip(), right.strip(), groups)
            except ValueError as exc:
                raise doc.error(str(exc), loc + (j,)) from None
            out.extend(f"{a}{'<>' if both else '>'}{b}" for a, b in pairs)
        elif isinstance(item, str):
            try:
                out.extend(ranges.resolve(item, groups))
            except ValueError as exc:
                raise doc.error(str(exc), loc + (j,)) from None
        else:
            out.append(item)
    return out


def _service_refs(doc, items: Any, groups, loc) -> Any:
    """`l1d[*].store` -> l1d0.store, l1d1.store, ...; `scu` stays a component."""
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return items
    out: list[Any] = []
    for j, item in enumerate(items):
        if not isinstance(item, str):
            out.append(item)
            continue
        base, dot, op = item.rpartition(".")
        if not dot or op not in OPS:
            base, op = item, ""
        try:
            names = ranges.resolve(base, groups)
        except ValueError as exc:
            raise doc.error(str(exc), loc + (j,)) from None
        out.extend(f"{n}.{op}" if op else n for n in names)
    return out


def _expand_assumption(doc, value: Any, groups, loc) -> Any:
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for field in _ASSUMPTION_NAMES:
        if field in out:
            out[field] = _many(doc, out[field], None, groups, loc + (field,))
    for field in _ASSUMPTION_SERVICES:
        if field in out:
            out[field] = _service_refs(doc, out[field], groups, loc + (field,))
    return out


def _expand_config(doc, value: dict, groups) -> dict:
    out = dict(value)
    parts = out.get("partitions")
    if isinstance(parts, dict):
        out["partitions"] = {
            cache: ({p: _many(doc, members, None, groups, ("config", "partitions", cache, p))
                     for p, members in spec.items()} if isinstance(spec, dict) else spec)
            for cache, spec in parts.items()}
    slices = out.get("time_slices")
    if isinstance(slices, dict):
        out["time_slices"] = {s: _many(doc, apps, None, groups, ("config", "time_slices", s))
                              for s, apps in slices.items()}
    return out


# ---- model-level checks and resolution -----------------------------------------------------

class _Builder:
    def __init__(self, spec: ModelSpec, doc: yamlfile.Document, groups: ranges.Groups,
                 config: str | None = None):
        self.spec = spec
        self.doc = doc
        self.groups = groups
        self.config = config
        self.components: dict[str, Component] = {}
        self.composites: dict[str, Composite] = {}
        self.where: dict[str, tuple] = {}  # component name -> loc of its declaration
        self.routing: list[Routing] = []
        self.applied: dict[str, dict[str, None]] = {}  # routing rule id -> transactions
        self.disabled: set[str] = set()  # components off in the analysed configuration
        self.disabled_links: set[tuple[str, str]] = set()
        self.dropped: dict[str, None] = {}  # transactions that configuration removes

    def error(self, message: str, *loc: Any) -> InputError:
        return self.doc.error(message, tuple(loc))

    # components ----------------------------------------------------------------------------
    def _add(self, component: Component, loc: tuple) -> None:
        taken = (self.components, self.spec.apps, self.spec.data, self.spec.transactions)
        if any(component.name in names for names in taken):
            raise self.error(f"{component.name!r} is declared twice; names are unique across "
                             "components, apps, data and transactions", *loc)
        self.components[component.name] = component
        self.where[component.name] = loc

    def _composite(self, name: str, c: ComponentSpec) -> None:
        loc = ("components", name)
        for field in ("initiator", "target", "port"):
            value = getattr(c, field)
            if not value or not ranges.NAME.match(value):
                raise self.error("a composite names its initiator, target and port "
                                 "(new component names)", *loc, field)
        for field in ("cpu", "size", "ways", "sets", "line", "level", "private_to", "banks"):
            if getattr(c, field) is not None:
                raise self.error("a composite only groups an initiator, a target and their "
                                 "port; put attributes on those", *loc, field)
        common = {"composite": name, "ref": c.ref, "verified": c.verified}
        self._add(Component(c.initiator, "initiator", role=c.role or "accelerator", **common),
                  loc + ("initiator",))
        self._add(Component(c.target, "target", role="registers", **common), loc + ("target",))
        self._add(Component(c.port, "transporter", role="port", **common), loc + ("port",))
        self.composites[name] = Composite(name, c.initiator, c.target, c.port, c.ref)

    def _component(self, name: str, c: ComponentSpec) -> None:
        loc = ("components", name)
        for field in ("initiator", "target", "port"):
            if getattr(c, field) is not None:
                raise self.error(f"{field} only belongs to a composite", *loc, field)
        allowed = {
            "cpu": c.kind == "initiator",
            "coherent": c.kind == "initiator",
            "private_to": c.kind in ("target", "transporter"),
            "inclusive_of": c.kind == "target",
            "rw_independent": c.kind == "transporter",
            "banks": c.kind == "target" and c.role == "memory",
            "prefetch_via": c.kind == "target",
            "walk_via": c.role == "tlb",
        }
        for field, ok in allowed.items():
            if getattr(c, field) and not ok:
                what = f"{c.role} {c.kind}" if c.role else c.kind
                raise self.error(f"{field} does not apply to a {what}", *loc, field)
        if not c.services:
            raise self.error("a component offers at least one of load, store", *loc, "services")
        self._add(Component(
            name, c.kind, role=c.role, cpu=c.cpu,
            coherent=c.coherent if c.coherent is not None else c.role == "core",
            size=c.size, ways=c.ways, sets=c.sets, line=c.line, level=c.level,
            private_to=c.private_to, inclusive_of=tuple(c.inclusive_of),
            rw_independent=c.rw_independent,
            banks=c.banks, prefetch_via=tuple(c.prefetch_via), walk_via=tuple(c.walk_via),
            services=tuple(dict.fromkeys(c.services)), ref=c.ref, verified=c.verified,
            note=c.note), loc)

    def _check_component_refs(self) -> None:
        for name, c in self.components.items():
            loc = self.where[name]
            if c.private_to is not None:
                self._expect(c.private_to, "initiator", *loc, "private_to")
            for j, inner in enumerate(c.inclusive_of):
                self._expect(inner, "target", *loc, "inclusive_of", j)
            for j, via in enumerate(c.prefetch_via):
                self._expect(via, ("transporter", "target"), *loc, "prefetch_via", j)
            for j, via in enumerate(c.walk_via):
                self._expect(via, "target", *loc, "walk_via", j)

    def _resolve(self, name: str, role: str) -> str:
        """A composite's name stands for its port in links, its initiator as an app's host
        and its target as a data home or transaction target."""
        composite = self.composites.get(name)
        if composite is None:
            return name
        return {"link": composite.port, "initiator": composite.initiator,
                "target": composite.target}[role]

    def _expect(self, name: str, kinds: str | tuple[str, ...], *loc: Any) -> Component:
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        found = self.components.get(name)
        if found is None:
            raise self.error(f"unknown component {name!r}", *loc)
        if found.kind not in kinds:
            raise self.error(f"{name!r} is a {found.kind}; expected a {' or '.join(kinds)}",
                             *loc)
        return found

    # links ---------------------------------------------------------------------------------
    def _links(self) -> tuple[tuple[str, str], ...]:
        out: dict[tuple[str, str], None] = {}
        for j, text in enumerate(self.spec.links):
            loc = ("links", j)
            both = "<>" in text
            left, sep, right = text.partition("<>" if both else ">")
            if not sep or not left.strip() or not right.strip() or ">" in right:
                raise self.error(f"{text!r} is not A>B or A<>B", *loc)
            try:
                pairs = _link_pairs(left.strip(), right.strip(), self.groups)
            except ValueError as exc:
                raise self.error(str(exc), *loc) from None
            for a, b in pairs:
                ends = []
                for end in (a, b):
                    if end not in self.components and end not in self.composites:
                        raise self.error(f"unknown component {end!r}", *loc)
                    ends.append(self._resolve(end, "link"))
                a, b = ends
                if a == b:
                    raise self.error(f"{text!r} links {a} to itself", *loc)
                for src, dst in ((a, b), (b, a)) if both else ((a, b),):
                    if self.components[src].kind == "target":
                        raise self.error(f"{src} is a target: it serves accesses and forwards "
                                         "none, so no link leaves it", *loc)
                    if self.components[dst].kind == "initiator":
                        raise self.error(f"{dst} is an initiator: accesses start there, so no "
                                         "link enters it", *loc)
                    out[(src, dst)] = None
        for composite in self.composites.values():
            out[(composite.initiator, composite.port)] = None
            out[(composite.port, composite.target)] = None
        return tuple(out)

    # software ------------------------------------------------------------------------------
    def _apps(self) -> dict[str, tuple[str, ...]]:
        out = {}
        plain = self.doc.data.get("apps") or {}
        for app, spec in self.spec.apps.items():
            resolved = []
            for j, host in enumerate(spec.runs_on):
                loc = ("apps", app) if isinstance(plain.get(app), str) else \
                    ("apps", app, "runs_on", j)
                host = self._resolve(host, "initiator")
                self._expect(host, "initiator", *loc)
                resolved.append(host)
            out[app] = tuple(dict.fromkeys(resolved))
        return out

    def _data(self, apps: dict[str, tuple[str, ...]]) -> dict[str, Data]:
        out = {}
        for name, d in self.spec.data.items():
            loc = ("data", name)
            at = self._resolve(d.at, "target")
            home = self._expect(at, "target", *loc, "at")
            if d.banks is not None:
                if not home.banks:
                    raise self.error(f"{at} declares no banks (give it role: memory and "
                                     "banks: N)", *loc, "banks")
                bad = [b for b in d.banks if b >= home.banks]
                if bad:
                    raise self.error(f"{at} has banks 0-{home.banks - 1}; got {bad}",
                                     *loc, "banks")
            for field in ("writers", "readers"):
                for j, app in enumerate(getattr(d, field)):
                    if app not in apps:
                        raise self.error(f"unknown app {app!r}", *loc, field, j)
            out[name] = Data(name, at, tuple(sorted(set(d.banks))) if d.banks else None,
                             tuple(d.writers), tuple(d.readers))
        return out

    # routing -------------------------------------------------------------------------------
    def _routing_rules(self) -> None:
        roles_of = {n: c.role for n, c in self.components.items()}
        for n, r in enumerate(self.spec.routing):
            loc = ("routing", n)
            rid = r.id or f"Rt{n + 1}"
            if any(x.id == rid for x in self.routing):
                raise self.error(f"routing rule id {rid!r} is used twice", *loc, "id")
            initiators: list[str] = []
            for j, name in enumerate(r.from_):
                name = self._resolve(name, "initiator")
                self._expect(name, "initiator", *loc, "from", j)
                initiators.append(name)
            for role in r.roles:
                matched = [c for c in self.components if roles_of[c] == role
                           and self.components[c].kind == "initiator"]
                if not matched:
                    raise self.error(f"no initiator has role {role}", *loc, "roles")
                initiators.extend(matched)
            targets = None
            if r.to:
                targets = []
                for j, name in enumerate(r.to):
                    name = self._resolve(name, "target")
                    self._expect(name, "target", *loc, "to", j)
                    targets.append(name)
            for field in ("via", "avoid"):
                for j, name in enumerate(getattr(r, field)):
                    self._expect(self._resolve(name, "link"), "transporter", *loc, field, j)
            both = set(r.via) & set(r.avoid)
            if both:
                raise self.error(f"{', '.join(sorted(both))} is both via and avoid", *loc)
            self.routing.append(Routing(
                rid, tuple(dict.fromkeys(initiators)),
                None if targets is None else tuple(dict.fromkeys(targets)),
                tuple(self._resolve(v, "link") for v in r.via),
                tuple(self._resolve(v, "link") for v in r.avoid), r.why, r.ref))
            self.applied[rid] = {}

    def _route(self, graph, src: str, dst: str, loc: tuple, via=(), avoid=(),
               tx: str | None = None) -> Path_:
        """The path from src to dst under the transaction's own constraints and every
        platform routing rule matching (src, dst); raises a file:line error otherwise."""
        successors, kinds = graph
        rules = [r for r in self.routing if src in r.initiators
                 and (r.targets is None or dst in r.targets)]
        via = tuple(dict.fromkeys((*via, *(v for r in rules for v in r.via))))
        avoid = tuple(dict.fromkeys((*avoid, *(a for r in rules for a in r.avoid))))
        clash = set(via) & set(avoid)
        if clash:
            who = ", ".join(r.id for r in rules)
            raise self.error(f"{', '.join(sorted(clash))} is both required and avoided on the "
                             f"path {src} -> {dst} (routing rule(s) {who} and the "
                             "transaction's own via/avoid)", *loc)
        ports = {c.port: (c.initiator, c.target) for c in self.composites.values()}
        try:
            path = route(successors, kinds, src, dst, via, avoid, ports)
        except RoutingError as exc:
            ids = f" (routing rule(s) {', '.join(r.id for r in rules)})" if rules else ""
            raise self.error(f"{exc}{ids}", *loc) from None
        if tx is not None:
            for r in rules:
                self.applied[r.id][tx] = None
        return path

    def _graph(self, links) -> tuple[dict[str, list[str]], dict[str, str]]:
        successors: dict[str, list[str]] = {}
        for a, b in links:
            successors.setdefault(a, []).append(b)
        return successors, {n: c.kind for n, c in self.components.items()}

    # transactions --------------------------------------------------------------------------
    def _leg(self, graph, initiator, data, spec, loc: tuple, tx: str) -> Leg:
        """One access: its target (or its data's home), service and path."""
        home = None
        if spec.data is not None:
            if spec.data not in data:
                raise self.error(f"unknown data {spec.data!r}", *loc, "data")
            home = data[spec.data].at
        target = self._resolve(spec.target, "target") if spec.target is not None else home
        tcomp = self._expect(target, "target", *loc, "target" if spec.target else "data")
        if spec.op not in tcomp.services:
            raise self.error(f"{target} offers no {spec.op} service (services: "
                             f"{', '.join(tcomp.services)})", *loc, "op")
        for field in ("via", "avoid"):
            for j, name in enumerate(getattr(spec, field)):
                self._expect(self._resolve(name, "link"), "transporter", *loc, field, j)
        path = self._route(graph, initiator, target, loc,
                           tuple(self._resolve(v, "link") for v in spec.via),
                           tuple(self._resolve(v, "link") for v in spec.avoid), tx)
        name = getattr(spec, "name", None) or f"{spec.op}_{target}"
        return Leg(name, spec.op, target, path,
                   (spec.data,) if spec.data is not None else ())

    def _explicit(self, graph, apps, data, name: str, t) -> Transaction:
        loc = ("transactions", name)
        if t.app not in apps:
            raise self.error(f"unknown app {t.app!r}", *loc, "app")
        hosts = apps[t.app]
        if len(hosts) != 1:
            raise self.error(f"{t.app} runs on {len(hosts)} initiators "
                             f"({', '.join(hosts)}); a written-out transaction belongs to "
                             "one: give it an app hosted by one initiator, or let the "
                             "transactions be derived from the app's reads and writes",
                             *loc, "app")
        initiator = hosts[0]
        specs = t.legs or [t]
        legs = []
        for n, spec in enumerate(specs):
            leg = self._leg(graph, initiator, data, spec,
                            loc + ("legs", n) if t.legs else loc, name)
            if any(x.name == leg.name for x in legs):
                raise self.error(f"two legs are named {leg.name!r}: give each a name",
                                 *loc, "legs", n)
            legs.append(leg)
        refills = []
        for j, cache in enumerate(t.refill):
            self._expect(cache, "target", *loc, "refill", j)
            if "store" not in self.components[cache].services:
                raise self.error(f"{cache} offers no store service to refill",
                                 *loc, "refill", j)
            refills.append(self._route(graph, initiator, cache, loc + ("refill", j),
                                       tx=name))
        writeback = None
        if t.writeback:
            first = legs[0]
            dest = data[first.data[0]].at if first.data else first.target
            if self.components[dest].role != "memory":
                raise self.error("a write-back goes to memory: give data hosted by a "
                                 "memory target", *loc, "writeback")
            writeback = first.path if dest == first.target else \
                self._route(graph, initiator, dest, loc + ("writeback",), tx=name)
        walks = self._walks(graph, initiator, loc, name) if t.page_walk else ()
        return Transaction(name, (t.app,), initiator, tuple(legs), tuple(refills),
                           writeback, walks, t.tlbi, t.note)

    def _derived(self, graph, apps, data, taken: set[str]) -> dict[str, Transaction]:
        """Transactions from the apps' reads and writes: one per (initiator, operation,
        path), shared by every app that makes that access (PHYLOG's atomic transactions:
        what identifies one is its path, not who issues it)."""
        merged: dict[tuple[str, str, str], dict] = {}
        for app, spec in self.spec.apps.items():
            for op, field in (("load", "reads"), ("store", "writes")):
                for j, name in enumerate(getattr(spec, field)):
                    loc = ("apps", app, field, j)
                    if name in data:
                        target, touched = data[name].at, (name,)
                    else:
                        target, touched = self._resolve(name, "target"), ()
                        if target not in self.components:
                            raise self.error(f"{name!r} is neither data nor a target",
                                             *loc)
                        self._expect(target, "target", *loc)
                    if op not in self.components[target].services:
                        raise self.error(f"{target} offers no {op} service", *loc)
                    for host in apps[app]:
                        entry = merged.setdefault((host, op, target), {
                            "apps": {}, "data": {}, "loc": loc})
                        entry["apps"][app] = None
                        entry["data"].update(dict.fromkeys(touched))
        out = {}
        for (host, op, target), entry in merged.items():
            name = f"{host}_{'ld' if op == 'load' else 'st'}_{target}"
            if name in taken:
                raise self.error(f"the derived transaction {name!r} clashes with a name "
                                 "declared elsewhere; rename that one", *entry["loc"])
            path = self._route(graph, host, target, entry["loc"], tx=name)
            leg = Leg(f"{op}_{target}", op, target, path, tuple(entry["data"]))
            out[name] = Transaction(name, tuple(entry["apps"]), host, (leg,), derived=True)
        return out

    def _transactions(self, apps, data, links) -> dict[str, Transaction]:
        graph = self._graph(links)
        out = {}
        for name, t in self.spec.transactions.items():
            tx = self._explicit(graph, apps, data, name, t)
            if t.used:
                out[name] = tx
        taken = {*self.components, *self.spec.apps, *self.spec.data, *self.spec.transactions}
        out.update(self._derived(graph, apps, data, taken))
        if self.config is not None:
            out = self._configured(out, links, apps, data)
        return out

    def _walks(self, graph, initiator: str, loc: tuple, tx: str) -> tuple[Path_, ...]:
        tlbs = [c for c in self.components.values()
                if c.role == "tlb" and c.private_to == initiator]
        if not tlbs:
            raise self.error(f"{initiator} has no TLB (a target with role: tlb and "
                             f"private_to: {initiator}) to walk for", *loc, "page_walk")
        targets = [t for tlb in tlbs for t in tlb.walk_via]
        if not targets:
            raise self.error(f"the TLB of {initiator} has no walk_via: the caches a page walk "
                             "reads", *loc, "page_walk")
        return tuple(self._route(graph, initiator, t, loc + ("page_walk",), tx=tx)
                     for t in dict.fromkeys(targets))

    # configurations ------------------------------------------------------------------------
    def _configuration(self, links) -> tuple[tuple[str, str], ...]:
        """Check every named configuration; for the one analysed, note what it switches off
        and return the links that remain."""
        known = set(self.components) | set(self.composites)
        switched: dict[str, set] = {}
        for name, c in self.spec.configurations.items():
            off: set = set()
            for j, item in enumerate(c.disabled):
                loc = ("configurations", name, "disabled", j)
                both = "<>" in item
                left, sep, right = item.partition("<>" if both else ">")
                if sep:
                    a, b = self._resolve(left, "link"), self._resolve(right, "link")
                    pairs = [(a, b), (b, a)] if both else [(a, b)]
                    for pair in pairs:
                        if pair not in links:
                            raise self.error(f"no link {pair[0]}>{pair[1]} to disable", *loc)
                        off.add(pair)
                elif item not in known:
                    raise self.error(f"unknown component {item!r}", *loc)
                else:
                    comp = self.composites.get(item)
                    off.update((comp.initiator, comp.target, comp.port) if comp else (item,))
            switched[name] = off
        if self.config is None:
            return links
        if self.config not in switched:
            known_names = ", ".join(switched) or "none declared"
            raise InputError(f"unknown configuration {self.config!r} (configurations: "
                             f"{known_names})", field="--config")
        off = switched[self.config]
        self.disabled = {x for x in off if isinstance(x, str)}
        self.disabled_links = {x for x in off if isinstance(x, tuple)}
        return tuple(lk for lk in links if lk not in self.disabled_links
                     and not (set(lk) & self.disabled))

    def _configured(self, transactions, links, apps, data) -> dict[str, Transaction]:
        """The transactions of the analysed configuration: re-routed over what remains on;
        those that need something switched off are dropped (and listed)."""
        kept_links = tuple(lk for lk in links if lk not in self.disabled_links
                           and not (set(lk) & self.disabled))
        graph = self._graph(kept_links)
        out = {}
        for name, tx in transactions.items():
            try:
                out[name] = self._reroute(graph, tx)
            except (RoutingError, InputError):
                self.dropped[name] = None
        return out

    def _reroute(self, graph, tx: Transaction) -> Transaction:
        if tx.initiator in self.disabled:
            raise RoutingError("initiator off")

        def again(path: Path_, **kw) -> Path_:
            if path[-1] in self.disabled:
                raise RoutingError("target off")
            if not (set(path) & self.disabled) and all(
                    (a, b) not in self.disabled_links for a, b in zip(path, path[1:])):
                return path
            return self._route(graph, path[0], path[-1], (), tx=None, **kw)

        spec = self.spec.transactions.get(tx.name)
        legs = []
        for n, leg in enumerate(tx.legs):
            own = (spec.legs[n] if spec is not None and spec.legs else spec)
            via = tuple(self._resolve(v, "link") for v in getattr(own, "via", ()) or ())
            avoid = tuple(self._resolve(v, "link") for v in getattr(own, "avoid", ()) or ())
            legs.append(replace(leg, path=again(leg.path, via=via, avoid=avoid)))
        return replace(tx, legs=tuple(legs), refills=tuple(again(p) for p in tx.refills),
                       writeback=None if tx.writeback is None else again(tx.writeback),
                       walks=tuple(again(p) for p in tx.walks))

    # configuration, rules, assumptions -------------------------------------------------------
    def _config(self, apps, transactions) -> Config:
        cfg = self.spec.config
        for cache, on in cfg.prefetch.items():
            comp = self._expect(cache, "target", "config", "prefetch", cache)
            if on and not comp.prefetch_via:
                raise self.error(f"{cache} has no prefetch_via: the components its prefetches "
                                 "traverse", "config", "prefetch", cache)
        partitions: dict[str, dict[str, str]] = {}
        for cache, parts in cfg.partitions.items():
            loc = ("config", "partitions", cache)
            self._expect(cache, "target", *loc)
            owner: dict[str, str] = {}
            for part, members in parts.items():
                for j, member in enumerate(members):
                    self._expect(member, "initiator", *loc, part, j)
                    if member in owner:
                        raise self.error(f"{member} is in partitions {owner[member]} and "
                                         f"{part}", *loc, part, j)
                    owner[member] = part
            users = {t.initiator for t in transactions.values()
                     if any(cache in p for p in (*(leg.path for leg in t.legs), *t.refills,
                                                 *t.walks))}
            missing = sorted(users - set(owner))
            if missing:
                raise self.error(f"{', '.join(missing)} use {cache} but are in no partition",
                                 *loc)
            partitions[cache] = owner
        slices: dict[str, str] = {}
        for slot, members in cfg.time_slices.items():
            for j, app in enumerate(members):
                if app not in apps:
                    raise self.error(f"unknown app {app!r}", "config", "time_slices", slot, j)
                if app in slices:
                    raise self.error(f"{app} is in time slices {slices[app]} and {slot}",
                                     "config", "time_slices", slot, j)
                slices[app] = slot
        return Config(dict(cfg.prefetch), partitions, slices)

    def _rules(self) -> tuple[str, ...]:
        if self.spec.rules is None:
            return tuple(RULES)
        for j, rule_id in enumerate(self.spec.rules):
            if rule_id not in RULES:
                raise self.error(f"unknown rule {rule_id!r}; known: {', '.join(RULES)}",
                                 "rules", j)
        return tuple(r for r in RULES if r in self.spec.rules)

    def _service(self, ref: str, loc: tuple) -> tuple[str, ...]:
        base, dot, op = ref.rpartition(".")
        if not dot or op not in OPS:
            base, op = ref, ""
        comp = self.components.get(self._resolve(base, "link"))
        if comp is None:
            raise self.error(f"unknown component {base!r} (services are written COMPONENT, "
                             "COMPONENT.load or COMPONENT.store)", *loc)
        ops = (op,) if op else comp.services
        for o in ops:
            if o not in comp.services:
                raise self.error(f"{comp.name} offers no {o} service", *loc)
        return tuple(f"{comp.name}.{o}" for o in ops)

    def _assumptions(self, apps, transactions) -> tuple[Assumption, ...]:
        out: list[Assumption] = []
        edits: dict[tuple[str, str], tuple[str, str]] = {}
        ids: set[str] = set()
        for n, a in enumerate(self.spec.assumptions):
            loc = ("assumptions", n)
            aid = a.id or f"A{n + 1}"
            if aid in ids:
                raise self.error(f"assumption id {aid!r} is used twice", *loc, "id")
            ids.add(aid)
            kind = a.kind
            subjects: list[str] = []
            for j, tx in enumerate(a.tx):
                if tx not in self.spec.transactions and tx not in transactions:
                    raise self.error(f"unknown transaction {tx!r}", *loc, "tx", j)
                subjects.append(tx)
            for j, app in enumerate(a.app):
                if app not in apps:
                    raise self.error(f"unknown app {app!r}", *loc, "app", j)
                subjects.extend(t.name for t in transactions.values() if app in t.apps)
            subjects = [t for t in subjects if t in transactions]  # `used: false` ones are out
            items: list[str] = []
            if kind in _ASSUMPTION_SERVICES:
                for j, ref in enumerate(getattr(a, kind)):
                    items.extend(self._service(ref, loc + (kind, j)))
                if kind == "interfere" and len(set(items)) < 2:
                    raise self.error("name at least two services or components that interfere",
                                     *loc, kind)
            elif kind == "exclusive":
                for j, name in enumerate(a.exclusive):
                    if name not in apps and name not in self.spec.transactions \
                            and name not in transactions:
                        raise self.error(f"{name!r} is neither an app nor a transaction",
                                         *loc, kind, j)
                    items.append(name)
                if len(set(items)) < 2:
                    raise self.error("name at least two apps or transactions", *loc, kind)
            elif kind == "transparent":
                for j, name in enumerate(a.transparent):
                    self._expect(name, ("transporter", "target"), *loc, kind, j)
                    items.append(name)
            for tx in subjects:
                for item in items if kind in ("interfere_with", "not_interfere_with") else ():
                    other = edits.get((tx, item))
                    if other and other[1] != kind:
                        raise self.error(f"{item} is both added to and removed from the "
                                         f"footprint of {tx} (see assumption {other[0]})",
                                         *loc, kind)
                    edits[(tx, item)] = (aid, kind)
            out.append(Assumption(aid, kind, tuple(dict.fromkeys(subjects)),
                                  tuple(dict.fromkeys(items)),
                                  a.premise or _statement(kind, subjects, items),
                                  a.why, a.ref, a.reviewer))
        return tuple(out)

    def _non_interfering(self, taken: set[str]) -> tuple[NonInterference, ...]:
        """Declared non-interference, on components (their own operations) and on the
        platform (any two services)."""
        out: list[NonInterference] = []
        declared = [(("components", name, "non_interfering", n), name, spec)
                    for name, c in self.spec.components.items()
                    for n, spec in enumerate(c.non_interfering)]
        declared += [(("non_interfering", n), None, spec)
                     for n, spec in enumerate(self.spec.non_interfering)]
        for loc, component, spec in declared:
            if component is not None and self.spec.components[component].kind == "composite":
                raise self.error("declare non-interference on the composite's parts at the "
                                 "platform level", *loc)
            nid = spec.id or f"N{len(out) + 1}"
            if nid in taken:
                raise self.error(f"id {nid!r} is already used by an assumption or another "
                                 "non-interference", *loc, "id")
            taken.add(nid)
            pairs: list[tuple[str, str]] = []
            for j, (a, b) in enumerate(spec.pairs):
                if component is not None:
                    comp = self.components[component]
                    sides = []
                    for x in (a, b):
                        if x not in comp.services:
                            raise self.error(f"{component} offers no {x!r} service "
                                             f"(services: {', '.join(comp.services)})",
                                             *loc, "pairs", j)
                        sides.append((f"{component}.{x}",))
                else:
                    sides = [self._service(x, loc + ("pairs", j)) for x in (a, b)]
                for x in sides[0]:
                    for y in sides[1]:
                        if x == y:
                            raise self.error(f"{x} always interferes with itself (a service "
                                             "used by two transactions is shared)",
                                             *loc, "pairs", j)
                        pairs.append((x, y))
            out.append(NonInterference(nid, tuple(dict.fromkeys(pairs)), spec.why, spec.ref,
                                       spec.reviewer, component))
        return tuple(out)

    def build(self, digest: str, text: str) -> Platform:
        for name, c in self.spec.components.items():
            if c.kind == "composite":
                self._composite(name, c)
            else:
                self._component(name, c)
        self._check_component_refs()
        links = self._links()
        self._routing_rules()
        apps = self._apps()
        data = self._data(apps)
        kept = self._configuration(links)
        transactions = self._transactions(apps, data, links)
        config = self._config(apps, transactions)
        spec = self.spec
        assumptions = self._assumptions(apps, transactions)
        non_interfering = self._non_interfering({a.id for a in assumptions})
        routing = tuple(replace(r, applied_to=tuple(t for t in self.applied[r.id]
                                                     if t in transactions))
                        for r in self.routing)
        return Platform(
            name=spec.platform, title=spec.title, source=self.doc.source, hash=digest,
            components=self.components, composites=self.composites, links=kept, apps=apps,
            data=data, transactions=transactions, config=config, rules=self._rules(),
            assumptions=assumptions, sources=dict(spec.sources),
            topology_trust=spec.topology_trust,
            host=spec.host.model_dump() if spec.host else None, text=text,
            non_interfering=non_interfering, routing=routing, configuration=self.config,
            disabled=tuple(sorted(self.disabled)) + tuple(
                f"{a}>{b}" for a, b in sorted(self.disabled_links)),
            dropped=tuple(self.dropped))


def _link_pairs(left: str, right: str, groups) -> list[tuple[str, str]]:
    """`core[i]>l1d[i]` -> one pair per index of core; `ddrc>bank[*]` -> one per bank."""
    sides = (left, right)
    indexed = [ranges.pattern(s) for s in sides]
    bound = [p for p in indexed if p is not None and p.spec == "i"]
    if not bound:
        return [(a, b) for a in ranges.resolve(left, groups) for b in ranges.resolve(right, groups)]
    index_sets = []
    for p in bound:
        if p.group not in groups:
            raise ValueError(f"no entry was declared as {p.prefix}[...]{p.suffix}")
        index_sets.append(groups[p.group])
    if len(index_sets) == 2 and set(index_sets[0]) != set(index_sets[1]):
        raise ValueError(f"[i] runs over different indexes on the two sides "
                         f"({bound[0].prefix}: {list(index_sets[0])}, "
                         f"{bound[1].prefix}: {list(index_sets[1])})")
    out = []
    for i in index_sets[0]:
        lhs, rhs = (ranges.substitute(s, i) for s in sides)
        out.extend((a, b) for a in ranges.resolve(lhs, groups)
                   for b in ranges.resolve(rhs, groups))
    return out


def _statement(kind: str, subjects: list[str], items: list[str]) -> str:
    who = ", ".join(subjects)
    what = ", ".join(items)
    return {
        "interfere_with": f"{who} also use(s) {what}",
        "not_interfere_with": f"{who} do(es) not use {what}",
        "interfere": f"{what} interfere with one another",
        "exclusive": f"{what} never run at the same time",
        "transparent": f"{what} cause(s) no interference (transparent)",
    }[kind]
