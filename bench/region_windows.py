#!/usr/bin/env python3
"""Region windows benchmark: protection that follows the code (issue 21 item 3).

    python bench/region_windows.py [--rounds 6] [--jobs 60] [--json]

A critical periodic task (the phases victim: register-only compute, a memory stream, compute
again, sized so that the stream, its sensitive region, is about a third of the job) runs
beside a best-effort bandwidth aggressor (ic-aggr bw over 64 MiB, the worst kind for a
streaming region, on the other CPU) under the event monitor, once freezing the aggressor for
each whole job (job-level, from release to completion) and once only in the stream region
(`--window-region phases.stream`, region-level). The two are interleaved, round by round,
on fresh cgroups. Prints per mode the critical misses, the aggressor's progress (its CPU
time per second of the run) and, for region-level, region entry -> frozen (the freeze
write returned, from the marker's own timestamp), then one line per goal (bench/_goals.py,
failing closed: a figure that was not produced fails its goal):

    critical misses                 == 0 in both modes
    best-effort progress ratio      region-level / job-level >= 1.5 (median, 95% bootstrap CI)
    region entry -> frozen p99      <= 100 us (n, and a distribution-free 95% CI)

Needs root (SCHED_FIFO), the cgroup v2 freezer and two CPUs; refuses otherwise (exit 3).
Run it alone: `flock /tmp/intercore-heavy.lock python bench/region_windows.py`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from _cgroups import bench_groups
from _cgroups import host_problem as cgroup_host_problem
from _goals import Goals
from intercore.campaign.stats import median_ci, ratio_ci
from intercore.host.topology import read_topology
from intercore.measure.periodic.runner import PeriodicSpec, PeriodicTask, start_together
from intercore.base.procs import ProcessGroup, shm_path
from intercore.mitigate.freezer.drill import busy
from intercore.mitigate.freezer.monitor import Monitor, MonitorSpec, read_log

MS = 1_000_000
WINDOW = "phases.stream"
COMPUTE_MS = 3           # each of the two compute phases
PERIOD_MS = 15
AGGRESSOR = "64M"
# The aggressor shares the monitor's CPU (which it outranks only while frozen): beside the
# critical task's core, the cross-core bandwidth interference the windows protect from.
# Unpinned, it ran on the critical CPU between jobs only, so the two modes gave it different
# CPUs as well as different thawed time (a first run: ratio 1.31 on a host at load 13).
MONITOR_CPU, CRITICAL_CPU = 0, 1
PROGRESS_GOAL, LATENCY_GOAL_US = 1.5, 100.0


def host_problem() -> str | None:
    problem = cgroup_host_problem()
    if problem:
        return problem
    if not {MONITOR_CPU, CRITICAL_CPU} <= set(read_topology().online_cpus):
        return "needs CPUs 0 and 1: the monitor and the critical task each on its own"
    return None


def cpu_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def run(mode: str, size: str, jobs: int, tag: str, windows_only: bool = False) -> dict:
    """One run of the critical task under the monitor in `mode` (job | region), with the
    aggressor unless `windows_only` (the calibration: the stream's solo duration)."""
    notify = shm_path(f"bench-rw-{os.getpid()}-{tag}")
    log = Path(f"/tmp/bench-rw-{os.getpid()}-{tag}.jsonl")
    try:
        with bench_groups(f"intercore-bench-rw-{os.getpid()}-{tag}") as (critical, be), \
                ProcessGroup() as owner:
            noise = None if windows_only else busy(be, owner, AGGRESSOR, MONITOR_CPU)
            spec = PeriodicSpec(name="critical", binary="victim", kind="phases",
                                params=(("size", size), ("compute", f"{COMPUTE_MS}ms")),
                                period_ns=PERIOD_MS * MS, deadline_ns=PERIOD_MS * MS,
                                jobs=jobs, priority=10, cpu=CRITICAL_CPU,
                                cgroups=(str(critical),))
            task = PeriodicTask.launch(spec, owner, notify=notify)
            monitor = Monitor.start(MonitorSpec(
                policy="event", best_effort=(str(be),), notify=str(notify),
                cpu=MONITOR_CPU, priority=50, log=str(log), exit_with_runner=True,
                max_freeze="none", window_regions=(WINDOW,) if mode == "region" else ()),
                owner)
            start = start_together([task])
            before = cpu_ns(noise.pid) if noise else 0
            result = task.result()
            after = cpu_ns(noise.pid) if noise else 0
            wall = time.monotonic_ns() - start
            stats = monitor.wait()
        entries = read_log(log)
    finally:
        notify.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    latencies = [e.latency_ns for e in entries
                 if e.action == "freeze" and e.reason == "region" and e.latency_ns is not None]
    streams = [w.exit_ns - w.enter_ns for w in result.windows]
    job_ns = [j.end_ns - j.start_ns for j in result.jobs]
    return {"mode": mode, "jobs": len(result.jobs), "misses": result.summary.misses,
            "progress": (after - before) / wall if noise else None,
            "latencies_ns": latencies, "windows": stats.windows,
            "missed_windows": stats.missed_windows, "fallback": stats.window_fallback,
            "write_errors": stats.write_errors,
            "stream_share": (sum(streams) / sum(job_ns)) if streams and len(streams) == len(
                job_ns) else None,
            "stream_ns": streams}


def calibrate(jobs: int) -> tuple[str, float | None]:
    """The stream size whose region lasts about one compute phase (a third of the job)."""
    size_mib = 8
    for attempt in range(3):
        r = run("region", f"{size_mib}M", jobs, f"cal{attempt}", windows_only=True)
        if not r["stream_ns"]:
            return f"{size_mib}M", None
        median = sorted(r["stream_ns"])[len(r["stream_ns"]) // 2]
        wanted = max(1, round(size_mib * COMPUTE_MS * MS / median))
        if abs(wanted - size_mib) <= max(1, size_mib // 10):
            return f"{size_mib}M", r["stream_share"]
        size_mib = min(wanted, 1024)
    return f"{size_mib}M", r["stream_share"]


def quantile_ci(values: list[float], q: float, confidence: float = 0.95
                ) -> tuple[float, float, float] | None:
    """The q-quantile (nearest rank) and a distribution-free CI from the order statistics
    (binomial ranks); None when n is too small for the interval to exist."""
    xs = sorted(values)
    n = len(xs)
    if n < 2:
        return None
    point = xs[min(n - 1, max(0, math.ceil(q * n) - 1))]
    cdf, acc = [], 0.0
    for k in range(n + 1):
        acc += math.comb(n, k) * q ** k * (1 - q) ** (n - k)
        cdf.append(acc)
    tail = (1 - confidence) / 2
    lo = next((k for k in range(n + 1) if cdf[k] >= tail), 0)
    hi = next((k for k in range(n + 1) if cdf[k] >= 1 - tail), n)
    if hi >= n:
        return point, xs[max(0, lo - 1)], math.inf  # too few samples above the quantile
    return point, xs[max(0, lo - 1)], xs[hi]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (default 6)")
    ap.add_argument("--jobs", type=int, default=60, help="critical jobs per run (default 60)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for opt, value, least in (("--rounds", args.rounds, 2), ("--jobs", args.jobs, 10)):
        if value < least:
            print(f"error: {opt} must be at least {least}", file=sys.stderr)
            return 2
    problem = host_problem()
    if problem:
        print(f"region_windows bench refused: {problem}", file=sys.stderr)
        return 3
    size, share = calibrate(20)
    print(f"stream size {size}: stream region {fmt(share, 100)}% of the job (solo)",
          file=sys.stderr)
    runs: dict[str, list[dict]] = {"job": [], "region": []}
    for i in range(args.rounds):
        order = ("job", "region") if i % 2 == 0 else ("region", "job")
        for mode in order:
            r = run(mode, size, args.jobs, f"{mode}{i}")
            runs[mode].append(r)
            print(f"[round {i + 1}/{args.rounds} {mode}] misses {r['misses']}/{r['jobs']}, "
                  f"progress {fmt(r['progress'])} CPU, windows {r['windows']} "
                  f"(+{r['missed_windows']} missed)", file=sys.stderr)
    doc = summarise(runs, size, share)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        for mode in ("job", "region"):
            m = doc[mode]
            print(f"{mode}-level: misses {m['misses']}/{m['jobs']} jobs, best-effort progress "
                  f"median {fmt(m['progress_median'])} CPU "
                  f"[{fmt(m['progress_ci'][0])}, {fmt(m['progress_ci'][1])}] (n={m['n']} runs)")
        p = doc["progress_ratio"]
        print(f"progress ratio region/job: {fmt(p['median'])} "
              f"[{fmt(p['ci'][0])}, {fmt(p['ci'][1])}] (n={p['n']} runs each)")
        lat = doc["entry_to_frozen"]
        print(f"region entry -> frozen: n={lat['n']} p50 {fmt(lat['p50_us'])} us, "
              f"p99 {fmt(lat['p99_us'])} us [{fmt(lat['p99_ci_us'][0])}, "
              f"{fmt(lat['p99_ci_us'][1])}], max {fmt(lat['max_us'])} us; "
              f"missed windows {lat['missed_windows']}")
    goals = Goals()
    for mode in ("job", "region"):
        m = doc[mode]
        goals.check(f"{mode}-level critical misses", m["misses"] if m["jobs"] else None,
                    "==", 0)
    goals.check("best-effort progress region/job", doc["progress_ratio"]["median"], ">=",
                PROGRESS_GOAL)
    goals.check("region entry -> frozen p99 (us)", doc["entry_to_frozen"]["p99_us"], "<=",
                LATENCY_GOAL_US, missing="no region freeze was logged")
    return goals.finish()


def fmt(value, scale: float = 1.0) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value * scale:.3g}"


def summarise(runs: dict[str, list[dict]], size: str, share: float | None) -> dict:
    doc: dict = {"stream_size": size, "stream_share_solo": share, "period_ms": PERIOD_MS,
                 "aggressor": f"ic-aggr bw --size {AGGRESSOR}"}
    for mode, rs in runs.items():
        progress = [r["progress"] for r in rs if r["progress"] is not None]
        ci = median_ci(progress) if len(progress) >= 2 else (math.nan, math.nan)
        doc[mode] = {"n": len(rs), "jobs": sum(r["jobs"] for r in rs),
                     "misses": sum(r["misses"] for r in rs),
                     "write_errors": sum(r["write_errors"] for r in rs),
                     "fallback": any(r["fallback"] for r in rs),
                     "progress": progress,
                     "progress_median": sorted(progress)[len(progress) // 2] if progress
                     else None, "progress_ci": list(ci)}
    num = [r["progress"] for r in runs["region"] if r["progress"]]
    den = [r["progress"] for r in runs["job"] if r["progress"]]
    ratio = ratio_ci(num, den) if len(num) >= 2 and len(den) >= 2 else (math.nan, math.nan)
    med = (sorted(num)[len(num) // 2] / sorted(den)[len(den) // 2]) if num and den else None
    doc["progress_ratio"] = {"median": med, "ci": list(ratio), "n": min(len(num), len(den))}
    lat = [x for r in runs["region"] for x in r["latencies_ns"]]
    q = quantile_ci(lat, 0.99)
    doc["entry_to_frozen"] = {
        "n": len(lat), "p50_us": sorted(lat)[len(lat) // 2] / 1e3 if lat else None,
        "p99_us": q[0] / 1e3 if q else None,
        "p99_ci_us": [q[1] / 1e3, q[2] / 1e3] if q else [None, None],
        "max_us": max(lat) / 1e3 if lat else None,
        "missed_windows": sum(r["missed_windows"] for r in runs["region"])}
    # A region-level run that fell back to releases measured job-level freezing: no figure.
    if doc["region"]["fallback"]:
        doc["progress_ratio"]["median"] = None
        doc["entry_to_frozen"]["p99_us"] = None
    return doc


if __name__ == "__main__":
    sys.exit(main())
