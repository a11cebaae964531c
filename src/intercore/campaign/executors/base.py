"""The contract between the campaign runner and an executor.

The runner decides *what* runs (one setup, one round); an executor decides *where* and hands
back the raw samples and workloads as the store records them, so local and remote runs are
stored and analysed identically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ...base.sample import Sample
from ...store.records import WorkloadRecord


@dataclass(frozen=True)
class RunRequest:
    """One run: the critical victim, paired against the contention engine `reps` times.

    `engine` holds aggressor specs in the grammar of `intercore measure run --aggressors`
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
    victim_args: tuple[str, ...] = ()  # the user's program's own (`victim` is its path)


@dataclass(frozen=True)
class GroupRequest:
    """Several setups of one round measured as one run: one victim process, every setup's
    aggressor set resident, the sets taking turns in randomised blocks of a few pairs
    (measure/harness/schedule.py), with the running canary between blocks when `canary` is set, so
    every setup meets the same host regimes. The requests share their victim, its parameters
    and CPU; `names[i]` is the setup of `requests[i]`. A solo request (no engine) is a set
    with no members, and keeps its `reps` isolated repetitions."""

    names: tuple[str, ...]
    requests: tuple[RunRequest, ...]
    seed: int
    canary: bool = True
    block_pairs: int | None = None  # None: chosen from the measured switch cost

    def __post_init__(self) -> None:
        if not self.requests or len(self.names) != len(self.requests):
            raise ValueError("a group needs one name per request, and at least one")
        first = self.requests[0]
        if any((r.victim, r.victim_params, r.victim_args, r.victim_cpu) !=
               (first.victim, first.victim_params, first.victim_args, first.victim_cpu)
               for r in self.requests):
            raise ValueError("the requests of a group must share their victim")


@dataclass
class RunOutput:
    """What a run produced. `workloads[0]` is the victim; samples name it as victim 0.
    `regime`: the run's one regime where its samples carry none (no running canary).
    `design`: how the run was measured (the group it was interleaved with, its blocks and
    the canary's probes), stored with the run."""

    workloads: list[WorkloadRecord]
    samples: list[Sample]
    started_at: float
    finished_at: float
    regime: str | None = None
    warnings: list[str] = field(default_factory=list)
    design: dict[str, Any] | None = None


class Executor(Protocol):
    name: str

    def plan(self, request: RunRequest) -> object:
        """The request resolved on this executor's machine, without running it: InputError
        for one it cannot run (checked for every setup before the first runs)."""

    def describe(self) -> dict[str, Any]:
        """Identity of the machine the runs execute on (kernel, CPU, binaries' hashes);
        part of every setup's content hash."""

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        """Run one request to completion. `on_start(role, pid)`, when given, is called for
        every process the run starts (enforcement backends move pids into their groups)."""

    def run_group(self, group: GroupRequest, *, on_start: Any = None) -> dict[str, RunOutput]:
        """Run a group's requests interleaved; one output per setup name, each holding that
        setup's samples only."""

    def close(self) -> None: ...
