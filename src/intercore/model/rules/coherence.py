"""R4: data written by one core and read or written by another moves between their caches
through the coherence machinery (snoops, invalidations). Every coherent transaction touching
such data carries an artificial coherence(d) service, so any two of them on different cores
interfere. Only coherent initiators count (cores, and masters declared `coherent: true` such
as I/O-coherent ports): a non-coherent DMA relies on software cache maintenance instead."""

from __future__ import annotations

from ..draft import Draft
from ..platform import Platform
from .base import Rule


class Coherence(Rule):
    id = "coherence"
    code = "R4"
    title = "coherence traffic on data shared by cores with at least one writer"
    reference = ("ARM 100095 (Cortex-A72 MPCore TRM), Snoop Control Unit with duplicate L1 "
                 "tags; ARM IHI 0022 ACE coherent transactions; paper 000 §4.1")
    setting = ("data used by two or more coherent initiators (cores, coherent: true), one of "
               "them storing or listed as writer")

    def apply(self, platform: Platform, draft: Draft) -> None:
        coherent = {n for n, c in platform.components.items() if c.coherent}
        for name, data in platform.data.items():
            touching = [tx for tx in draft.transactions
                        if tx.touches(name) and tx.initiator in coherent]
            users = {tx.initiator for tx in touching}
            users.update(i for a in (*data.writers, *data.readers) for i in platform.apps[a])
            writers = {tx.initiator for tx in touching
                       if any(leg.op == "store" and name in leg.data for leg in tx.legs)}
            writers.update(i for a in data.writers for i in platform.apps[a])
            users &= coherent
            writers &= coherent
            if len(users) < 2 or not writers:
                continue
            for tx in touching:
                draft.add(tx.name, f"coherence({name})", self.id)


RULE = Coherence()
