"""The contract between the campaign runner and an executor.

The runner decides *what* runs (one setup, one round); an executor decides *where* and hands
back the raw samples and workloads as the store records them, so local and remote runs are
stored and analysed identically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ...measure.sample import Sample
from ...store.records import WorkloadRecord


@dataclass(frozen=True)
class RunRequest:
    """One run: the critical victim, paired against the contention engine `reps` times.

    `engine` holds aggressor specs in the grammar of `intercore measure --aggressors`
    (e.g. "bw:op=write,size=1M"), one aggressor set; empty for a solo baseline, which is then
    measured without pairing (every sample has condition 'iso').
    """

    victim: str
    victim_params: tuple[str, ...] = ()
    victim_cpu: int | None = None
    engine: tuple[str, ...] = ()
    engine_cpus: tuple[int, ...] | None = None
    reps: int = 10
    seed: int = 1


@dataclass
class RunOutput:
    """What a run produced. `workloads[0]` is the victim; samples name it as victim 0."""

    workloads: list[WorkloadRecord]
    samples: list[Sample]
    started_at: float
    finished_at: float
    regime: str | None = None
    warnings: list[str] = field(default_factory=list)


class Executor(Protocol):
    name: str

    def describe(self) -> dict[str, Any]:
        """Identity of the machine the runs execute on (kernel, CPU, binaries' hashes);
        part of every setup's content hash."""

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        """Run one request to completion. `on_start(role, pid)`, when given, is called for
        every process the run starts (enforcement backends move pids into their groups)."""

    def close(self) -> None: ...
