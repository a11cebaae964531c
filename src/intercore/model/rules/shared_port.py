"""R7: a device documented too little to separate its parts (an integrated GPU, a DMA engine)
is a composite whose initiator and target share one port: CPU accesses to its registers and
its own traffic to memory interfere, whatever their direction."""

from __future__ import annotations

from ..draft import Draft, service
from ..platform import Platform
from .base import Rule


class SharedPort(Rule):
    id = "shared_port"
    code = "R7"
    title = "a composite device's initiator, target and port all interfere"
    reference = ("paper 000 §4.1: the iGPU as a composite with a single target and a single "
                 "initiator sharing a common port (conservative for undocumented devices)")
    setting = "kind: composite components"

    def apply(self, platform: Platform, draft: Draft) -> None:
        for composite in platform.composites.values():
            members = (composite.initiator, composite.target, composite.port)
            services = [service(owner, op) for m in members for owner in draft.owners(m)
                        for op in platform.components[m].services]
            for i, a in enumerate(services):
                for b in services[i + 1:]:
                    draft.interfere(a, b, self.id)


RULE = SharedPort()
