"""What one stored invocation recorded with times: the results model the report's timeline
draws (periodic jobs and the monitor's log, a bandwidth profile as series and region spans,
the interleaved schedule's samples). Loading it is the measure stage's job, so that the
report reads a results model and never the store or the profiler's raw records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..base.errors import InputError
from ..base.job import JobResult
from ..base.sample import Sample
from ..store import Store
from .bandwidth import profile
from .bandwidth.store import load_profile


@dataclass(frozen=True)
class CounterSeries:
    """One profiled source over time, in the unit it is shown in."""

    name: str
    unit: str
    t_ns: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class RecordedRun:
    invocation_id: int
    command: str
    summary: Mapping[str, Any]
    jobs: dict[tuple[str, str], list[JobResult]]
    deadlines: dict[tuple[str, str], int]
    cpus: dict[str, int | None]
    aggressors: frozenset[str]
    victims: dict[int, str]
    samples: tuple[Sample, ...]
    counters: tuple[CounterSeries, ...]
    regions: tuple[profile.RegionSpan, ...]

    @property
    def monitor_logs(self) -> dict[str, list[dict]]:
        return self.summary.get("monitor_logs") or {}


def load(store: Store, invocation_id: int) -> RecordedRun:
    """The invocation's timed records; InputError when it holds nothing with times."""
    inv = store.get_invocation(invocation_id)
    if inv is None:
        raise InputError(f"no invocation with id {invocation_id} in {store.path}", field="ID")
    jobs = store.jobs.of_invocation(invocation_id)
    samples = tuple(s for s in store.samples_for(invocation_id) if s.block_start_ns is not None)
    counters: list[CounterSeries] = []
    regions: list[profile.RegionSpan] = []
    has_profile = store.profiles.holds(invocation_id)
    if has_profile:
        raw = load_profile(store, invocation_id)
        for index, source in enumerate(raw.spec.sources):
            s = profile.series(raw, index)
            values, unit = (s.mbps, "MB/s") if s.mbps is not None else (s.rate, s.unit)
            counters.append(CounterSeries(f"{source.spec} ({unit})", unit,
                                          tuple(float(t) for t in s.t_ns),
                                          tuple(float(v) for v in values)))
        regions = profile.regions(raw)
    if not jobs and not has_profile and not samples:
        raise InputError(f"invocation {invocation_id} ({inv.command}) holds nothing with times "
                         "on a clock: a timeline needs periodic jobs (experiment, matrix), "
                         "a bandwidth profile, or samples of the interleaved schedule "
                         "(measure, campaign runs)", field="ID")
    workloads = store.workloads_for(invocation_id)
    return RecordedRun(
        invocation_id, inv.command, inv.summary or {}, jobs, store.jobs.deadlines(invocation_id),
        {w.name: w.cpu for w in workloads},
        frozenset(w.name for w in workloads if w.role == "aggressor"),
        {w.id: w.name for w in workloads}, samples, tuple(counters), tuple(regions))
