"""R1: an AXI-style transporter carries reads and writes on separate channels, so its load and
store services do not contend (a shared read, or a shared write, still does).

One user of declared non-interference: `rw_independent: true` is shorthand for a
`non_interfering` declaration of the component's load and store whose rationale is the AMBA
AXI specification. A component whose separation has another reason (a memory controller's
read and write clients) declares `non_interfering` itself, citing its own document."""

from __future__ import annotations

from ..draft import Draft, service
from ..platform import NonInterference, Platform
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
                pair = (service(comp.name, "load"), service(comp.name, "store"))
                draft.declare(NonInterference(
                    f"{self.id}:{comp.name}", (pair,), why=self.title, ref=self.reference,
                    component=comp.name, rule=self.id), origin=self.id)


RULE = AxiReadWrite()
