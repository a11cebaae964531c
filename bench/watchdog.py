#!/usr/bin/env python3
"""Watchdog benchmark: how long each fault leaves a best-effort group frozen.

    python bench/watchdog.py [--n 10] [--lease 50ms] [--hold 300ms] [--experiment-n 3] [--json]

Drills every fault of issue 13 on real cgroups (intercore.mitigate.freezer.drill), n times each, and
prints per fault n, median and max of:

    fault -> thawed        for a FIFO-99 hog on the monitor's CPU, SIGSTOP beyond the lease,
                           kill -9 of the monitor's process group, SIGKILL of the monitor
    resumed -> frozen      once the hog ends or the monitor is continued (the re-arm)
    kill -> thawed,        for SIGKILL of `mitigate protection` in each of its phases
    kill -> removed        (its cgroups gone from every hierarchy), and kill -> reaped (how
                           long the kernel took to end the killed process: the watchdog
                           hears of the death only once its files are closed)

then one line per goal. Goals: every thaw within 100 ms (max), a re-freeze after every
resume (its time is the poll policy's: it freezes once it sees the critical work active
again), every experiment kill leaves no cgroup and no native process and, in the protected
phase, thaws and removes within 100 ms (max). Fails closed: a drill that produced no figure,
or a repetition that timed out, fails its goal; it is never read as 0. Needs root, the cgroup
v2 freezer and two CPUs, and refuses to run otherwise (exit 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _cgroups import bench_groups
from _cgroups import host_problem as cgroup_host_problem
from intercore.host.topology import read_topology
from intercore.base.units import parse_duration_ns
from intercore.mitigate.freezer.drill import FAULTS, PHASES, drill, experiment_drill

GOAL_MS = 100.0


def summary(values: list[float | None]) -> dict:
    """n, median and max in ms; `missing` counts repetitions without a figure."""
    got = [v / 1e6 for v in values if v is not None]
    return {"n": len(got), "missing": len(values) - len(got),
            "median_ms": statistics.median(got) if got else None,
            "max_ms": max(got) if got else None}


def meets(s: dict) -> bool:
    return s["n"] > 0 and not s["missing"] and s["max_ms"] <= GOAL_MS


def host_problem() -> str | None:
    problem = cgroup_host_problem()
    if problem:
        return problem
    if len(read_topology().online_cpus) < 2:
        return "needs two CPUs: the watchdog runs on another CPU than the monitor"
    return None


def fault_drills(n: int, lease_ns: int, hold_ns: int, cpu: int) -> dict[str, dict]:
    out = {}
    for fault in FAULTS:
        thaws, refreezes = [], []
        for i in range(n):
            try:
                with bench_groups(f"intercore-bench-wd-{os.getpid()}") as (critical,
                                                                          best_effort), \
                        tempfile.TemporaryDirectory() as tmp:
                    r = drill(fault, critical, best_effort, cpu=cpu, lease_ns=lease_ns,
                              hold_ns=hold_ns, log=Path(tmp) / "log.jsonl")
                thaws.append(r.thaw_ns)
                refreezes.append(r.refreeze_ns)
            except (TimeoutError, RuntimeError) as exc:
                print(f"[{fault} {i + 1}/{n}] no figure: {exc}", file=sys.stderr)
                thaws.append(None)
                refreezes.append(None)
            print(f"[{fault} {i + 1}/{n}] thaw {thaws[-1]} ns, refreeze {refreezes[-1]} ns",
                  file=sys.stderr)
        out[fault] = {"thaw": summary(thaws)}
        if fault in ("fifo99-hog", "sigstop"):
            out[fault]["refreeze"] = summary(refreezes)
    return out


def experiment_drills(n: int) -> dict[str, dict]:
    out = {}
    for phase in PHASES:
        thaws, removals, exits, dirty, failed = [], [], [], 0, 0
        for i in range(n):
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    r = experiment_drill(phase, f"intercore-bench-exp-{os.getpid()}", Path(tmp))
                except (TimeoutError, RuntimeError) as exc:
                    print(f"[experiment {phase} {i + 1}/{n}] no figure: {exc}", file=sys.stderr)
                    failed += 1
                    thaws.append(None)
                    removals.append(None)
                    exits.append(None)
                    continue
            dirty += bool(r.leftovers)
            exits.append(r.exit_ns)
            if phase == "protected":
                thaws.append(r.thaw_ns)
                removals.append(r.removed_ns)
            print(f"[experiment {phase} {i + 1}/{n}] thaw {r.thaw_ns} ns, removed "
                  f"{r.removed_ns} ns, leftovers {list(r.leftovers)}", file=sys.stderr)
        out[phase] = {"exit": summary(exits), "runs_with_leftovers": dirty,
                      "runs_failed": failed}
        if phase == "protected":
            out[phase]["removed"] = summary(removals)
        if phase == "protected":
            out[phase]["thaw"] = summary(thaws)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="repetitions of each fault")
    ap.add_argument("--lease", default="50ms", help="the monitor's heartbeat lease")
    ap.add_argument("--hold", default="300ms", help="how long the hog or the stop lasts")
    ap.add_argument("--experiment-n", type=int, default=3,
                    help="kills of the experiment per phase")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = host_problem()
    if problem:
        print(f"watchdog bench refused: {problem}", file=sys.stderr)
        return 3
    lease_ns, hold_ns = parse_duration_ns(args.lease), parse_duration_ns(args.hold)
    cpu = min(os.sched_getaffinity(0))
    doc = {"lease_ms": lease_ns / 1e6, "hold_ms": hold_ns / 1e6, "monitor_cpu": cpu,
           "faults": fault_drills(args.n, lease_ns, hold_ns, cpu),
           "experiment": experiment_drills(args.experiment_n)}
    goals = []
    for fault, figures in doc["faults"].items():
        goals.append((f"{fault}: thaw <= {GOAL_MS:g} ms", meets(figures["thaw"]),
                      figures["thaw"]))
        if "refreeze" in figures:
            s = figures["refreeze"]
            goals.append((f"{fault}: frozen again after every resume",
                          s["n"] > 0 and not s["missing"], s))
    for phase, figures in doc["experiment"].items():
        clean = figures["runs_with_leftovers"] == 0 and figures["runs_failed"] == 0 and \
            figures["exit"]["n"] > 0
        goals.append((f"experiment killed in {phase}: nothing left (kill -> reaped)", clean,
                      figures["exit"]))
        if phase == "protected":
            goals.append((f"experiment killed in {phase}: thaw <= {GOAL_MS:g} ms",
                          meets(figures["thaw"]), figures["thaw"]))
            goals.append((f"experiment killed in {phase}: removed <= {GOAL_MS:g} ms",
                          meets(figures["removed"]), figures["removed"]))
    doc["goals"] = [{"goal": g, "met": ok, **s} for g, ok, s in goals]
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"lease {doc['lease_ms']:g} ms, hold {doc['hold_ms']:g} ms, monitor on CPU {cpu}")
        for g, ok, s in goals:
            figure = "no figure" if s["median_ms"] is None else \
                f"n={s['n']} median={s['median_ms']:.2f} ms max={s['max_ms']:.2f} ms"
            missing = f" ({s['missing']} without a figure)" if s["missing"] else ""
            print(f"{'PASS' if ok else 'FAIL'}  {g}: {figure}{missing}")
    return 0 if all(ok for _, ok, _ in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
