"""Routing a transaction through the link graph: the one path from an initiator to a target.

A path starts at an initiator, ends at a target and passes only through transporters. When
more than one such path exists the model must say which one the hardware takes (`via`,
`avoid`): picking one silently would hide a channel, and taking all would invent one.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .platform import Path_

# Bounds the depth-first search on pathological graphs (dense bidirectional meshes); real
# platform models need a few hundred steps.
MAX_STEPS = 200_000


class RoutingError(ValueError):
    pass


def route(successors: Mapping[str, Sequence[str]], kinds: Mapping[str, str], source: str,
          target: str, via: Sequence[str] = (), avoid: Sequence[str] = (),
          ports: Mapping[str, tuple[str, str]] | None = None) -> Path_:
    """The unique path from `source` to `target` through transporters, honouring `via`
    (components the path must include) and `avoid` (components it must not).

    `ports` maps the port of a composite device to its (initiator, target): a device's port
    is an end, not a thoroughfare, so a path crosses it only to leave that initiator or to
    reach that target."""
    found: list[Path_] = []
    blocked = set(avoid) | {p for p, (init, tgt) in (ports or {}).items()
                            if source != init and target != tgt}
    steps = 0

    def walk(node: str, path: list[str], seen: set[str]) -> None:
        nonlocal steps
        for nxt in successors.get(node, ()):
            steps += 1
            if steps > MAX_STEPS:
                raise RoutingError(f"routing {source} -> {target} explores too many paths; "
                                   "narrow it with via: [...]")
            if nxt in seen or nxt in blocked or len(found) > 1:
                continue
            if nxt == target:
                candidate = (*path, nxt)
                if all(v in candidate for v in via):
                    found.append(candidate)
            elif kinds.get(nxt) == "transporter":
                seen.add(nxt)
                path.append(nxt)
                walk(nxt, path, seen)
                path.pop()
                seen.discard(nxt)

    walk(source, [source], {source})
    constraint = "".join([f" via {', '.join(via)}" if via else "",
                          f" avoiding {', '.join(avoid)}" if avoid else ""])
    if not found:
        raise RoutingError(f"no path from {source} to {target}{constraint}: the links do not "
                           "connect them through transporters")
    if len(found) > 1:
        shown = " and ".join(">".join(p) for p in found)
        raise RoutingError(f"more than one path from {source} to {target}{constraint} "
                           f"({shown}); say which with via: [...] or avoid: [...]")
    return found[0]
