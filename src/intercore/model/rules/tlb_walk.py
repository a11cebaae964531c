"""R6: every access looks up its core's TLB; a TLB miss walks the page tables through the data
caches and memory (an extra load path); a broadcast TLB invalidation (DVM) reaches every
TLB, so it is an artificial service that interferes with all of them."""

from __future__ import annotations

from ..draft import Draft, service
from ..platform import Platform
from .base import Rule

DVM = "dvm"


class TlbWalk(Rule):
    id = "tlb_walk"
    code = "R6"
    title = "TLB lookups, page-table walks and broadcast TLB invalidation"
    reference = ("ARM 100095 (Cortex-A72 MPCore TRM), memory management unit: L1/L2 TLBs and "
                 "table walks through the L1 data cache and L2; Arm ARM DDI 0487, broadcast "
                 "TLB maintenance (DVM)")
    setting = "a target with role: tlb and private_to; page_walk / tlbi on transactions"

    def apply(self, platform: Platform, draft: Draft) -> None:
        tlbs = [c for c in platform.components.values() if c.role == "tlb"]
        for tx in draft.transactions:
            for tlb in tlbs:
                if tlb.private_to == tx.initiator:
                    draft.add_path(tx, (tlb.name,), "load", self.id)
            for walk in tx.walks:
                draft.add_path(tx, walk, "load", self.id)
            if tx.tlbi:
                draft.add(tx.name, DVM, self.id)
                for tlb in tlbs:
                    for owner in draft.owners(tlb.name):
                        for op in tlb.services:
                            draft.interfere(DVM, service(owner, op), self.id)


RULE = TlbWalk()
