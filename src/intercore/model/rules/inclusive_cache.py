"""R2: a cache inclusive of private caches evicts their lines when it evicts its own (back
invalidation), so any use of the shared cache interferes with the private caches it includes.
A core running only L1 hits is therefore not free against a core streaming through the L2.
With partitioning (colouring), a partition only reaches the private caches of its cores."""

from __future__ import annotations

from ..draft import Draft, service
from ..platform import Platform
from .base import Rule


class InclusiveCache(Rule):
    id = "inclusive_cache"
    code = "R2"
    title = "inclusive shared cache reaches the private caches it includes"
    reference = ("ARM 100095 (Cortex-A72 MPCore TRM), L2 memory system: the L2 has an "
                 "inclusion property with the L1 data caches; pml-analyzer FU740 "
                 "coreToL2Partition; paper 000 §4.1")
    setting = "inclusive_of: [...] on a shared cache target"

    def apply(self, platform: Platform, draft: Draft) -> None:
        comps = platform.components
        for outer in comps.values():
            if not outer.inclusive_of:
                continue
            partition_of = platform.config.partitions.get(outer.name, {})
            for owner in draft.owners(outer.name):
                part = owner.partition("#")[2] or None
                inner = [comps[n] for n in outer.inclusive_of
                         if part is None or (private := comps[n].private_to) is None
                         or partition_of.get(private) == part]
                for op in outer.services:
                    for cache in inner:
                        for inner_owner in draft.owners(cache.name):
                            for inner_op in cache.services:
                                draft.interfere(service(owner, op),
                                                service(inner_owner, inner_op), self.id)


RULE = InclusiveCache()
