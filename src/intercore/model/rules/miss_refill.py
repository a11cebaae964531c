"""R3: a miss is several paths, not one: the read from the level that holds the data, the
refill written into every cache on the way back, and the write-back of a dirty victim."""

from __future__ import annotations

from ..draft import Draft
from ..platform import Platform
from .base import Rule


class MissRefill(Rule):
    id = "miss_refill"
    code = "R3"
    title = "a miss also refills the caches and writes back a dirty victim"
    reference = ("PML multi-path transactions (onera/pml-analyzer: Transaction(rd_mem, "
                 "l2_refill, l1_refill)); ARM 100095 L1/L2 line fill and eviction")
    setting = "refill: [...] and writeback: true on a transaction"

    def apply(self, platform: Platform, draft: Draft) -> None:
        for tx in draft.transactions:
            for path in tx.refills:
                draft.add_path(tx, path, "store", self.id)
            if tx.writeback is not None:
                draft.add_path(tx, tx.writeback, "store", self.id)


RULE = MissRefill()
