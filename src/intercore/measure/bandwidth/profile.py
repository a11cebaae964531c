"""The periodic memory-bandwidth profiler of paper 004, driven through ic-profile.

    spec = ProfileSpec(command=("ic-victim", "stream"), sources=(source,), cpu=1, target_cpu=0)
    raw = run(spec)                      # samples, tags and the tool's own account
    prof = analyse(raw, calibration)     # bandwidth over time per source, regions, spikes

ic-profile busy-waits on its own core and samples every source each interval into memory;
the files it writes at the end are read here into numpy arrays. Ticks become nanoseconds
through the two (tick, CLOCK_MONOTONIC) pairs the tool took at the start and at the end of
sampling: the paper's temporal readjustment, which also absorbs a tick rate measured
slightly off at start-up.

Every series names its source (`Source.name`): a perf event of the CPU model's table, a
resctrl MBM counter, or the latency probe, whose bandwidth is an estimate through a
calibration (measure/bandwidth/probe.py) and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from ...base.errors import HostUnsupported, InputError, NativeError, require
from ..periodic.runner import duration_arg
from ...base.procs import NativeProcess, ProcessGroup, optional_args

SourceKind = Literal["perf", "mbm", "probe", "software"]

TAG_DTYPE = np.dtype([("tick", "<u8"), ("region", "<i4"), ("site", "<u2"), ("kind", "<u2")])
TAG_BEGIN, TAG_END = 0, 1
# A run of the profiler may take this long beyond its command to start and to write out.
FINISH_MARGIN_S = 120.0


@dataclass(frozen=True)
class Source:
    """Where readings come from and what one count means."""

    name: str                    # "perf:amd_umc.umc_cas_cmd.rd", "mbm:/sys/fs/resctrl", "probe"
    kind: SourceKind
    spec: str                    # ic-profile --source
    bytes_per_count: float | None = None   # perf/mbm: bytes per count; None: not bytes
    direction: str = "both"
    note: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "spec": self.spec,
                "bytes_per_count": self.bytes_per_count, "direction": self.direction,
                "note": self.note}


class Estimator(Protocol):
    """Turns the probe's per-line latency into bandwidth (a ProbeCalibration)."""

    @property
    def window(self) -> int: ...  # read-only: a frozen ProbeCalibration is one

    def estimate_mbps(self, latency_ns: np.ndarray) -> np.ndarray: ...

    def describe(self) -> dict: ...


@dataclass(frozen=True)
class ProfileSpec:
    sources: tuple[Source, ...]
    command: tuple[str, ...] = ()        # empty: the self-test's counting loop
    self_test_ns: int = 0
    interval_ns: int = 10_000
    cpu: int | None = None               # the profiler's dedicated core
    target_cpu: int | None = None
    priority: int = 0                    # profiler SCHED_FIFO priority; 0: SCHED_OTHER
    target_priority: int = 0
    duration_ns: int = 0                 # 0: until the command exits
    max_samples: int = 2_000_000
    tags: bool = True
    seed: int = 1

    def __post_init__(self) -> None:
        checks = (
            (1 <= len(self.sources) <= 4, "--source", "one to four sources"),
            (bool(self.command) != bool(self.self_test_ns), "COMMAND",
             "a command to profile, or the self-test, not both"),
            (1_000 <= self.interval_ns <= 1_000_000_000, "--interval", "must be 1us..1s"),
            (self.cpu is None or self.cpu != self.target_cpu, "--cpu",
             "the profiler needs a core of its own, not the command's"),
            (0 <= self.priority <= 99 and 0 <= self.target_priority <= 99, "--rt-priority",
             "must be 0..99"),
            (self.max_samples >= 1, "--max-samples", "must be at least 1"),
        )
        require(checks)

    def argv(self, out: Path, tags_out: Path | None, command_output: Path) -> list[str]:
        args = ["--interval", duration_arg(self.interval_ns), "--out", str(out),
                "--max-samples", str(self.max_samples), "--seed", str(self.seed),
                "--duration", duration_arg(self.duration_ns),
                "--command-output", str(command_output)]
        for s in self.sources:
            args += ["--source", s.spec]
        args += optional_args(("--cpu", self.cpu), ("--target-cpu", self.target_cpu),
                              ("--rt-priority", self.priority or None),
                              ("--target-rt-priority", self.target_priority or None),
                              ("--tags-out", tags_out))
        if self.self_test_ns:
            return args + ["--self-test", duration_arg(self.self_test_ns)]
        return args + ["--", *self.command]


@dataclass
class RawProfile:
    """What one ic-profile run left: its two JSON lines and the binary arrays."""

    spec: ProfileSpec
    ready: dict
    end: dict
    ticks: np.ndarray       # (n,) uint64
    readings: np.ndarray    # (n, sources) uint64
    tags: np.ndarray        # TAG_DTYPE
    command_output: str

    @property
    def names(self) -> list[str]:
        return list((self.end.get("ring") or {}).get("names", []))

    @property
    def sites(self) -> list[dict]:
        return list((self.end.get("ring") or {}).get("sites", []))


def _timeout(spec: ProfileSpec) -> float | None:
    limit = spec.duration_ns or spec.self_test_ns
    return None if not limit else limit / 1e9 + FINISH_MARGIN_S


def run(spec: ProfileSpec, *, timeout: float | None = None) -> RawProfile:
    """Run ic-profile to the end of its command; the files live in a private directory
    (mkdtemp, mode 0700) that is removed before returning."""
    work = Path(tempfile.mkdtemp(prefix="intercore-profile-"))
    try:
        out, tags_out, cmd_out = work / "samples.bin", work / "tags.bin", work / "command.out"
        argv = spec.argv(out, tags_out if spec.tags else None, cmd_out)
        with ProcessGroup() as group:
            process = group.add(NativeProcess.start("ic-profile", argv, name="ic-profile"))
            # Its command dies with it (PR_SET_PDEATHSIG) and its files are in `work`.
            process.stop_signal = signal.SIGKILL
            try:
                lines = process.finish(timeout if timeout is not None else
                                       (_timeout(spec) or 24 * 3600.0))
            except NativeError as exc:
                if process.proc.returncode == 3:
                    raise HostUnsupported(str(exc).split(": ", 1)[-1]) from None
                raise
        events = {e.get("event"): e for e in lines}
        if "ready" not in events or "end" not in events:
            raise NativeError(f"ic-profile printed no ready/end line: {lines}")
        end = events["end"]
        words = int(end["record_words"])
        data = np.fromfile(out, dtype="<u8") if out.exists() else np.zeros(0, "<u8")
        if data.size != int(end["samples"]) * words:
            raise NativeError(f"ic-profile wrote {data.size} words for {end['samples']} samples "
                              f"of {words}")
        data = data.reshape(-1, words)
        tags = np.fromfile(tags_out, dtype=TAG_DTYPE) if tags_out.exists() \
            else np.zeros(0, TAG_DTYPE)
        text = cmd_out.read_text(errors="replace") if cmd_out.exists() else ""
        raw = RawProfile(spec, events["ready"], end, data[:, 0].copy(), data[:, 1:].copy(),
                         tags, text)
        if end.get("exec_errno"):
            raise InputError(f"cannot run {spec.command[0]!r}: "
                             f"{os.strerror(int(end['exec_errno']))}", field="COMMAND")
        return raw
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- from ticks and counts to bandwidth ---------------------------------------------------------

def ticks_to_ns(ticks: np.ndarray, end: dict) -> np.ndarray:
    """ns since the start of sampling: linear through the tool's start and end clock pairs."""
    t0, t1 = int(end["t0_tick"]), int(end["t1_tick"])
    n0, n1 = int(end["t0_ns"]), int(end["t1_ns"])
    if t1 <= t0:
        raise NativeError("ic-profile's clock pairs do not advance")
    scale = (n1 - n0) / (t1 - t0)
    return (ticks.astype(np.int64) - t0).astype(np.float64) * scale


@dataclass(frozen=True)
class Series:
    """One source over the run. Sample i covers [t_ns[i-1], t_ns[i]] for counters, so
    rates start at the second sample; probe readings are their own instant."""

    source: Source
    t_ns: np.ndarray                 # time of each value, ns since the start of sampling
    mbps: np.ndarray | None          # 10^6 bytes/s; None for a count that is not bytes
    rate: np.ndarray                 # counts/s, or the probe's latency in ns per line
    estimated: bool = False          # bandwidth through the probe's calibration
    estimator: dict | None = None

    @property
    def unit(self) -> str:
        return "ns/line" if self.source.kind == "probe" else "counts/s"


def rolling_median(x: np.ndarray, window: int) -> np.ndarray:
    """Median of the `window` readings ending at each sample (fewer at the start)."""
    if window <= 1 or x.size == 0:
        return x.astype(np.float64)
    pad = np.concatenate([np.full(window - 1, np.nan), x.astype(np.float64)])
    view = np.lib.stride_tricks.sliding_window_view(pad, window)
    return np.nanmedian(view, axis=1)


def series(raw: RawProfile, index: int, estimator: Estimator | None = None) -> Series:
    source = raw.spec.sources[index]
    t = ticks_to_ns(raw.ticks, raw.end)
    values = raw.readings[:, index]
    if source.kind == "probe":
        lines = next(s["lines"] for s in raw.ready["sources"] if s["spec"] == source.spec)
        hz = float(raw.ready["tick_hz"])
        latency = values.astype(np.float64) / hz * 1e9 / lines
        if estimator is None:
            return Series(source, t, None, latency)
        smooth = rolling_median(latency, estimator.window)
        return Series(source, t, estimator.estimate_mbps(smooth), latency, True,
                      estimator.describe())
    ok = values != np.iinfo(np.uint64).max
    dt = np.diff(t) / 1e9
    dv = np.diff(values.astype(np.float64))
    good = ok[1:] & ok[:-1] & (dt > 0)
    rate = np.where(good, dv / np.where(dt > 0, dt, 1), np.nan)
    mbps = None if source.bytes_per_count is None else rate * source.bytes_per_count / 1e6
    return Series(source, t[1:], mbps, rate)


# ---- regions from tags --------------------------------------------------------------------------

@dataclass(frozen=True)
class RegionSpan:
    region: int
    name: str
    begin_ns: float
    end_ns: float
    depth: int          # nesting depth: 0 for the outermost
    site: str           # file:line of the BEGIN marker


def _site(sites: list[dict], index: int) -> str:
    if 0 <= index < len(sites):
        return f"{Path(sites[index]['file']).name}:{sites[index]['line']}"
    return "?"


def regions(raw: RawProfile) -> list[RegionSpan]:
    """Matched BEGIN/END pairs, in BEGIN order; an unmatched BEGIN ends at the last sample."""
    if raw.tags.size == 0:
        return []
    t = ticks_to_ns(raw.tags["tick"], raw.end)
    names, sites = raw.names, raw.sites
    stack: list[tuple[int, float, int]] = []
    spans = []
    for when, tag in zip(t, raw.tags):
        region, kind = int(tag["region"]), int(tag["kind"])
        if kind == TAG_BEGIN:
            stack.append((region, float(when), int(tag["site"])))
            continue
        for k in range(len(stack) - 1, -1, -1):
            if stack[k][0] == region:
                r, begin, site = stack.pop(k)
                spans.append(RegionSpan(r, names[r] if r < len(names) else str(r), begin,
                                        float(when), k, _site(sites, site)))
                break
    last = float(ticks_to_ns(raw.ticks[-1:], raw.end)[0]) if raw.ticks.size else 0.0
    for k, (r, begin, site) in enumerate(stack):
        spans.append(RegionSpan(r, names[r] if r < len(names) else str(r), begin, last, k,
                                _site(sites, site)))
    return sorted(spans, key=lambda s: (s.begin_ns, s.depth))


def last_tag_before(raw: RawProfile, t_ns: float) -> str | None:
    """`begin stream.triad at stream.c:43`: the newest tag at or before t_ns."""
    if raw.tags.size == 0:
        return None
    t = ticks_to_ns(raw.tags["tick"], raw.end)
    i = int(np.searchsorted(t, t_ns, side="right")) - 1
    if i < 0:
        return None
    tag = raw.tags[i]
    r = int(tag["region"])
    name = raw.names[r] if r < len(raw.names) else str(r)
    kind = "begin" if int(tag["kind"]) == TAG_BEGIN else "end"
    return f"{kind} {name} at {_site(raw.sites, int(tag['site']))}"


# ---- spikes -------------------------------------------------------------------------------------

def spike_runs(values: np.ndarray, threshold: float, min_samples: int) -> list[tuple[int, int]]:
    """[start, end) index ranges where values stay above threshold for at least min_samples
    consecutive samples (NaN breaks a run)."""
    above = np.nan_to_num(values, nan=-np.inf) > threshold
    runs, start = [], None
    for i, hot in enumerate(above):
        if hot and start is None:
            start = i
        elif not hot and start is not None:
            if i - start >= min_samples:
                runs.append((start, i))
            start = None
    if start is not None and len(above) - start >= min_samples:
        runs.append((start, len(above)))
    return runs


def auto_threshold(mbps: np.ndarray, k: float = 6.0) -> float:
    """median + k·MAD (scaled to σ for a normal distribution): robust to the spikes it looks
    for. A flat profile has MAD ≈ 0, so the threshold never drops below 1 MB/s above the
    median."""
    finite = mbps[np.isfinite(mbps)]
    if finite.size == 0:
        return float("inf")
    med = float(np.median(finite))
    mad = float(np.median(np.abs(finite - med))) * 1.4826
    return med + max(k * mad, 1.0)


@dataclass(frozen=True)
class Spike:
    start_ns: float
    end_ns: float
    samples: int
    peak_mbps: float
    mean_mbps: float
    region: str | None        # innermost region open at the peak
    site: str | None          # file:line of that region's BEGIN marker
    last_tag: str | None      # the newest tag at or before the spike's start

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def find_spikes(raw: RawProfile, s: Series, threshold_mbps: float, min_samples: int,
                spans: list[RegionSpan] | None = None) -> list[Spike]:
    if s.mbps is None:
        return []
    spans = regions(raw) if spans is None else spans
    out = []
    for a, b in spike_runs(s.mbps, threshold_mbps, min_samples):
        chunk = s.mbps[a:b]
        peak_i = a + int(np.nanargmax(chunk))
        peak_t = float(s.t_ns[peak_i])
        inside = [sp for sp in spans if sp.begin_ns <= peak_t <= sp.end_ns]
        inner = max(inside, key=lambda sp: (sp.depth, sp.begin_ns)) if inside else None
        start_t = float(s.t_ns[a - 1]) if a > 0 else float(s.t_ns[a])
        out.append(Spike(start_t, float(s.t_ns[b - 1]), b - a, float(np.nanmax(chunk)),
                         float(np.nanmean(chunk)), inner.name if inner else None,
                         inner.site if inner else None, last_tag_before(raw, start_t)))
    return out


# ---- the whole profile --------------------------------------------------------------------------

@dataclass
class Profile:
    raw: RawProfile
    series: list[Series]
    spans: list[RegionSpan]
    spikes: dict[str, list[Spike]] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    min_samples: int = 1

    @property
    def duration_ns(self) -> float:
        return float(int(self.raw.end["t1_ns"]) - int(self.raw.end["t0_ns"]))

    def spacing(self) -> dict:
        """How evenly samples were taken: the paper's design goal for busy-waiting."""
        t = ticks_to_ns(self.raw.ticks, self.raw.end)
        d = np.diff(t)
        if d.size == 0:
            return {"n": int(t.size), "median_ns": None, "p99_ns": None, "max_ns": None,
                    "jitter_ns": None}
        target = self.raw.spec.interval_ns
        return {"n": int(t.size), "median_ns": float(np.median(d)),
                "p99_ns": float(np.percentile(d, 99)), "max_ns": float(d.max()),
                "jitter_ns": float(np.median(np.abs(d - target)))}

    def summary(self) -> dict:
        end = self.raw.end
        wall = self.duration_ns
        out = {
            "samples": int(end["samples"]), "missed": int(end["missed"]),
            "truncated": bool(end["truncated"]), "interval_ns": self.raw.spec.interval_ns,
            "duration_ns": wall, "spacing": self.spacing(),
            "profiler_cpu_ns": int(end["profiler_cpu_ns"]),
            "profiler_cpu_pct": 100.0 * int(end["profiler_cpu_ns"]) / wall if wall else None,
            "tags": int(end["tags"]), "tags_dropped": int(end["tags_dropped"]),
            "exit_code": end["exit_code"], "signal": end["signal"],
            "min_spike_samples": self.min_samples, "sources": [],
        }
        for s in self.series:
            entry: dict = {**s.source.to_dict(), "estimated": s.estimated,
                           "estimator": s.estimator, "unit": s.unit}
            finite = s.rate[np.isfinite(s.rate)]
            entry["rate_median"] = float(np.median(finite)) if finite.size else None
            if s.mbps is not None:
                m = s.mbps[np.isfinite(s.mbps)]
                entry.update({"mbps_median": float(np.median(m)) if m.size else None,
                              "mbps_p99": float(np.percentile(m, 99)) if m.size else None,
                              "mbps_max": float(m.max()) if m.size else None,
                              "mbps_mean": float(m.mean()) if m.size else None})
            entry["threshold_mbps"] = self.thresholds.get(s.source.name)
            entry["spikes"] = [sp.to_dict() for sp in self.spikes.get(s.source.name, [])]
            out["sources"].append(entry)
        out["regions"] = [sp.__dict__ for sp in self.spans]
        return out


def analyse(raw: RawProfile, estimator: Estimator | None = None, *,
            threshold_mbps: float | None = None, min_samples: int = 2) -> Profile:
    """Series per source, the regions from the tags, and the spikes of every byte series
    (above `threshold_mbps`, or auto_threshold, for at least `min_samples` samples)."""
    all_series = [series(raw, i, estimator if s.kind == "probe" else None)
                  for i, s in enumerate(raw.spec.sources)]
    spans = regions(raw)
    prof = Profile(raw, all_series, spans, min_samples=min_samples)
    for s in all_series:
        if s.mbps is None:
            continue
        threshold = threshold_mbps if threshold_mbps is not None else auto_threshold(s.mbps)
        prof.thresholds[s.source.name] = threshold
        prof.spikes[s.source.name] = find_spikes(raw, s, threshold, min_samples, spans)
    return prof


def footprint(prof: Profile) -> dict:
    """The self-test (paper 004 §3.2): profiling a counting loop, whatever traffic shows is
    the profiler's own (plus the host's background). The profile is flat when 99 % of its
    samples lie below the spike threshold: a transient blip (a page touched for the first
    time) is reported as a spike but does not make a profile ragged. The probe's own traffic
    is known exactly: its lines per sample."""
    out: dict = {"flat": True, "sources": []}
    for s in prof.series:
        entry: dict = {"name": s.source.name, "estimated": s.estimated}
        if s.mbps is not None:
            m = s.mbps[np.isfinite(s.mbps)]
            p99 = float(np.percentile(m, 99)) if m.size else None
            threshold = prof.thresholds.get(s.source.name, float("inf"))
            flat = p99 is not None and p99 <= threshold
            out["flat"] = out["flat"] and flat
            entry.update({"median_mbps": float(np.median(m)) if m.size else None,
                          "p99_mbps": p99, "max_mbps": float(m.max()) if m.size else None,
                          "threshold_mbps": threshold, "flat": flat,
                          "spikes": len(prof.spikes.get(s.source.name, []))})
        if s.source.kind == "probe":
            spec = next(x for x in prof.raw.ready["sources"] if x["spec"] == s.source.spec)
            entry["probe_own_mbps"] = (spec["lines"] * spec["line"]
                                       / (prof.raw.spec.interval_ns / 1e9) / 1e6)
        out["sources"].append(entry)
    return out


def dumps_summary(prof: Profile) -> str:
    return json.dumps(prof.summary(), default=float)
