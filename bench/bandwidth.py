#!/usr/bin/env python3
"""Bandwidth benchmark: the profiler's cost, the regulator's overshoot, the probe regulator's
effect on a protected victim.

    python bench/bandwidth.py [--rounds 12] [--reps 30] [--json]

1. Profiler overhead (goal: <= 1 % slowdown at 10 µs) and its timing jitter: the victim
   (a pointer chase sized between the private and the shared cache) alone and under the
   profiler at 10 µs with this host's preferred source, interleaved in shuffled rounds; the
   paired ratio of the two blocks' median CPU time per round.
2. Regulator overshoot (goal: <= 100 µs of budget-exceeding run time per period, p99), where
   a core counter of memory traffic exists; refused with the reason where none does. The same
   overflow -> freeze path is measured on the cpu-clock software counter everywhere, where the
   overshoot is itself run time (ns of CPU over budget per period).
3. On a host without such a counter: the probe regulator's effect on the victim's p99 under
   the worst aggressor (a saved `@worst:ptrchase` when `measure run --search` left one, else
   BwWrite(LLC), said which), against no regulator and against an inert regulator (the probe
   running, never throttling: the same CPU sharing without the throttling), interleaved.

Every figure carries n and its spread. The last lines are one per goal (bench/_goals.py):
profiler_overhead_pct_max <= 1 (the host source, worst victim), regulator_overshoot_p99_us
<= 100 (memory budget; REFUSED with the reason where no counter opens), and
probe_regulator_reps_min >= 100 (the victim repetitions behind each p99 of part 3). A part
that could not be measured leaves its goal MISSING with the error (exit 1), never a zero;
without root (cgroups, SCHED_FIFO) or two CPUs every goal is refused (exit 3).

Parts 1 and 3 measure what a busy-waiting profiler or probe costs a victim through memory; on
one core's two hardware threads it costs more through the core (issue 24: the sampler alone
slowed a compute-bound matmul 1.6x). Where sysfs or the core probe (measure/regime/core.py), run
before part 1 and again after part 3, says the two CPUs share a core, both goals are refused
with that reason (a probe that fails leaves them MISSING).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _goals import Goals

from intercore.cli.regulate import counter_event
from intercore.base.errors import InputError
from intercore.host.report import host_report
from intercore.host.topology import default_placement, read_topology
from intercore.measure.bandwidth import sources as bwsource, probe
from intercore.measure.regime.core import core_warning
from intercore.measure.bandwidth import profile as P
from intercore.measure.aggressors.presets import Footprints, parse_set
from intercore.base.procs import ProcessGroup
from intercore.base.units import size_arg
from intercore.mitigate.bandwidth import regulator as reg
from intercore.mitigate.bandwidth.gang import best_effort_plan, freezer_cgroups
from intercore.base.native import tool

SEED = 7
MIN_P99_REPS = 100  # victim repetitions per condition behind a p99


def bootstrap_ci(values: list[float], stat=np.median, n: int = 2000) -> list[float] | None:
    if len(values) < 3:
        return None
    rng = np.random.default_rng(SEED)
    arr = np.asarray(values)
    boots = [stat(arr[rng.integers(0, arr.size, arr.size)]) for _ in range(n)]
    return [float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))]


# The victims the overhead is measured on: cache-sensitive, bandwidth-bound, compute-bound.
def victims(fp: Footprints) -> dict[str, list[str]]:
    return {"ptrchase": ["ptrchase", "--size", size_arg(fp.shared_victim), "--accesses",
                         "200000"],
            "stream": ["stream", "--size", size_arg(fp.dram)],
            "matmul": ["matmul", "--n", "64", "--k", "1024", "--m", "9"]}


def victim_argv(fp: Footprints, reps: int, cpu: int, kind: str = "ptrchase") -> list[str]:
    return [str(tool("ic-victim")), *victims(fp)[kind], "--reps", str(reps), "--cpu", str(cpu)]


def rep_cpu_ns(output: str) -> list[int]:
    out = []
    for line in output.splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("event") == "sample" and e.get("region") == 0:
            out.append(int(e["cpu_ns"]))
    return out


# ---- 1. profiler overhead -----------------------------------------------------------------------

def profiler_overhead(topo, rounds: int, reps: int, say, scratch: Path) -> dict:
    """Per victim: every round runs it alone, profiled at 10 µs with this host's preferred
    source, and profiled with a source that costs nothing (a static file: the busy-waiting
    profiler's own footprint, without a counter's or the probe's), in shuffled order; the
    paired ratio of each profiled block's median CPU time per repetition to the alone one."""
    place = default_placement(topo)
    target, cpu = place.victim, place.aggressors[0]
    fp = Footprints.for_host(topo, target)
    statuses = bwsource.host_sources(target, probe.probe_source(probe.default_probe_size(topo)))
    source = bwsource.choose(statuses, "auto").source
    static = scratch / "count"
    static.write_text("0\n")
    sources = {"host": source, "busy-wait": P.Source("busy-wait", "mbm", f"file:{static}", 1.0)}
    out: dict = {"source": source.name, "interval_ns": 10_000, "victims": {}}
    jitter, p99_dev, missed = [], [], []
    rng = random.Random(SEED)
    for kind in victims(fp):
        ratios: dict[str, list[float]] = {c: [] for c in sources}
        for r in range(rounds):
            order = ["alone", *sources]
            rng.shuffle(order)
            got = {}
            for cond in order:
                argv = victim_argv(fp, reps, target, kind)
                if cond == "alone":
                    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
                    got[cond] = rep_cpu_ns(proc.stdout)
                    continue
                raw = P.run(P.ProfileSpec((sources[cond],), command=tuple(argv),
                                          interval_ns=10_000, cpu=cpu, target_cpu=target,
                                          priority=10, tags=False))
                got[cond] = rep_cpu_ns(raw.command_output)
                d = np.abs(np.diff(P.ticks_to_ns(raw.ticks, raw.end)) - 10_000)
                jitter.append(float(np.median(d)))
                p99_dev.append(float(np.percentile(d, 99)))
                missed.append(raw.end["missed"] / max(1, raw.end["missed"] + raw.end["samples"]))
            if not all(got.values()):
                raise RuntimeError(f"{kind}: a victim block produced no sample")
            for cond in sources:
                ratios[cond].append(float(np.median(got[cond]) / np.median(got["alone"])))
            say(f"profiler overhead {kind} round {r + 1}/{rounds}: " + ", ".join(
                f"{c} {v[-1]:.4f}" for c, v in ratios.items()))
        out["victims"][kind] = {c: {"n_rounds": len(v), "reps_per_block": reps,
                                    "median_ratio": float(np.median(v)),
                                    "ratio_ci": bootstrap_ci(v), "min_ratio": min(v),
                                    "max_ratio": max(v),
                                    "slowdown_pct": 100 * (float(np.median(v)) - 1)}
                                for c, v in ratios.items()}
    out.update({"jitter_median_ns": float(np.median(jitter)),
                "jitter_p99_ns": float(np.median(p99_dev)),
                "missed_share_median": float(np.median(missed))})
    return out


# ---- cgroups for 2 and 3 -------------------------------------------------------------------------

class BestEffortGroup:
    def __init__(self, name: str):
        self.cgroups = freezer_cgroups()
        self.applied = self.cgroups.apply(best_effort_plan("be"), name)
        self.dir = str(Path(self.applied.applied.group("be").freeze_file).parent)

    def attach(self, pid: int) -> None:
        self.cgroups.attach(self.applied, "be", pid)

    def close(self) -> None:
        self.cgroups.teardown(self.applied)


def start_aggressor(argv: list[str], group: BestEffortGroup) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proc.stdout.readline()  # ready: initialised, about to run
    group.attach(proc.pid)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)


# ---- 2. regulator overshoot ----------------------------------------------------------------------

def overshoot(topo, say) -> dict:
    place = default_placement(topo)
    target, cpu = place.victim, place.aggressors[0]
    fp = Footprints.for_host(topo, target)
    out: dict = {}
    group = BestEffortGroup(f"intercore-bench-bw-{os.getpid()}-o")
    aggr = start_aggressor([str(tool("ic-aggr")), "bw", "--op", "read", "--size",
                            size_arg(fp.dram), "--cpu", str(target)], group)
    try:
        period = 1_000_000
        spec = reg.RegulatorSpec(best_effort=(group.dir,), event=reg.CPU_CLOCK_EVENT,
                                 budget=200_000, period_ns=period, duration_ns=3_000_000_000,
                                 cpu=cpu, priority=10)
        with ProcessGroup() as pg:
            stats = reg.Regulator.start(spec, pg).wait()
        (g,) = stats.groups
        if not g.overshoot.n:
            raise RuntimeError("the cpu-clock regulator never throttled")
        out["cpu_clock"] = {"period_ns": period, "budget_ns": 200_000, "n_periods": g.overshoot.n,
                            "overshoot_p50_us": g.overshoot.p50 / 1e3,
                            "overshoot_p99_us": g.overshoot.p99 / 1e3,
                            "overshoot_max_us": g.overshoot.max / 1e3,
                            "react_p50_us": g.react_ns.p50 / 1e3,
                            "react_p99_us": g.react_ns.p99 / 1e3,
                            "regulator_cpu_pct": stats.overhead_pct}
        say(f"cpu-clock overshoot p99 {g.overshoot.p99 / 1e3:.0f} µs over {g.overshoot.n} periods")
        event = counter_event(target)
        if event is None:
            out["pmu"] = {"refused": "no core counter of memory traffic opens on this host "
                                     "(intercore measure counters list says why), so the "
                                     "regulator's overshoot on a memory budget cannot be "
                                     "measured here"}
            return out
        t = event.terms[0]
        budget = reg.budget_events(1e8, period, event.event.bytes)
        spec = reg.RegulatorSpec(best_effort=(group.dir,), event=f"{t.type}:{t.config:#x}",
                                 budget=budget, period_ns=period, duration_ns=3_000_000_000,
                                 cpu=cpu, priority=10)
        with ProcessGroup() as pg:
            stats = reg.Regulator.start(spec, pg).wait()
        (g,) = stats.groups
        mbps = json.loads(stop_and_stats(aggr))["mbps"]
        aggr = None
        if not g.overshoot.n or not mbps:
            raise RuntimeError("the memory-budget regulator never throttled")
        per_event_us = event.event.bytes / (mbps * 1e6) * 1e6
        out["pmu"] = {"event": event.name, "budget_events": budget, "n_periods": g.overshoot.n,
                      "overshoot_p99_events": g.overshoot.p99,
                      "overshoot_p99_us": g.overshoot.p99 * per_event_us,
                      "react_p99_us": g.react_ns.p99 / 1e3}
        return out
    finally:
        if aggr is not None:
            stop(aggr)
        group.close()


def stop_and_stats(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return next(line for line in out.splitlines() if '"stats"' in line)


# ---- 3. the probe regulator's effect -------------------------------------------------------------

def worst_aggressor(topo, db: Path, fp: Footprints) -> tuple[str, str]:
    try:
        # the worst-aggressor search (measure --search)
        from intercore.measure.aggressors import store as named
        from intercore.measure.aggressors.catalog import parse_victim
        victim = parse_victim("ptrchase", [f"size={fp.shared_victim}"], fp)
        spec = named.lookup(db, host_report().fingerprint(), named.worst_name(victim))
        return spec, "the worst aggressor saved by `measure run --search` for this victim"
    except (ImportError, InputError):
        return "BwWrite(LLC)", ("BwWrite(LLC): no worst aggressor saved for this victim on this "
                                "host (run `intercore measure run ptrchase --search`)")


def probe_effect(topo, rounds: int, reps: int, db: Path, say) -> dict:
    place = default_placement(topo)
    target, cpu = place.victim, place.aggressors[0]
    fp = Footprints.for_host(topo, target)
    spec_text, why = worst_aggressor(topo, db, fp)
    aset = parse_set(spec_text, fp, topo)
    src = probe.probe_source(probe.default_probe_size(topo))
    from intercore.cli.profile import calibration_for
    _, cal = calibration_for(db, topo, host_report().fingerprint(), src, 10_000, cpu, target, 10,
                             True)
    threshold, how = reg.probe_threshold(cal, 100.0)
    _, size, lines = src.spec.split(":")
    samples = {"none": [], "inert": [], "regulated": []}
    throttles = []
    rng = random.Random(SEED)
    group = BestEffortGroup(f"intercore-bench-bw-{os.getpid()}-p")
    try:
        for r in range(rounds):
            order = list(samples)
            rng.shuffle(order)
            for cond in order:
                aggrs = [start_aggressor([str(tool("ic-aggr")), *m.argv(), "--cpu", str(cpu)],
                                         group) for m in aset.members]
                try:
                    with ProcessGroup() as pg:
                        regulator = None
                        if cond != "none":
                            t = threshold if cond == "regulated" else 1e9  # inert: never
                            regulator = reg.Regulator.start(reg.RegulatorSpec(
                                best_effort=(group.dir,), probe=f"{size}:{lines}",
                                threshold_ns=t, window=cal.window, period_ns=1_000_000,
                                cpu=cpu, priority=0), pg)
                        proc = subprocess.run(victim_argv(fp, reps, target) +
                                              ["--rt-priority", "1"], capture_output=True,
                                              text=True, timeout=300)
                        samples[cond] += rep_cpu_ns(proc.stdout)
                        if regulator is not None:
                            st = regulator.stop()
                            if cond == "regulated":
                                throttles.append(st.groups[0].throttles / max(1, st.periods))
                finally:
                    for a in aggrs:
                        stop(a)
            say(f"probe regulator round {r + 1}/{rounds}")
    finally:
        group.close()

    def p99(v):
        return float(np.percentile(v, 99))

    out = {"aggressor": spec_text, "aggressor_choice": why, "threshold_ns": threshold,
           "threshold_from": how, "calibration_usable": cal.usable,
           "calibration_reason": cal.reason, "rounds": rounds, "reps_per_block": reps,
           "throttled_period_share_median": float(np.median(throttles)) if throttles else None}
    for cond, v in samples.items():
        enough = len(v) >= MIN_P99_REPS  # fewer: no p99 (None), and its goal fails
        out[cond] = {"n": len(v), "median_ms": float(np.median(v)) / 1e6 if v else None,
                     "p99_ms": p99(v) / 1e6 if enough else None,
                     "p99_ci_ms": [x / 1e6 for x in bootstrap_ci(v, stat=p99)] if enough
                     else None}
    for other in ("none", "inert"):
        a, b = out["regulated"]["p99_ms"], out[other]["p99_ms"]
        out[f"p99_ratio_vs_{other}"] = a / b if a is not None and b else None
    return out


def _ci(ci) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _g(value, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def attempt(what: str, part, *args):
    """(figures, None), or (None, why) when `part` failed: its goal is then MISSING."""
    try:
        return part(*args), None
    except Exception as exc:  # noqa: BLE001 - whatever stopped it, the goal reports it
        return None, f"{what} failed: {type(exc).__name__}: {exc}"


def profiler_lines(prof: dict) -> list[str]:
    lines = []
    for kind, by_source in prof["victims"].items():
        for cond, v in by_source.items():
            name = prof["source"] if cond == "host" else "busy-wait only, no memory source"
            lines.append(f"profiler at 10 µs ({name}) on {kind}: slowdown "
                         f"{v['slowdown_pct']:+.2f}% (paired ratio {v['median_ratio']:.4f}, 95% "
                         f"CI {_ci(v['ratio_ci'])}, range {v['min_ratio']:.3f}.."
                         f"{v['max_ratio']:.3f}, n = {v['n_rounds']} rounds x "
                         f"{v['reps_per_block']} reps)")
    lines.append(f"profiler jitter: median |spacing - 10 µs| {prof['jitter_median_ns']:.0f} ns, "
                 f"p99 {prof['jitter_p99_ns']:.0f} ns; missed slots "
                 f"{prof['missed_share_median']:.1%} (median over runs)")
    return lines


def overshoot_lines(over: dict) -> list[str]:
    cc = over["cpu_clock"]
    lines = [f"regulator overflow->freeze (cpu-clock, 200 µs per 1 ms): budget-exceeding run "
             f"time p50 {cc['overshoot_p50_us']:.0f} µs, p99 {cc['overshoot_p99_us']:.0f} µs, "
             f"max {cc['overshoot_max_us']:.0f} µs (n = {cc['n_periods']} periods); signal to "
             f"freeze p99 {cc['react_p99_us']:.0f} µs; regulator CPU "
             f"{cc['regulator_cpu_pct']:.2f}%"]
    pmu = over["pmu"]
    if "refused" not in pmu:
        lines.append(f"regulator overshoot ({pmu['event']}): p99 {pmu['overshoot_p99_us']:.0f} "
                     f"µs (n = {pmu['n_periods']} periods)")
    return lines


def probe_lines(pr: dict) -> list[str]:
    def cond(c: str) -> str:
        return f"{_g(pr[c]['p99_ms'])} ms {_ci(pr[c]['p99_ci_ms'])} {c}"

    share = pr["throttled_period_share_median"]
    return [f"probe regulator vs {pr['aggressor']} ({pr['aggressor_choice']}): victim p99 "
            f"{cond('regulated')}, {cond('inert')}, {cond('none')} (n = {pr['regulated']['n']}/"
            f"{pr['inert']['n']}/{pr['none']['n']}); ratio vs none "
            f"{_g(pr['p99_ratio_vs_none'], '.3f')}, vs inert "
            f"{_g(pr['p99_ratio_vs_inert'], '.3f')}; throttled {_g(share, '.0%')} of periods; "
            f"threshold {pr['threshold_ns']:.0f} ns/line ({pr['threshold_from']})"]


def _core_note(topo) -> str | None:
    place = default_placement(topo)
    return core_warning(topo, place.aggressors[0], [place.victim],
                        "the profiler's busy-wait sampler (and the probe regulator's probe)")


def shared_core(topo) -> str | None:
    """"refused: WHY" where the profiler's CPU and the victim's share a core right now; the
    probe's error where it could not run; None where they do not."""
    note, err = attempt("core probe", _core_note, topo)
    return err or (f"refused: {note}" if note else None)


def sharing_goal(goals: Goals, name: str, op: str, target: float, why: str) -> None:
    """A goal left without its figure: refused where the CPUs shared a core (the reason
    starts "refused: "), MISSING with the error otherwise."""
    if why.startswith("refused: "):
        goals.refuse(name, op, target, why.removeprefix("refused: "))
    else:
        goals.check(name, None, op, target, why)


GOALS = (("profiler_overhead_pct_max", "<=", 1.0), ("regulator_overshoot_p99_us", "<=", 100.0),
         ("probe_regulator_reps_min", ">=", MIN_P99_REPS))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--db", type=Path, default=Path("bench-bandwidth.db"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    goals = Goals()
    topo = read_topology()
    if len(topo.online_cpus) < 2 or os.geteuid() != 0:
        for name, op, target in GOALS:
            goals.refuse(name, op, target, "needs root and two CPUs (a core for the profiler or "
                                           "regulator beside the victim's)")
        return goals.finish()

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    doc: dict = {"host": topo.model_name}
    lines: list[str] = []
    t0 = time.time()
    blocked = shared_core(topo)
    doc["core_sharing_before"] = blocked
    prof = pr = None
    prof_why = pr_why = blocked
    if not blocked:
        with tempfile.TemporaryDirectory(prefix="intercore-bench-") as scratch:
            prof, prof_why = attempt("profiler overhead", profiler_overhead, topo, args.rounds,
                                     args.reps, say, Path(scratch))

    over, over_why = attempt("regulator overshoot", overshoot, topo, say)
    if not blocked:
        pr, pr_why = attempt("probe regulator", probe_effect, topo, max(4, args.rounds // 2),
                             args.reps, args.db, say)
        # The host may have moved a vCPU meanwhile: a core shared at the end refuses too.
        blocked = shared_core(topo)
        doc["core_sharing_after"] = blocked
        if blocked:
            prof = pr = None
            prof_why = pr_why = blocked

    doc["profiler"] = prof or {"error": prof_why}
    if prof is None:
        sharing_goal(goals, "profiler_overhead_pct_max", "<=", 1.0, prof_why)
    else:
        lines += profiler_lines(prof)
        goals.check_all("profiler_overhead_pct_max",
                        [v["host"]["slowdown_pct"] for v in prof["victims"].values()], "<=", 1.0)
    doc["overshoot"] = over or {"error": over_why}
    if over is None:
        goals.check("regulator_overshoot_p99_us", None, "<=", 100.0, over_why)
    else:
        lines += overshoot_lines(over)
        if "refused" in over["pmu"]:
            goals.refuse("regulator_overshoot_p99_us", "<=", 100.0, over["pmu"]["refused"])
        else:
            goals.check("regulator_overshoot_p99_us", over["pmu"]["overshoot_p99_us"], "<=",
                        100.0)
    doc["probe_regulator"] = pr or {"error": pr_why}
    if pr is None:
        sharing_goal(goals, "probe_regulator_reps_min", ">=", MIN_P99_REPS, pr_why)
    else:
        lines += probe_lines(pr)
        goals.check("probe_regulator_reps_min",
                    min(pr[c]["n"] for c in ("none", "inert", "regulated")), ">=", MIN_P99_REPS)
    doc["wall_s"] = time.time() - t0
    print(json.dumps(doc, indent=2, default=str) if args.json else "\n".join(lines))
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
