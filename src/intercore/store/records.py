"""What goes into the results store (…Record) and what comes back out (Stored…).

Inside one Store.record() call, workloads and samples are identified by their list index: a
sample (base/sample.py) names its victim by the index of a WorkloadRecord. The store maps
indexes to row ids, so callers never handle ids of rows that do not exist yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping

Role = Literal["victim", "aggressor", "canary"]
Status = Literal["complete", "interrupted"]

ROLES: tuple[str, ...] = ("victim", "aggressor", "canary")
STATUSES: tuple[str, ...] = ("complete", "interrupted")


def _check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)}; got {value!r}")


@dataclass(frozen=True)
class InvocationRecord:
    """One run of an intercore command. `status` is 'interrupted' when a run was stopped early
    but what it measured is still worth keeping; the row is written whole either way."""

    host_id: int
    command: str
    argv: tuple[str, ...]
    started_at: datetime
    finished_at: datetime
    tool_version: str
    params: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    status: Status = "complete"

    def __post_init__(self) -> None:
        _check_choice("status", self.status, STATUSES)
        if self.started_at.tzinfo is None or self.finished_at.tzinfo is None:
            raise ValueError("invocation timestamps must be timezone-aware")


@dataclass(frozen=True)
class WorkloadRecord:
    role: Role
    name: str
    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    cpu: int | None = None
    stats: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        _check_choice("role", self.role, ROLES)


@dataclass(frozen=True)
class StoredHost:
    id: int
    fingerprint: str
    hostname: str
    kernel: str
    cpu_model: str
    ncpus: int
    info: Mapping[str, Any]
    first_seen: datetime


@dataclass(frozen=True)
class StoredInvocation:
    id: int
    host: StoredHost
    command: str
    argv: tuple[str, ...]
    started_at: datetime
    finished_at: datetime
    status: str
    params: Mapping[str, Any]
    summary: Mapping[str, Any]
    tool_version: str


@dataclass(frozen=True)
class StoredWorkload:
    id: int
    invocation_id: int
    role: str
    name: str
    kind: str
    params: Mapping[str, Any]
    cpu: int | None
    stats: Mapping[str, Any] | None


@dataclass(frozen=True)
class InvocationListing:
    """An invocation with what a listing shows about it. `n` is the number of complete
    iso/int pairs of the `total` region in its weakest comparison (victim x aggressor set)."""

    invocation: StoredInvocation
    victims: tuple[str, ...]
    aggressor_sets: tuple[str, ...]
    n: int
