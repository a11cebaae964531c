"""Counting k-sets for large k (up to 10) without enumerating them, by symmetry.

Why not SAT/CP. pml-analyzer enumerates the k-sets of each verdict with a SAT solver and a
blocking clause per solution: its time grows with the number of solutions, and at k = 10 a
32-initiator platform has billions of interfering sets. Counting them (#SAT) is harder still
in general. What makes the question small on real platforms is symmetry: the cores of a
cluster, the DSPs of an array, the channels of a DMA engine are interchangeable, and a k-set
is only "which groups, and how many from each". So we count on the quotient by
interchangeable initiators, exactly, and enumerate only its patterns.

Interchangeable initiators. Two initiators i, j are twins when swapping them, together with a
one-to-one map of their transactions, maps the interference graph G and the exclusion graph
X onto themselves (G is not looked at between transactions that exclude each other: they
never meet). Twins form classes; a class of m initiators with transactions ("roles")
rho_1..rho_p is one group of the quotient per role. Between two groups, and between two
initiators of one class, G and X depend only on the roles (the swaps prove it).

Counting. A *support* is a set of groups; a k-set with that support takes n_v >= 1
transactions from each group v, at most one per initiator. The number of such sets is a
product over classes of the ways to give n_v distinct initiators of the class role v, and
whether they interfere depends only on the support: the blow-up of a connected support is
connected (copies in a group without an internal edge connect through a neighbour group),
a support without edges is free when no group with an internal edge has two copies, and
everything else is redundant. So one walk over the supports of size <= k gives every count
for every k at once, as polynomials in x. The walk is over classes, choosing the roles
present in each, with running products, so its cost is the number of supports (2^16 for 8
classes of 2 roles), not the number of sets.

Fallback. A model without symmetry has one class per initiator: still exact, and fast
while the supports stay few (small models, or k small); beyond MAX_SUPPORTS the count is
refused with the reason rather than left running.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Iterator

from ..base.errors import InputError
from .calculus import Problem, bits, components

K_MAX = 10
MAX_SUPPORTS = 20_000_000


@dataclass(frozen=True)
class Group:
    """Roles of the initiators of one class that behave alike (twin roles: the same
    relations to everything, so an initiator taking any of them is the same to the count):
    the transactions members[i][role] for role in `roles`."""

    cls: int
    roles: tuple[int, ...]
    transactions: tuple[int, ...]  # per role, one per initiator of the class

    @property
    def role(self) -> int:
        return self.roles[0]


@dataclass(frozen=True)
class Symmetry:
    classes: tuple[tuple[str, ...], ...]        # initiator names per class
    roles: tuple[tuple[tuple[int, ...], ...], ...]  # per class, per initiator: tx indexes
    groups: tuple[Group, ...]
    adjacent: tuple[int, ...]   # per group: groups it interferes with (other groups)
    excluded: tuple[int, ...]   # per group: groups it excludes (other groups)
    self_linked: tuple[bool, ...]    # two members of the group interfere
    self_excluded: tuple[bool, ...]  # two members of the group exclude each other


def _linked(problem: Problem) -> list[int]:
    n = len(problem.transactions)
    out = [0] * n
    for i in range(n):
        for j in range(i + 1, n):
            if problem.interferes(i, j):
                out[i] |= 1 << j
                out[j] |= 1 << i
    return out


def _by_initiator(problem: Problem) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, init in enumerate(problem.initiators):
        out.setdefault(init, []).append(t)
    return out


def _swap(x: int, mapping: dict[int, int]) -> int:
    """Permute the bits of x by an involution given as {bit: bit}."""
    moved = 0
    for a, b in mapping.items():
        if x >> a & 1:
            moved |= 1 << b
        x &= ~(1 << a)
    return x | moved


def _twins(ti: list[int], tj: list[int], linked: list[int], excl: list[int]) -> bool:
    """Whether swapping ti[k] <-> tj[k] maps G (outside X) and X onto themselves."""
    mapping = {**dict(zip(ti, tj)), **dict(zip(tj, ti))}
    for a in range(len(linked)):
        b = mapping.get(a, a)
        if _swap(excl[a], mapping) != excl[b]:
            return False
        if _swap(linked[a], mapping) & ~excl[b] != linked[b] & ~excl[b]:
            return False
    return True


def symmetry(problem: Problem, linked: list[int] | None = None) -> Symmetry:
    linked = linked if linked is not None else _linked(problem)
    excl = list(problem.exclusive)
    per = _by_initiator(problem)
    classes: list[list[str]] = []
    for init, txs in per.items():
        for members in classes:
            rep = per[members[0]]
            if len(rep) == len(txs) and _twins(rep, txs, linked, excl):
                members.append(init)
                break
        else:
            classes.append([init])
    roles = [tuple(tuple(per[i]) for i in members) for members in classes]
    groups = _merge_roles(roles, linked, excl)
    q = len(groups)
    adjacent, excluded = [0] * q, [0] * q
    self_linked, self_excluded = [False] * q, [False] * q
    for u, gu in enumerate(groups):
        a = roles[gu.cls][0][gu.role]
        second = roles[gu.cls][1][gu.role] if len(roles[gu.cls]) > 1 else None
        if second is not None:
            self_linked[u] = bool(linked[a] >> second & 1)
            self_excluded[u] = bool(excl[a] >> second & 1)
        for v, gv in enumerate(groups):
            if v == u:
                continue
            if gv.cls == gu.cls:
                if second is None:
                    continue
                b = roles[gu.cls][1][gv.role]  # role v on another initiator of the class
            else:
                b = roles[gv.cls][0][gv.role]
            if linked[a] >> b & 1:
                adjacent[u] |= 1 << v
            if excl[a] >> b & 1:
                excluded[u] |= 1 << v
    return Symmetry(tuple(tuple(c) for c in classes), tuple(roles), tuple(groups),
                    tuple(adjacent), tuple(excluded), tuple(self_linked),
                    tuple(self_excluded))


def _role_sig(roles, c: int, r: int, linked: list[int], excl: list[int]) -> tuple:
    """What a role of class c is to everything: its links and exclusions outside the class
    and to the other initiators of the class (as a role-indexed pattern)."""
    table = roles[c]
    a = table[0][r]
    inside = 0
    for row in table:
        for t in row:
            inside |= 1 << t
    if len(table) > 1:
        other = table[1]
        within = tuple((linked[a] >> t & 1, excl[a] >> t & 1) for t in other)
    else:
        within = ()
    return linked[a] & ~inside & ~excl[a], excl[a] & ~inside, within


def _merge_roles(roles, linked: list[int], excl: list[int]) -> list[Group]:
    """Groups: the roles of each class, twin roles merged. Roles r and b are twins when
    swapping them on one initiator maps G and X onto themselves (the same relations outside
    the class and to every role of another initiator of the class) and two copies relate
    alike whatever their roles (r-r as r-b), so the group is uniform inside."""
    groups: list[Group] = []
    for c, table in enumerate(roles):
        sigs = [_role_sig(roles, c, r, linked, excl) for r in range(len(table[0]))]

        def twins(r: int, b: int, sigs: list[tuple] = sigs) -> bool:
            within = sigs[r][2]
            return sigs[r] == sigs[b] and (not within or within[r] == within[b])

        buckets: list[list[int]] = []
        for r in range(len(sigs)):
            for bucket in buckets:
                if all(twins(r, b) for b in bucket):
                    bucket.append(r)
                    break
            else:
                buckets.append([r])
        for bucket in buckets:
            groups.append(Group(c, tuple(bucket),
                                tuple(row[r] for r in bucket for row in table)))
    return groups


Poly = list[int]


def _mul(a: Poly, b: Poly, kmax: int) -> Poly:
    out = [0] * (kmax + 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b[:kmax + 1 - i]):
                if y:
                    out[i + j] += x * y
    return out


def _class_poly(m: int, present: tuple[tuple[int, bool], ...], kmax: int) -> Poly:
    """Ways to give each present group n >= 1 distinct initiators of an m-initiator class,
    each taking one of the group's g twin roles (n = 1 for a group marked single), by total
    N: a sum of multinomials times g^n, as a polynomial."""
    dp = [0] * (kmax + 1)
    dp[0] = 1
    for g, single in present:
        top = 1 if single else m
        new = [0] * (kmax + 1)
        for used, ways in enumerate(dp):
            if not ways:
                continue
            for n in range(1, top + 1):
                if used + n > min(m, kmax):
                    break
                new[used + n] += ways * comb(m - used, n) * g ** n
        dp = new
    return dp


@dataclass
class Pattern:
    """A support (bitset over groups) and its number of k-sets per k."""

    support: int
    counts: Poly


@dataclass
class Counts:
    kmax: int
    interference: Poly
    free: Poly
    k_sets: Poly
    symmetry: Symmetry
    itf_patterns: list[Pattern] = field(default_factory=list)
    free_patterns: list[Pattern] = field(default_factory=list)
    # redundant sets by their connected parts: tuple of group bitsets -> counts
    redundant_parts: dict[tuple[int, ...], Poly] = field(default_factory=dict)
    supports: int = 0

    def at(self, k: int) -> dict[str, int]:
        itf, free, total = self.interference[k], self.free[k], self.k_sets[k]
        return {"interference": itf, "free": free, "redundant": total - itf - free,
                "k_sets": total}


def check_k(k: int, field_name: str = "--k") -> None:
    if not 2 <= k <= K_MAX:
        raise InputError(f"k must be between 2 and {K_MAX}, got {k}", field=field_name)


def count(problem: Problem, kmax: int, *, patterns: bool = True,
          linked: list[int] | None = None) -> Counts:
    """Every count for k = 0..kmax: non-exclusive k-sets, interference, free (redundant is
    the rest), and, with `patterns`, the supports behind them."""
    sym = symmetry(problem, linked)
    q = len(sym.groups)
    by_class: list[list[int]] = [[] for _ in sym.classes]
    for v, g in enumerate(sym.groups):
        by_class[g.cls].append(v)
    sizes = [len(c) for c in sym.classes]
    zero = [0] * (kmax + 1)
    out = Counts(kmax, list(zero), list(zero), list(zero), sym)
    polys: dict[tuple[int, tuple[int, ...], frozenset[int]], Poly] = {}
    forced_x = frozenset(v for v in range(q) if sym.self_excluded[v])
    forced_g = forced_x | frozenset(v for v in range(q) if sym.self_linked[v])

    def class_poly(c: int, present: tuple[int, ...], single: frozenset[int]) -> Poly:
        key = (c, present, single & frozenset(present))
        found = polys.get(key)
        if found is None:
            found = polys[key] = _class_poly(
                sizes[c], tuple((len(sym.groups[v].roles), v in single) for v in present),
                kmax)
        return found

    # per class, the role subsets that may be present together (no exclusion inside, and
    # at most one initiator per role... i.e. at most m roles)
    choices: list[list[tuple[int, int]]] = []
    for c, groups in enumerate(by_class):
        options = []
        for mask in range(1, 1 << len(groups)):
            present = [groups[i] for i in range(len(groups)) if mask >> i & 1]
            if len(present) > min(sizes[c], kmax):
                continue
            bitset = 0
            for v in present:
                bitset |= 1 << v
            if any(sym.excluded[v] & bitset for v in present):
                continue
            options.append((bitset, len(present)))
        choices.append(options)
    visited = 0

    def leaf(support: int, poly: Poly) -> None:
        nodes = list(bits(support))
        for k in range(2, kmax + 1):
            out.k_sets[k] += poly[k]
        if len(nodes) == 1:
            v = nodes[0]
            target = out.interference if sym.self_linked[v] else out.free
            for k in range(2, kmax + 1):
                target[k] += poly[k]
            if patterns and any(poly[2:]):
                (out.itf_patterns if sym.self_linked[v] else out.free_patterns).append(
                    Pattern(support, poly))
            return
        parts = components(support, sym.adjacent)
        if len(parts) == 1:
            for k in range(2, kmax + 1):
                out.interference[k] += poly[k]
            if patterns and any(poly[2:]):
                out.itf_patterns.append(Pattern(support, poly))
            return
        free = None
        if len(parts) == len(nodes):  # no edge between groups
            free = [1] + [0] * kmax
            for c in range(len(by_class)):
                present = tuple(v for v in by_class[c] if support >> v & 1)
                if present:
                    free = _mul(free, class_poly(c, present, forced_g), kmax)
            for k in range(2, kmax + 1):
                out.free[k] += free[k]
            if patterns and any(free[2:]):
                out.free_patterns.append(Pattern(support, free))
        if patterns:
            rest = [poly[k] - (free[k] if free else 0) for k in range(kmax + 1)]
            if any(rest[2:]):
                key = tuple(sorted(parts))
                acc = out.redundant_parts.setdefault(key, [0] * (kmax + 1))
                for k in range(2, kmax + 1):
                    acc[k] += rest[k]

    def walk(c: int, support: int, blocked: int, size: int, poly: Poly) -> None:
        nonlocal visited
        if c == len(by_class):
            if support:
                visited += 1
                if visited > MAX_SUPPORTS:
                    raise InputError(
                        f"the model has too little symmetry to count {kmax}-sets: more than "
                        f"{MAX_SUPPORTS:,} patterns over {q} groups of interchangeable "
                        f"transactions; analyse a smaller k", field="--k")
                leaf(support, poly)
            return
        walk(c + 1, support, blocked, size, poly)
        for bitset, n in choices[c]:
            if bitset & blocked or size + n > kmax:
                continue
            present = tuple(bits(bitset))
            grown = _mul(poly, class_poly(c, present, forced_x), kmax)
            if not any(grown):
                continue
            more = blocked
            for v in present:
                more |= sym.excluded[v]
            walk(c + 1, support | bitset, more, size + n, grown)

    walk(0, 0, 0, 0, [1] + [0] * kmax)
    out.supports = visited
    return out


def representative(sym: Symmetry, support: int, k: int, single: frozenset[int] = frozenset()
                   ) -> tuple[int, ...] | None:
    """One k-set with this support (transaction indexes), or None if there is none: each
    present group takes the first free initiators of its class, extra copies going to the
    first groups that may take them."""
    by_class: dict[int, list[int]] = {}
    for v in bits(support):
        by_class.setdefault(sym.groups[v].cls, []).append(v)
    counts = {v: 1 for v in bits(support)}
    extra = k - len(counts)
    if extra < 0:
        return None
    for c, present in by_class.items():
        room = len(sym.classes[c]) - len(present)
        for v in present:
            if extra == 0 or room == 0:
                break
            if v in single or sym.self_excluded[v]:
                continue
            n = min(extra, room)
            counts[v] += n
            extra -= n
            room -= n
    if extra:
        return None
    out = []
    for c, present in by_class.items():
        member = 0
        for v in present:
            for _ in range(counts[v]):
                out.append(sym.roles[c][member][sym.groups[v].role])
                member += 1
    return tuple(sorted(out))


def iter_groups(sym: Symmetry, support: int) -> Iterator[Group]:
    for v in bits(support):
        yield sym.groups[v]
