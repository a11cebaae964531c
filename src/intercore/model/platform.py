"""A loaded platform model: ranges expanded, references resolved, paths routed.

Plain frozen data. `loader.load()` builds it from a YAML file and is the only place that
reports input errors; the calculus and the rules read it and never fail on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

Path_ = tuple[str, ...]  # component names from an initiator to a target


@dataclass(frozen=True)
class Component:
    name: str
    kind: str  # initiator | transporter | target (a composite is expanded into these)
    role: str | None = None
    cpu: int | None = None
    coherent: bool = False  # an initiator whose caches the coherence machinery keeps coherent
    size: int | None = None
    ways: int | None = None
    sets: int | None = None
    line: int | None = None
    level: int | None = None
    private_to: str | None = None
    inclusive_of: tuple[str, ...] = ()
    rw_independent: bool = False
    banks: int | None = None
    prefetch_via: tuple[str, ...] = ()
    walk_via: tuple[str, ...] = ()
    services: tuple[str, ...] = ("load", "store")
    composite: str | None = None  # the composite device this part belongs to
    ref: str | None = None
    verified: bool = True
    note: str | None = None


@dataclass(frozen=True)
class Composite:
    name: str
    initiator: str
    target: str
    port: str
    ref: str | None = None


@dataclass(frozen=True)
class Data:
    name: str
    at: str
    banks: tuple[int, ...] | None = None  # None: spread over every bank of its memory
    writers: tuple[str, ...] = ()  # apps
    readers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Leg:
    """One access of a transaction: `op` from its initiator to `target` along `path`."""

    name: str
    op: str
    target: str
    path: Path_
    data: tuple[str, ...] = ()  # the data it touches (several when derived accesses merge)


@dataclass(frozen=True)
class Transaction:
    """A transaction: one or more legs (a multi-path transaction such as a DMA copy, load
    from A then store to B) issued by one initiator, serving one or more applications."""

    name: str
    apps: tuple[str, ...]
    initiator: str
    legs: tuple[Leg, ...]
    refills: tuple[Path_, ...] = ()  # store paths that refill the caches of a miss
    writeback: Path_ | None = None   # store path of a dirty victim to the data's home
    walks: tuple[Path_, ...] = ()    # load paths of a page-table walk (rule tlb_walk)
    tlbi: bool = False
    note: str | None = None
    derived: bool = False            # derived from the apps' reads/writes, not written out
    routing: tuple[str, ...] = ()    # ids of the platform routing rules its paths obey

    # The first leg is the transaction's own access (what validation exercises).
    @property
    def app(self) -> str:
        return self.apps[0]

    @property
    def op(self) -> str:
        return self.legs[0].op

    @property
    def target(self) -> str:
        return self.legs[0].target

    @property
    def path(self) -> Path_:
        return self.legs[0].path

    @property
    def data(self) -> str | None:
        return self.legs[0].data[0] if self.legs[0].data else None

    @property
    def multi_path(self) -> bool:
        return len(self.legs) > 1

    def touches(self, data: str) -> bool:
        return any(data in leg.data for leg in self.legs)


@dataclass(frozen=True)
class NonInterference:
    """Declared: these service pairs do not contend (removed from the relation I)."""

    id: str
    pairs: tuple[tuple[str, str], ...]  # services, COMPONENT.OP (or a bare component)
    why: str
    ref: str
    reviewer: str | None = None
    component: str | None = None  # declared on this component (else on the platform)
    rule: str | None = None       # produced by this refinement rule (axi_rw)

    def to_dict(self) -> dict:
        return {"id": self.id, "pairs": [list(p) for p in self.pairs], "why": self.why,
                "ref": self.ref, "reviewer": self.reviewer, "component": self.component,
                "rule": self.rule}


@dataclass(frozen=True)
class Routing:
    """A platform routing rule and the transactions whose paths it constrained."""

    id: str
    initiators: tuple[str, ...]
    targets: tuple[str, ...] | None  # None: every target
    via: tuple[str, ...]
    avoid: tuple[str, ...]
    why: str
    ref: str | None
    applied_to: tuple[str, ...] = ()

    def statement(self) -> str:
        to = f" to {', '.join(self.targets)}" if self.targets is not None else ""
        how = "; ".join(x for x in (f"via {', '.join(self.via)}" if self.via else "",
                                    f"avoiding {', '.join(self.avoid)}" if self.avoid else "")
                        if x)
        return f"{', '.join(self.initiators)}{to}: {how}"

    def to_dict(self) -> dict:
        return {"id": self.id, "statement": self.statement(),
                "initiators": list(self.initiators),
                "targets": None if self.targets is None else list(self.targets),
                "via": list(self.via), "avoid": list(self.avoid), "why": self.why,
                "ref": self.ref, "applied_to": list(self.applied_to)}


@dataclass(frozen=True)
class Assumption:
    id: str
    kind: str  # interfere_with | not_interfere_with | interfere | exclusive | transparent | premise
    subjects: tuple[str, ...]   # transactions it edits (footprint kinds), else ()
    items: tuple[str, ...]      # services, components or names it is about
    statement: str              # the premise, or a one-line rendering of the assumption
    why: str
    ref: str
    reviewer: str | None = None

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "statement": self.statement,
                "why": self.why, "ref": self.ref, "reviewer": self.reviewer}


@dataclass(frozen=True)
class Config:
    prefetch: Mapping[str, bool] = field(default_factory=dict)
    # cache -> initiator -> partition name (colouring or way partitioning)
    partitions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # app -> time slice
    time_slices: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Platform:
    name: str
    title: str | None
    source: str
    hash: str  # sha256 of the file's bytes: what a reviewer recomputes with sha256sum
    components: Mapping[str, Component]
    composites: Mapping[str, Composite]
    links: tuple[tuple[str, str], ...]
    apps: Mapping[str, tuple[str, ...]]  # app -> the initiators it runs on
    data: Mapping[str, Data]
    transactions: Mapping[str, Transaction]  # used ones only, in file order
    config: Config
    rules: tuple[str, ...]  # enabled refinement rules, by id
    assumptions: tuple[Assumption, ...]
    sources: Mapping[str, str] = field(default_factory=dict)
    topology_trust: str = "high"
    host: Mapping[str, str | None] | None = None
    non_interfering: tuple[NonInterference, ...] = ()  # declared in the model
    routing: tuple[Routing, ...] = ()
    configuration: str | None = None  # the named configuration analysed (--config)
    disabled: tuple[str, ...] = ()    # components and links it switched off
    dropped: tuple[str, ...] = ()     # transactions it removed (their hardware is off)
    text: str = field(default="", repr=False)  # the file as read, kept with stored verdicts

    @property
    def initiators(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components.values()
                     if c.kind == "initiator" and c.name not in self.disabled)

    def unverified(self, names) -> tuple[str, ...]:
        """Those of `names` whose facts the model marks as not verified."""
        return tuple(n for n in names if n in self.components
                     and not self.components[n].verified)
