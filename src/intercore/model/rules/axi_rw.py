"""R1: an AXI-style transporter carries reads and writes on separate channels, so its load and
store services do not contend (a shared read, or a shared write, still does)."""

from __future__ import annotations

from ..draft import Draft, service
from ..platform import Platform
from .base import Rule


class AxiReadWrite(Rule):
    id = "axi_rw"
    code = "R1"
    title = "independent AXI read and write channels"
    reference = ("ARM IHI 0022 (AMBA AXI and ACE Protocol Specification), chapter A1: five "
                 "independent channels, read address/data apart from write address/data/"
                 "response")
    setting = "rw_independent: true on a transporter"

    def apply(self, platform: Platform, draft: Draft) -> None:
        for comp in platform.components.values():
            if comp.rw_independent:
                for owner in draft.owners(comp.name):
                    draft.independent(service(owner, "load"), service(owner, "store"), self.id)


RULE = AxiReadWrite()
