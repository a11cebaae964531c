"""R5: with a cache's prefetcher on, any transaction that uses the cache may make it fetch
further lines, so that transaction also loads the components a prefetch traverses (the bus
and the memory controller behind an L2)."""

from __future__ import annotations

from ..draft import Draft
from ..platform import Platform
from .base import Rule


class Prefetch(Rule):
    id = "prefetch"
    code = "R5"
    title = "hardware prefetcher traffic of a cache"
    reference = ("ARM 100095 (Cortex-A72 MPCore TRM), L2 prefetcher and its control in "
                 "CPUECTLR/L2ACTLR; paper 000 §4.1 (\"the L2 prefetch\")")
    setting = "config.prefetch: {CACHE: true} and prefetch_via: [...] on the cache"

    def apply(self, platform: Platform, draft: Draft) -> None:
        for cache, on in platform.config.prefetch.items():
            if not on:
                continue
            via = platform.components[cache].prefetch_via
            for tx in draft.transactions:
                if draft.uses(tx.name, cache):
                    draft.add_path(tx, via, "load", self.id)


RULE = Prefetch()
