"""R8: DRAM banks are separate arrays behind one shared controller. A memory declared with
banks is split into per-bank service owners; data confined to some banks (bank partitioning)
uses only those, data without a bank assignment spreads over all of them. The controller
stays shared: partitioning removes only the bank nodes."""

from __future__ import annotations

from ..platform import Platform
from .base import SplitRule


def _bank_owners(component: str, banks) -> list[str]:
    return [f"{component}#b{b}" for b in banks]


class DdrBanks(SplitRule):
    id = "ddr_banks"
    code = "R8"
    title = "DRAM banks apart, the DDR controller shared"
    reference = ("JEDEC JESD209-4 (LPDDR4) and JESD79-4 (DDR4): independent banks behind one "
                 "command/data bus; PALLOC-style bank partitioning")
    setting = "banks: N on a memory target; banks: [...] on data"

    def owners_for(self, platform: Platform, data: tuple[str, ...], component: str
                   ) -> list[str] | None:
        comp = platform.components[component]
        if comp.role != "memory" or not comp.banks:
            return None
        banks: set[int] = set()
        for name in data:
            d = platform.data.get(name)
            if d is None or d.at != component:
                continue
            if d.banks is None:  # spread over every bank
                return _bank_owners(component, range(comp.banks))
            banks.update(d.banks)
        return _bank_owners(component, sorted(banks) if banks else range(comp.banks))

    def all_owners(self, platform: Platform, component: str) -> list[str] | None:
        comp = platform.components[component]
        if comp.role != "memory" or not comp.banks:
            return None
        return _bank_owners(component, range(comp.banks))


RULE = DdrBanks()
