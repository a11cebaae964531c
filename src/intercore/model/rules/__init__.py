"""The refinement rules, one module each, in the order they are applied.

Order matters where one rule reads what another added: the prefetcher (R5) fires for the
cache refills of a miss (R3) and for page walks (R6). The bank split (R8) names services
rather than adding them, so it acts wherever a memory is touched, by a path or by a rule.
"""

from __future__ import annotations

from . import (axi_rw, coherence, ddr_banks, inclusive_cache, miss_refill, prefetch,
               shared_port, tlb_walk)
from .base import Rule, SplitRule

_MODULES = (axi_rw, inclusive_cache, miss_refill, coherence, tlb_walk, prefetch, shared_port,
            ddr_banks)

RULES: dict[str, Rule] = {m.RULE.id: m.RULE for m in _MODULES}

__all__ = ["RULES", "Rule", "SplitRule"]
