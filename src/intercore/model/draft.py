"""Footprints and the service-interference relation while the refinement rules edit them.

Services are strings: `l2.load`, `l2#p0.store` (partition p0 of a partitioned l2),
`lpddr4#b3.load` (bank 3), or an artificial service without an operation (`coherence(sh)`,
`dvm`). Every service a transaction uses and every interfering pair remembers what put it
there (its *origins*: "path", a rule id, an assumption id), so the channel table can say
which rule and which assumptions each verdict rests on.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Protocol

from .platform import NonInterference, Path_, Platform, Transaction

PATH = "path"              # on the transaction's own route
SHARED = "shared"          # reflexivity: one service used by two transactions
LOAD_STORE = "load/store"  # PHYLOG's default: load and store of one component interfere
PARTITIONS = "config.partitions"  # a partitioned cache gives each initiator its part
LEG = "leg:"               # prefix of the origin naming the leg of a multi-path transaction


def service(owner: str, op: str) -> str:
    return f"{owner}.{op}"


def owner_of(svc: str) -> str | None:
    """`l2#p0.load` -> `l2#p0`; None for an artificial service."""
    owner, dot, _ = svc.rpartition(".")
    return owner if dot else None


def component_of(svc: str) -> str:
    """The hardware component a service belongs to; an artificial service is its own."""
    owner = owner_of(svc)
    return svc if owner is None else owner.partition("#")[0]


def partner(svc: str) -> str | None:
    """The other operation of the same owner: `x.load` <-> `x.store`."""
    owner, dot, op = svc.rpartition(".")
    if not dot:
        return None
    return f"{owner}.{'store' if op == 'load' else 'load'}"


def pair(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


class Draft:
    """Footprints (transaction -> service -> origins), the pairs rules added to or removed
    from the default relation, and the services assumptions removed, with their origins."""

    def __init__(self, platform: Platform, splits: Iterable[Split] = ()):
        self.platform = platform
        self.splits = tuple(splits)
        self.footprints: dict[str, dict[str, set[str]]] = {t: {} for t in platform.transactions}
        self.dropped: dict[str, dict[str, set[str]]] = {t: {} for t in platform.transactions}
        self.added: dict[frozenset[str], set[str]] = {}
        self.removed: dict[frozenset[str], set[str]] = {}
        # declared non-interference, the model's and the rules' (axi_rw), by id
        self.non_interfering: dict[str, NonInterference] = {}
        for tx in platform.transactions.values():
            for leg in tx.legs:
                self.add_path(tx, leg.path, leg.op, PATH, data=leg.data,
                              tag=LEG + leg.name if tx.multi_path else None)

    @property
    def transactions(self) -> Iterable[Transaction]:
        return self.platform.transactions.values()

    def _owners_for(self, tx: Transaction, name: str, data: tuple[str, ...]
                    ) -> tuple[list[str], str | None]:
        """The owners of `name`'s services that `tx` uses, and what split them: the
        partition of its initiator (cache colouring, way partitioning) or a rule."""
        part = self.platform.config.partitions.get(name, {}).get(tx.initiator)
        if part is not None:
            return [f"{name}#{part}"], PARTITIONS
        for split in self.splits:
            owners = split.owners_for(self.platform, data, name)
            if owners is not None:
                return owners, split.id
        return [name], None

    def add_path(self, tx: Transaction, path: Path_, op: str, origin: str,
                 data: tuple[str, ...] | None = None, tag: str | None = None) -> None:
        """Add the `op` services along `path` to `tx`'s footprint. `data` is what the
        access touches (every data of the transaction by default); `tag` names the leg."""
        if data is None:
            data = tuple(dict.fromkeys(d for leg in tx.legs for d in leg.data))
        for name in path:
            if op not in self.platform.components[name].services:
                continue
            owners, split_by = self._owners_for(tx, name, data)
            for owner in owners:
                self.add(tx.name, service(owner, op), origin)
                if split_by is not None:
                    self.add(tx.name, service(owner, op), split_by)
                if tag is not None:
                    self.add(tx.name, service(owner, op), tag)

    def owners(self, component: str) -> list[str]:
        """Every owner of `component`'s services: itself, or its partitions or banks."""
        parts = sorted(set(self.platform.config.partitions.get(component, {}).values()))
        if parts:
            return [f"{component}#{p}" for p in parts]
        for split in self.splits:
            owners = split.all_owners(self.platform, component)
            if owners is not None:
                return owners
        return [component]

    def add(self, tx: str, svc: str, origin: str) -> None:
        self.footprints[tx].setdefault(svc, set()).add(origin)

    def remove(self, tx: str, svc: str, origin: str) -> None:
        if svc in self.footprints[tx]:
            del self.footprints[tx][svc]
            self.dropped[tx].setdefault(svc, set()).add(origin)

    def uses(self, tx: str, component: str) -> bool:
        return any(component_of(s) == component for s in self.footprints[tx])

    def interfere(self, a: str, b: str, origin: str) -> None:
        if a != b:
            self.added.setdefault(pair(a, b), set()).add(origin)

    def independent(self, a: str, b: str, origin: str) -> None:
        """Drop a pair from the relation (a declaration or a rule says they do not
        contend); it wins over the default load/store pair and over rules adding it."""
        self.removed.setdefault(pair(a, b), set()).add(origin)

    def declare(self, decl: NonInterference, origin: str | None = None) -> None:
        """Apply a non-interference declaration to every owner of its services (each bank
        or partition of a split component)."""
        self.non_interfering[decl.id] = decl
        for a, b in decl.pairs:
            (ca, _, oa), (cb, _, ob) = a.rpartition("."), b.rpartition(".")
            for x in self.owners(ca):
                for y in self.owners(cb):
                    if ca == cb and x != y:
                        continue  # a component's own pair, per bank or partition
                    self.independent(service(x, oa), service(y, ob), origin or decl.id)

    def apply_declarations(self) -> None:
        """The model's non-interference declarations: after the rules, which they
        override; before the assumptions."""
        for decl in self.platform.non_interfering:
            self.declare(decl)

    def apply_assumptions(self) -> None:
        """The model's own statements come last, so they override what the rules derived."""
        txs = self.platform.transactions
        for a in self.platform.assumptions:
            if a.kind == "interfere_with":
                for tx in a.subjects:
                    for ref in a.items:
                        comp, _, op = ref.rpartition(".")
                        self.add_path(txs[tx], (comp,), op, a.id)
            elif a.kind == "not_interfere_with":
                for tx in a.subjects:
                    for ref in a.items:
                        comp, _, op = ref.rpartition(".")
                        for svc in [s for s in self.footprints[tx]
                                    if component_of(s) == comp and s.endswith("." + op)]:
                            self.remove(tx, svc, a.id)
            elif a.kind == "interfere":
                expanded = [service(owner, ref.rpartition(".")[2]) for ref in a.items
                            for owner in self.owners(ref.rpartition(".")[0])]
                for i, x in enumerate(expanded):
                    for y in expanded[i + 1:]:
                        self.interfere(x, y, a.id)
            elif a.kind == "transparent":
                for tx in self.footprints:
                    for svc in [s for s in self.footprints[tx] if component_of(s) in a.items]:
                        self.remove(tx, svc, a.id)


class Split(Protocol):
    """A rule that refines a component into finer service owners (DDR banks)."""

    id: ClassVar[str]

    def owners_for(self, platform: Platform, data: tuple[str, ...], component: str
                   ) -> list[str] | None: ...

    def all_owners(self, platform: Platform, component: str) -> list[str] | None: ...
