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
class Transaction:
    name: str
    app: str
    initiator: str
    op: str
    target: str
    path: Path_
    data: str | None = None
    refills: tuple[Path_, ...] = ()  # store paths that refill the caches of a miss
    writeback: Path_ | None = None   # store path of a dirty victim to the data's home
    walks: tuple[Path_, ...] = ()    # load paths of a page-table walk (rule tlb_walk)
    tlbi: bool = False
    note: str | None = None


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
    apps: Mapping[str, str]  # app -> initiator
    data: Mapping[str, Data]
    transactions: Mapping[str, Transaction]  # used ones only, in file order
    config: Config
    rules: tuple[str, ...]  # enabled refinement rules, by id
    assumptions: tuple[Assumption, ...]
    sources: Mapping[str, str] = field(default_factory=dict)
    topology_trust: str = "high"
    host: Mapping[str, str | None] | None = None
    text: str = field(default="", repr=False)  # the file as read, kept with stored verdicts

    @property
    def initiators(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components.values() if c.kind == "initiator")

    def unverified(self, names) -> tuple[str, ...]:
        """Those of `names` whose facts the model marks as not verified."""
        return tuple(n for n in names if n in self.components
                     and not self.components[n].verified)
