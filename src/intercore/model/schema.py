"""The platform-model file format (YAML), as pydantic models.

These models check the *shape* of one file after its ranges are expanded (see ranges.py and
loader.py): field names, types, enumerations. Whether names refer to something, whether
paths connect and whether a field suits a component's kind are model-level checks made by the
loader, which reports them with the same file:line: field precision.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field,
                      model_validator)

from ..base.parse import parse_size
from .ranges import MAX_MEMBERS

FORMAT_VERSION: Final = 1

Op = Literal["load", "store"]
OPS: tuple[str, ...] = ("load", "store")
Kind = Literal["initiator", "transporter", "target", "composite"]
# What a component is; the rules and the validation mapping read it (a "cache" target with a
# level is exercised by a micro-benchmark sized to it, a "tlb" takes part in page walks).
Role = Literal["core", "cache", "tlb", "memory", "registers", "bus", "controller", "port",
               "mmu", "accelerator", "device"]


def _size(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_size(value)
        except ValueError:
            raise ValueError(f"cannot parse size {value!r} (examples: 32K, 1M, 4G)") from None
    return value


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Size = Annotated[int, BeforeValidator(_size), Field(gt=0)]
Names = Annotated[list[str], BeforeValidator(_listed)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NonInterferenceSpec(_Strict):
    """Pairs of services that do not contend, with the reason and where it is stated. On a
    component the services are its own operations (`[load, store]`); at the platform level
    they are `COMPONENT.OP` or `COMPONENT` (both operations)."""

    id: str | None = None
    pairs: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(min_length=1)
    why: str = Field(min_length=1)
    ref: str = Field(min_length=1)
    reviewer: str | None = None


def _power_of_two(n: int) -> int:
    if n & (n - 1):
        raise ValueError(f"a line size is a power of two, not {n}")
    return n


class ComponentSpec(_Strict):
    kind: Kind
    role: Role | None = None
    cpu: int | None = Field(None, ge=0, description="host CPU number of an initiator")
    coherent: bool | None = None  # an initiator taking part in cache coherence
    size: Size | None = None
    # Bounds far above any real part (32 ways, 64 banks, 128-byte lines) that keep what is
    # built from them (a set per way, a resource per bank) small: a typo is refused at its
    # line, not met as a MemoryError.
    ways: int | None = Field(None, gt=0, le=1024)
    sets: int | None = Field(None, gt=0, le=2**24)
    line: Annotated[int, AfterValidator(_power_of_two)] | None = Field(None, ge=8, le=4096)
    level: int | None = Field(None, ge=1)
    private_to: str | None = None
    inclusive_of: Names = []
    rw_independent: bool = False
    banks: int | None = Field(None, gt=0, le=MAX_MEMBERS)
    prefetch_via: Names = []
    walk_via: Names = []
    services: list[Op] = ["load", "store"]
    non_interfering: list[NonInterferenceSpec] = []
    # composite only: the device's initiator, target and the one port they share
    initiator: str | None = None
    target: str | None = None
    port: str | None = None
    ref: str | None = None
    verified: bool = True
    note: str | None = None


class DataSpec(_Strict):
    at: str
    banks: list[Annotated[int, Field(ge=0)]] | None = None
    writers: Names = []
    readers: Names = []
    note: str | None = None


class LegSpec(_Strict):
    """One path of a multi-path transaction: an access from the transaction's initiator."""

    name: str | None = None
    op: Op
    data: str | None = None
    target: str | None = None
    via: Names = []
    avoid: Names = []

    @model_validator(mode="after")
    def _target_or_data(self) -> LegSpec:
        if self.data is None and self.target is None:
            raise ValueError("give data (hosted somewhere) or target (where the access is "
                             "served), or both")
        return self


class TransactionSpec(_Strict):
    app: str
    op: Op | None = None
    data: str | None = None
    target: str | None = None
    legs: list[LegSpec] = []
    refill: Names = []
    writeback: bool = False
    page_walk: bool = False
    tlbi: bool = False
    via: Names = []
    avoid: Names = []
    used: bool = True
    note: str | None = None

    @model_validator(mode="after")
    def _target_or_data(self) -> TransactionSpec:
        if self.legs:
            given = [f for f in ("op", "data", "target", "via", "avoid") if getattr(self, f)]
            if given:
                raise ValueError(f"a transaction with legs gives op, data, target, via and "
                                 f"avoid on each leg, not on the transaction (got "
                                 f"{', '.join(given)})")
            return self
        if self.op is None:
            raise ValueError("give op (load or store), or legs: [...] for a multi-path "
                             "transaction")
        if self.data is None and self.target is None:
            raise ValueError("give data (hosted somewhere) or target (where the access is "
                             "served), or both")
        return self


class AppSpec(_Strict):
    """An application: the initiators it runs on and the data it reads and writes, from
    which its transactions are derived (one per initiator, operation and path)."""

    runs_on: Names = Field(min_length=1)
    reads: Names = []
    writes: Names = []
    note: str | None = None


class RoutingSpec(_Strict):
    """A routing constraint for a class of initiators: every path from one of `from_` (or an
    initiator with one of `roles`) to one of `to` (every target when absent) goes via / avoids
    the listed components."""

    id: str | None = None
    from_: Names = Field([], alias="from")
    roles: list[Role] = []
    to: Names = []
    via: Names = []
    avoid: Names = []
    why: str = Field(min_length=1)
    ref: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> RoutingSpec:
        if not self.from_ and not self.roles:
            raise ValueError("say which initiators the rule is for: from: [...] or "
                             "roles: [...]")
        if not self.via and not self.avoid:
            raise ValueError("give via: [...] or avoid: [...]")
        return self


class ConfigurationSpec(_Strict):
    """A named configuration: what is switched off in it (components, links `a>b`)."""

    disabled: Names = Field(min_length=1)
    note: str | None = None


class ConfigSpec(_Strict):
    prefetch: dict[str, bool] = {}
    partitions: dict[str, dict[str, Names]] = {}
    time_slices: dict[str, Names] = {}


ASSUMPTION_KINDS = ("interfere_with", "not_interfere_with", "interfere", "exclusive",
                    "transparent", "premise")


class AssumptionSpec(_Strict):
    id: str | None = None
    tx: Names = []
    app: Names = []
    interfere_with: Names = []
    not_interfere_with: Names = []
    interfere: Names = []
    exclusive: Names = []
    transparent: Names = []
    premise: str | None = None
    why: str = Field(min_length=1)
    ref: str = Field(min_length=1)
    reviewer: str | None = None

    @property
    def kind(self) -> str:
        return next(k for k in ASSUMPTION_KINDS if getattr(self, k))

    @model_validator(mode="after")
    def _one_kind(self) -> AssumptionSpec:
        given = [k for k in ASSUMPTION_KINDS if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(ASSUMPTION_KINDS)}"
                             + (f" (got {', '.join(given)})" if given else ""))
        about_tx = given[0] in ("interfere_with", "not_interfere_with")
        if about_tx and not (self.tx or self.app):
            raise ValueError(f"{given[0]} needs tx or app: whose footprint it edits")
        if not about_tx and (self.tx or self.app):
            raise ValueError(f"tx and app only go with interfere_with / not_interfere_with, "
                             f"not with {given[0]}")
        return self


class HostSpec(_Strict):
    """Where a detected model came from; validation compares it with the running host."""

    model_name: str | None = None
    hypervisor: str | None = None
    kernel: str | None = None
    cpus: str | None = None
    detected_at: str | None = None


class ModelSpec(_Strict):
    format: Literal[1] = FORMAT_VERSION
    platform: str = Field(min_length=1)
    title: str | None = None
    sources: dict[str, str] = {}
    topology_trust: Literal["high", "low"] = "high"
    host: HostSpec | None = None
    components: dict[str, ComponentSpec]
    links: list[str] = []
    apps: dict[str, Annotated[AppSpec, BeforeValidator(
        lambda v: {"runs_on": v} if isinstance(v, str) else v)]] = {}
    data: dict[str, Annotated[DataSpec, BeforeValidator(
        lambda v: {"at": v} if isinstance(v, str) else v)]] = {}
    transactions: dict[str, TransactionSpec] = {}
    config: ConfigSpec = ConfigSpec()
    rules: list[str] | None = None
    assumptions: list[AssumptionSpec] = []
    non_interfering: list[NonInterferenceSpec] = []
    routing: list[RoutingSpec] = []
    configurations: dict[str, ConfigurationSpec] = {}
