"""The channel table (AMC 20-193 RU3) from an analysis: per channel the services, apps, cores,
transactions, the rule that produced it with its reference, the assumptions used and the
evidence validation gathered; then the interference-free list. Markdown, JSON and an HTML
section, each stamped with the model's hash, the tool version and the date.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator, Mapping

from .. import __version__
from ..base.parse import format_cpu_list
from .calculus import Analysis, Problem, bits, node_origins
from .counting import Counts, Symmetry, iter_groups, representative
from .draft import LEG, LOAD_STORE, PARTITIONS, PATH, SHARED, component_of, owner_of, pair
from .platform import Platform
from .rules import RULES, SplitRule

# The default relation of PHYLOG, reported like a rule so every row names its source.
BASE_RULES: dict[str, dict[str, str]] = {
    SHARED: {"id": SHARED, "code": "I0", "title": "one service used by both transactions",
             "reference": "PHYLOG interference calculus: I is reflexive (phylog.md §2)",
             "setting": "always"},
    LOAD_STORE: {"id": LOAD_STORE, "code": "I1",
                 "title": "load and store of one component interfere",
                 "reference": "PHYLOG default service interference (phylog.md §2)",
                 "setting": "always, unless a rule separates them"},
    PARTITIONS: {"id": PARTITIONS, "code": "C1", "title": "cache partitioning / colouring",
                 "reference": "configuration setting of the model (config.partitions)",
                 "setting": "config.partitions"},
}
# A channel that only an assumption of the model creates (interfere_with, interfere).
ASSUMED = "assumption"
BASE_RULES[ASSUMED] = {"id": ASSUMED, "code": "A", "title": "declared by the model",
                       "reference": "the model's assumptions (see the assumptions column)",
                       "setting": "assumptions: interfere_with / interfere"}


# What splits a component into finer service owners: partitions and the splitting rules.
SPLITS = frozenset({PARTITIONS, *(r.id for r in RULES.values() if isinstance(r, SplitRule))})


def rule_info(rule_id: str) -> dict[str, str]:
    if rule_id in RULES:
        return RULES[rule_id].to_dict()
    return BASE_RULES[rule_id]


@dataclass(frozen=True)
class Evidence:
    """What validation saw for one pair: its verdict with the paired slowdown behind it."""

    verdict: str  # confirmed | not observed | contradicted | unobservable
    delta: float
    ci: tuple[float, float]
    n: int
    regime: str
    victim: str
    aggressor: str
    invocation_id: int | None = None

    def text(self) -> str:
        lo, hi = ("?" if math.isnan(x) else f"{x:.2f}" for x in self.ci)
        where = f", invocation {self.invocation_id}" if self.invocation_id is not None else ""
        return (f"{self.verdict}: Δ {self.delta:.2f} [{lo}, {hi}] n={self.n}, "
                f"canary {self.regime}{where}")

    def to_dict(self) -> dict[str, Any]:
        ci = [None if math.isnan(x) else x for x in self.ci]
        return {"verdict": self.verdict, "delta": self.delta, "delta_ci": ci, "n": self.n,
                "regime": self.regime, "victim": self.victim, "aggressor": self.aggressor,
                "invocation_id": self.invocation_id}


EvidenceMap = Mapping[frozenset[str], Evidence]


@dataclass(frozen=True)
class ChannelRow:
    id: str
    transactions: tuple[str, ...]
    apps: tuple[str, ...]
    initiators: tuple[str, ...]
    services: tuple[str, ...]
    components: tuple[str, ...]
    rule: str
    rules: tuple[str, ...]
    assumptions: tuple[str, ...]
    unverified: tuple[str, ...]
    evidence: Evidence | None = None
    legs: tuple[str, ...] = ()  # `TX.LEG` of the multi-path transactions on the channel
    count: int = 1  # the k-sets this row stands for (a pattern at large k)
    groups: tuple[str, ...] = ()  # the groups of interchangeable transactions of a pattern

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "count": self.count, "groups": list(self.groups),
                "services": list(self.services),
                "components": list(self.components), "transactions": list(self.transactions),
                "apps": list(self.apps), "initiators": list(self.initiators),
                "legs": list(self.legs),
                "rule": self.rule, "reference": rule_info(self.rule)["reference"],
                "rules": list(self.rules), "assumptions": list(self.assumptions),
                "unverified": list(self.unverified),
                "evidence": self.evidence.to_dict() if self.evidence else None}


@dataclass(frozen=True)
class FreeRow:
    transactions: tuple[str, ...]
    apps: tuple[str, ...]
    initiators: tuple[str, ...]
    relies_on: tuple[str, ...]  # rules, settings and assumptions without which it would not be
    unverified: tuple[str, ...]
    evidence: Evidence | None = None
    count: int = 1
    groups: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "groups": list(self.groups),
                "transactions": list(self.transactions), "apps": list(self.apps),
                "initiators": list(self.initiators), "relies_on": list(self.relies_on),
                "unverified": list(self.unverified),
                "evidence": self.evidence.to_dict() if self.evidence else None}


@dataclass(frozen=True)
class ChannelTable:
    platform: str
    title: str | None
    source: str
    hash: str
    tool_version: str
    date: str
    k: int
    rules: tuple[str, ...]
    counts: Mapping[str, int]
    channels: tuple[ChannelRow, ...]
    free: tuple[FreeRow, ...]
    assumptions: tuple[dict, ...]
    warnings: tuple[str, ...] = ()
    by_resource: tuple[tuple[tuple[str, ...], int], ...] = field(default=())
    non_interfering: tuple[dict, ...] = ()
    routing: tuple[dict, ...] = ()
    configuration: str | None = None
    # at large k: rows are patterns; how many are shown of how many, the redundant sets by
    # their connected parts, and the classes of interchangeable initiators
    patterns: Mapping[str, Mapping[str, int]] | None = None
    redundant: tuple[dict, ...] = ()
    classes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.platform, "title": self.title, "source": self.source,
                "hash": self.hash, "tool_version": self.tool_version, "date": self.date,
                "configuration": self.configuration,
                "k": self.k, "rules": [rule_info(r) for r in self.rules],
                "counts": dict(self.counts),
                "channels": [c.to_dict() for c in self.channels],
                "free": [f.to_dict() for f in self.free],
                "by_resource": [{"components": list(c), "channels": n}
                                for c, n in self.by_resource],
                "non_interfering": list(self.non_interfering), "routing": list(self.routing),
                "patterns": None if self.patterns is None else
                {k: dict(v) for k, v in self.patterns.items()},
                "redundant": list(self.redundant), "classes": list(self.classes),
                "assumptions": list(self.assumptions), "warnings": list(self.warnings)}

    def to_markdown(self) -> str:
        return render_markdown(self)

    def to_html_section(self) -> str:
        return _template("channels.html.j2").render(t=self, rule_info=rule_info,
                                                      compact=compact)

    def to_html_page(self) -> str:
        return _template("page.html.j2").render(t=self, section=self.to_html_section())


def _channel_row(problem: Problem, platform: Platform, members: tuple[int, ...],
                 channel: int, row_id: str, evidence: EvidenceMap, count: int = 1,
                 groups: tuple[str, ...] = ()) -> ChannelRow:
    txs = platform.transactions
    assumption_ids = {a.id for a in platform.assumptions}
    names = tuple(problem.transactions[i] for i in members)
    primary, origins = _channel_origins(problem, members)
    services = problem.names(channel, problem.services)
    components = tuple(dict.fromkeys(component_of(s) for s in services))
    rules = tuple(r for r in (*RULES, PARTITIONS, SHARED, LOAD_STORE) if r in origins)
    return ChannelRow(
        id=row_id, transactions=names, apps=_apps(txs, names), legs=_legs(problem, members),
        initiators=tuple(txs[t].initiator for t in names), services=services,
        components=components, rule=primary, rules=rules,
        assumptions=tuple(a for a in sorted(origins) if a in assumption_ids),
        unverified=platform.unverified(components), evidence=evidence.get(frozenset(names)),
        count=count, groups=groups)


def _free_row(problem: Problem, platform: Platform, members: tuple[int, ...],
              evidence: EvidenceMap, count: int = 1, groups: tuple[str, ...] = ()) -> FreeRow:
    txs = platform.transactions
    premises = tuple(a.id for a in platform.assumptions if a.kind == "premise")
    names = tuple(problem.transactions[i] for i in members)
    relies, shared = _free_reasons(problem, members)
    return FreeRow(
        transactions=names, apps=_apps(txs, names),
        initiators=tuple(txs[t].initiator for t in names),
        relies_on=tuple(dict.fromkeys((*relies, *premises))),
        unverified=platform.unverified(shared), evidence=evidence.get(frozenset(names)),
        count=count, groups=groups)


def _table(problem: Problem, platform: Platform, k: int, counts: Mapping[str, int],
           channels: list[ChannelRow], free: list[FreeRow], date: datetime | None,
           **extra: Any) -> ChannelTable:
    by_resource: Counter = Counter()
    for c in channels:
        by_resource[c.components] += c.count
    when = (date or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    warnings = _warnings(platform)
    if k > len(platform.initiators):
        warnings.append(f"k={k} exceeds the {len(platform.initiators)} initiators of the "
                        "model: transactions of one initiator never run together, so no "
                        f"{k}-set exists")
    return ChannelTable(
        platform=platform.name, title=platform.title, source=platform.source,
        hash=platform.hash, tool_version=__version__, date=when, k=k,
        rules=tuple(sorted(platform.rules, key=lambda r: RULES[r].code)),
        counts=dict(counts), channels=tuple(channels),
        free=tuple(free), assumptions=tuple(a.to_dict() for a in platform.assumptions),
        warnings=tuple(warnings),
        by_resource=tuple(sorted(by_resource.items(), key=lambda kv: (-kv[1], kv[0]))),
        non_interfering=tuple(d.to_dict() for d in problem.draft.non_interfering.values()),
        routing=tuple(r.to_dict() for r in platform.routing),
        configuration=platform.configuration, **extra)


def build_table(analysis: Analysis, platform: Platform, evidence: EvidenceMap | None = None,
                *, date: datetime | None = None) -> ChannelTable:
    """The table of an enumerated analysis: one row per k-set."""
    evidence = evidence or {}
    problem = analysis.problem
    channels = [_channel_row(problem, platform, members, channel, f"C{n}", evidence)
                for n, (members, channel) in enumerate(analysis.interference, start=1)]
    free = [_free_row(problem, platform, members, evidence) for members in analysis.free]
    return _table(problem, platform, analysis.k, analysis.counts, channels, free, date)


def group_names(problem: Problem, sym: Symmetry, support: int) -> tuple[str, ...]:
    """Each group of a support as its transactions folded: `t[0-3]_2`."""
    return tuple(fold([problem.transactions[t] for t in g.transactions])
                 for g in iter_groups(sym, support))


def _set_channel(problem: Problem, members: tuple[int, ...]) -> int:
    channel = 0
    for x, a in enumerate(members):
        for b in members[x + 1:]:
            if problem.interferes(a, b):
                channel |= problem.pair_channel(a, b)
    return channel


def pattern_rows(problem: Problem, platform: Platform, counted: Counts, k: int,
                 evidence: EvidenceMap | None = None, limit: int | None = None
                 ) -> Iterator[ChannelRow | FreeRow | dict]:
    """The rows of a large-k table, most frequent first: one per interference pattern and
    per free pattern (sets that are the same up to swapping interchangeable initiators,
    with one representative), then the redundant sets by their connected parts."""
    evidence = evidence or {}
    sym = counted.symmetry
    itf = sorted((p for p in counted.itf_patterns if p.counts[k]),
                 key=lambda p: (-p.counts[k], p.support))
    for n, p in enumerate(itf[:limit], start=1):
        members = representative(sym, p.support, k)
        yield _channel_row(problem, platform, members, _set_channel(problem, members),
                           f"P{n}", evidence, p.counts[k], group_names(problem, sym, p.support))
    free = sorted((p for p in counted.free_patterns if p.counts[k]),
                  key=lambda p: (-p.counts[k], p.support))
    single = frozenset(v for v in range(len(sym.groups)) if sym.self_linked[v])
    for p in free[:limit]:
        members = representative(sym, p.support, k, single)
        yield _free_row(problem, platform, members, evidence, p.counts[k],
                        group_names(problem, sym, p.support))
    parts = sorted(((key, c[k]) for key, c in counted.redundant_parts.items() if c[k]),
                   key=lambda kv: (-kv[1], kv[0]))
    for key, n in parts[:limit]:
        yield {"parts": [{"groups": list(group_names(problem, sym, part)),
                          "interference": bin(part).count("1") > 1
                          or any(sym.self_linked[v] for v in bits(part))}
                         for part in key], "count": n}


def build_pattern_table(problem: Problem, platform: Platform, counted: Counts, k: int,
                        evidence: EvidenceMap | None = None, *, rows: int = 200,
                        date: datetime | None = None) -> ChannelTable:
    """The table at large k: exact counts, and the `rows` most frequent patterns of each
    kind (the streaming writers give all of them)."""
    channels, free, redundant = [], [], []
    for row in pattern_rows(problem, platform, counted, k, evidence, rows):
        if isinstance(row, ChannelRow):
            channels.append(row)
        elif isinstance(row, FreeRow):
            free.append(row)
        else:
            redundant.append(row)
    shown = {"interference": len(channels), "free": len(free), "redundant": len(redundant)}
    total = {"interference": sum(1 for p in counted.itf_patterns if p.counts[k]),
             "free": sum(1 for p in counted.free_patterns if p.counts[k]),
             "redundant": sum(1 for c in counted.redundant_parts.values() if c[k])}
    return _table(problem, platform, k, counted.at(k), channels, free, date,
                  patterns={"shown": shown, "total": total}, redundant=tuple(redundant),
                  classes=tuple(fold(list(c)) for c in counted.symmetry.classes))


_DIGITS = re.compile(r"(\d+)")


def fold(names: list[str]) -> str:
    """`t0_2, t1_2, t2_2` -> `t[0-2]_2` when the names differ in one number; else joined."""
    if len(names) == 1:
        return names[0]
    split = [_DIGITS.split(n) for n in names]
    if len({len(s) for s in split}) == 1:
        differ = [i for i in range(len(split[0])) if len({s[i] for s in split}) > 1]
        if len(differ) == 1 and differ[0] % 2 == 1:
            i = differ[0]
            numbers = [int(s[i]) for s in split]
            if len(set(numbers)) == len(numbers):
                return "".join(split[0][:i]) + f"[{format_cpu_list(sorted(numbers))}]" + \
                    "".join(split[0][i + 1:])
    return ",".join(names)


def _apps(txs, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a for t in names for a in txs[t].apps))


def _legs(problem: Problem, members: tuple[int, ...]) -> tuple[str, ...]:
    """The legs of multi-path transactions whose services sit on the channel's active
    nodes, as `TX.LEG`."""
    out: dict[str, None] = {}
    for a in members:
        name = problem.transactions[a]
        footprint = problem.draft.footprints[name]
        reach = 0
        for b in members:
            if b != a and problem.interferes(a, b):
                reach |= problem.reach[b]
        for s in bits(problem.footprint[a] & reach):
            for origin in sorted(footprint.get(problem.services[s], ())):
                if origin.startswith(LEG):
                    out[f"{name}.{origin[len(LEG):]}"] = None
    return tuple(out)


def _channel_origins(problem: Problem, members: tuple[int, ...]) -> tuple[str, set[str]]:
    """The primary reason of one k-set's channel, and every rule, setting and assumption
    behind its active nodes.

    A node is *basic* when both its services lie on the transactions' own paths and they
    interfere by the default relation: the channel then exists without any refinement, and
    its primary reason is that relation. Otherwise the first rule (in application order)
    that made a node active is primary.
    """
    fp, draft = problem.footprint, problem.draft
    services, txs = problem.services, problem.transactions
    reasons: set[str] = set()
    basic: set[str] = set()
    for x, a in enumerate(members):
        for b in members[x + 1:]:
            if not problem.interferes(a, b):
                continue
            for s in bits(fp[a] & problem.reach[b]):
                for s2 in bits(fp[b] & problem.neighbours[s]):
                    relation = node_origins(problem, services[s], services[s2])
                    ends = (draft.footprints[txs[a]][services[s]],
                            draft.footprints[txs[b]][services[s2]])
                    reasons |= relation
                    for origins in ends:
                        reasons |= origins - {PATH} if PATH not in origins else \
                            origins & SPLITS
                    if relation <= {SHARED, LOAD_STORE} and all(PATH in o for o in ends):
                        basic |= relation
    if basic:
        primary = SHARED if SHARED in basic else LOAD_STORE
    else:
        primary = next((r for r in RULES if r in reasons), ASSUMED)
    return primary, reasons


def _free_reasons(problem: Problem, members: tuple[int, ...]
                  ) -> tuple[list[str], list[str]]:
    """Why transactions that use a common component still do not interfere: a partition or
    bank split giving each its own part, the rule separating the component's load from its
    store, or an assumption that removed a service. Also returns those common components."""
    draft = problem.draft
    reasons: list[str] = []
    shared: list[str] = []
    names = [problem.transactions[i] for i in members]
    for x, a in enumerate(names):
        for b in names[x + 1:]:
            common = ({component_of(s) for s in draft.footprints[a]} &
                      {component_of(s) for s in draft.footprints[b]})
            for comp in sorted(common):
                shared.append(comp)
                on_a = [s for s in draft.footprints[a] if component_of(s) == comp]
                on_b = [s for s in draft.footprints[b] if component_of(s) == comp]
                for sa in on_a:
                    for sb in on_b:
                        if owner_of(sa) != owner_of(sb):
                            reasons.extend(SPLITS & (draft.footprints[a][sa] |
                                                     draft.footprints[b][sb]))
                        else:
                            reasons.extend(draft.removed.get(pair(sa, sb), ()))
    for name in names:
        others = {component_of(s) for o in names if o != name for s in draft.footprints[o]}
        for svc, origins in draft.dropped[name].items():
            if component_of(svc) in others:
                reasons.extend(origins)
    return sorted(set(reasons)), list(dict.fromkeys(shared))


def _warnings(platform: Platform) -> list[str]:
    out = []
    if platform.configuration is not None:
        off = ", ".join(platform.disabled) or "nothing"
        out.append(f"configuration {platform.configuration}: switched off {off}"
                   + (f"; transactions dropped with them: {', '.join(platform.dropped)}"
                      if platform.dropped else ""))
    if platform.topology_trust == "low":
        out.append("topology_trust is low: the placement of CPUs on physical cores is not "
                   "known (a virtual machine); caches marked private may be shared, so no "
                   "'free' verdict below is proven")
    unverified = [c.name for c in platform.components.values() if not c.verified]
    if unverified:
        out.append(f"{len(unverified)} component(s) rest on facts not verified from a primary "
                   f"source: {', '.join(unverified)}")
    return out


# ---- rendering ---------------------------------------------------------------------------------

def _cell(values: Any) -> str:
    text = values if isinstance(values, str) else ", ".join(values)
    return (text or "–").replace("|", "\\|").replace("\n", " ")


_NUMBERED = re.compile(r"^(?P<head>.*#b)(?P<n>\d+)(?P<tail>\..*)?$")


def compact(services: tuple[str, ...]) -> list[str]:
    """Bank services folded for reading: lpddr4#b0.load ... lpddr4#b7.load -> lpddr4#b[0-7].load."""
    out: dict[tuple[str, str], list[int]] = {}
    for svc in services:
        m = _NUMBERED.match(svc)
        key = (m.group("head"), m.group("tail") or "") if m else (svc, "")
        out.setdefault(key, []).extend([int(m.group("n"))] if m else [])
    return [f"{head}[{format_cpu_list(ns)}]{tail}" if ns else head
            for (head, tail), ns in out.items()]


def _coded(rule_id: str) -> str:
    return f"{rule_info(rule_id)['code']} {rule_id}"


def render_markdown(t: ChannelTable) -> str:
    c = t.counts
    lines = [f"# Interference channels: {t.platform}" + (f" ({t.title})" if t.title else ""),
             "", "| | |", "|---|---|",
             f"| model | `{t.source}` |", f"| sha256 | `{t.hash}` |",
             f"| tool | intercore {t.tool_version} |", f"| date | {t.date} |",
             *([f"| configuration | {t.configuration} |"] if t.configuration else []),
             f"| k | {t.k} |",
             f"| rules | {_cell([_coded(r) for r in t.rules])} |",
             f"| result | {c['interference']} interference, {c['free']} interference-free, "
             f"{c['redundant']} redundant, of {c['k_sets']} non-exclusive {t.k}-sets |", ""]
    lines += [f"> **warning:** {w}" for w in t.warnings]
    if t.patterns is not None:
        return _render_patterns(t, lines)
    lines += ["", "## Channels (AMC 20-193 RU3)", "",
              "| id | transactions | apps | cores | services | legs | rule | assumptions | "
              "not verified | evidence |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.channels:
        lines.append(f"| {r.id} | {_cell(r.transactions)} | {_cell(r.apps)} | "
                     f"{_cell(r.initiators)} | {_cell(compact(r.services))} | "
                     f"{_cell(r.legs)} | {_coded(r.rule)} | {_cell(r.assumptions)} | "
                     f"{_cell(r.unverified)} | {_cell(r.evidence.text() if r.evidence else '')} |")
    lines += ["", "## Channels by shared resource", "", "| components | channels |", "|---|---|"]
    lines += [f"| {_cell(comps)} | {n} |" for comps, n in t.by_resource]
    lines += ["", "## Interference-free", "",
              "| transactions | apps | cores | relies on | not verified | evidence |",
              "|---|---|---|---|---|---|"]
    for f in t.free:
        lines.append(f"| {_cell(f.transactions)} | {_cell(f.apps)} | {_cell(f.initiators)} | "
                     f"{_cell(f.relies_on)} | {_cell(f.unverified)} | "
                     f"{_cell(f.evidence.text() if f.evidence else '')} |")
    lines += ["", "## Rules", "", "| code | rule | what | reference | applies when |",
              "|---|---|---|---|---|"]
    for rid in (*t.rules, SHARED, LOAD_STORE):
        info = rule_info(rid)
        lines.append(f"| {info['code']} | {rid} | {_cell(info['title'])} | "
                     f"{_cell(info['reference'])} | {_cell(info['setting'])} |")
    if t.non_interfering:
        lines += ["", "## Declared non-interference", "",
                  "| id | pairs | on | why | reference | reviewer |", "|---|---|---|---|---|---|"]
        lines += [f"| {d['id']} | {_cell([' / '.join(p) for p in d['pairs']])} | "
                  f"{_cell(d['component'] or 'platform')}"
                  f"{' (rule ' + d['rule'] + ')' if d['rule'] else ''} | {_cell(d['why'])} | "
                  f"{_cell(d['ref'])} | {_cell(d['reviewer'] or '')} |"
                  for d in t.non_interfering]
    if t.routing:
        lines += ["", "## Routing rules", "",
                  "| id | rule | why | reference | transactions |", "|---|---|---|---|---|"]
        lines += [f"| {r['id']} | {_cell(r['statement'])} | {_cell(r['why'])} | "
                  f"{_cell(r['ref'] or '')} | {_cell(r['applied_to'])} |" for r in t.routing]
    if t.assumptions:
        lines += ["", "## Assumptions", "", "| id | assumption | why | reference | reviewer |",
                  "|---|---|---|---|---|"]
        lines += [f"| {a['id']} | {_cell(a['statement'])} | {_cell(a['why'])} | "
                  f"{_cell(a['ref'])} | {_cell(a['reviewer'] or '')} |" for a in t.assumptions]
    return "\n".join(lines) + "\n"


def _render_patterns(t: ChannelTable, lines: list[str]) -> str:
    shown, total = t.patterns["shown"], t.patterns["total"]
    lines += ["", "Rows are *patterns*: the k-sets that are the same up to swapping "
              "interchangeable initiators (classes: " + _cell(t.classes) + "). Each row "
              "gives one representative set, its channel, and how many sets it stands for.",
              "", f"## Interference patterns ({shown['interference']} of "
              f"{total['interference']}, most frequent first)", "",
              "| id | sets | groups | representative | services | legs | rule | "
              "not verified |", "|---|---|---|---|---|---|---|---|"]
    for r in t.channels:
        lines.append(f"| {r.id} | {r.count} | {_cell(r.groups)} | {_cell(r.transactions)} | "
                     f"{_cell(compact(r.services))} | {_cell(r.legs)} | {_coded(r.rule)} | "
                     f"{_cell(r.unverified)} |")
    lines += ["", "## Channels by shared resource (sets)", "", "| components | sets |",
              "|---|---|"]
    lines += [f"| {_cell(comps)} | {n} |" for comps, n in t.by_resource]
    lines += ["", f"## Interference-free patterns ({shown['free']} of {total['free']})", "",
              "| sets | groups | representative | relies on |", "|---|---|---|---|"]
    lines += [f"| {f.count} | {_cell(f.groups)} | {_cell(f.transactions)} | "
              f"{_cell(f.relies_on)} |" for f in t.free]
    lines += ["", f"## Redundant sets by their parts ({shown['redundant']} of "
              f"{total['redundant']})", "",
              "Each redundant set splits into parts that do not interfere with one another; "
              "the interference parts are the smaller results it is grouped under.", "",
              "| sets | interference parts | other parts |", "|---|---|---|"]
    for r in t.redundant:
        itf = [" + ".join(p["groups"]) for p in r["parts"] if p["interference"]]
        other = [" + ".join(p["groups"]) for p in r["parts"] if not p["interference"]]
        lines.append(f"| {r['count']} | {_cell(' ; '.join(itf))} | "
                     f"{_cell(' ; '.join(other))} |")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=4)
def _template(name: str):
    from jinja2 import Environment, select_autoescape

    env = Environment(autoescape=select_autoescape(default=True), trim_blocks=True,
                      lstrip_blocks=True)
    text = resources.files("intercore.model").joinpath(f"templates/{name}").read_text()
    return env.from_string(text)
