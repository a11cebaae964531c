#!/usr/bin/env python3
"""Aggressor strength: intercore's strongest aggressor against stress-ng's, on a pointer chase
sized to the shared cache, interleaved, in the shared regime only.

    python bench/aggressor_strength.py [--runs N] [--screen N] [--cmd 'stress-ng ...'] [--json]

Candidates: ours are the ten presets and the worst-aggressor search's winner for this victim
on this host (`@worst:VICTIM` from --db; searched now when the store has none); theirs are
stress-ng's memory stressors (--stream, --cache, --vm, --memrate) and every --cmd. Both sides
bring the same number of candidates to the comparison: a screening run (all candidates
interleaved) picks each side's k strongest, k the smaller side's size, and a final run (the
2k finalists interleaved) measures them again, so the selection is not judged on the data
that made it. Both runs rank and compare on pairs from blocks the running canary saw
shared, where cross-core cache interference shows: they keep adding pairs, in blocks, until
every candidate has --screen (then --runs) shared pairs, up to --max-factor times that many.
The figure is the ratio of the strongest finalists' Δ with a bootstrap 95% CI of the ratio
(every finalist's shared pairs resampled, the strongest of each side taken anew).

Prints `aggressor_strength_ratio_ptrchase: X [lo, hi] (n A and B shared pairs)`, then the goal
lines (bench/_goals.py): X >= 1.2 and lo > 1. Both are refused, with the reason and no figure,
when a candidate got fewer shared pairs than asked (the host did not share its cache long
enough for a comparison) or the search refused for the same reason; both are missing when a
run failed. Exit status: 0 when both goals pass, 1 when one failed or is missing, 3 when
they were refused. Installs stress-ng with apt when missing and running as root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from _goals import Goals
from intercore.base.errors import HostUnsupported, InputError, NativeError
from intercore.host.topology import default_placement, read_topology
from intercore.measure.aggressors import store as named, search
from intercore.measure.aggressors.catalog import parse_victim
from intercore.measure.harness.paired import SHARED
from intercore.measure.aggressors.presets import PRESETS, Footprints
from intercore.measure.harness.session import Request, Result, measure, named_lookup

STRESS_NG = {"stress-ng --stream": "--stream 1", "stress-ng --cache": "--cache 1",
             "stress-ng --vm": "--vm 1", "stress-ng --memrate": "--memrate 1"}
MIN_SHARED_PAIRS = 20
BOOT = 4000
GOAL = 1.2
RATIO, RATIO_LOW = "aggressor_strength_ratio_ptrchase", "aggressor_strength_ratio_ci_low"


class Refused(Exception):
    """The host cannot support the figure; the message says why."""


def ensure_stress_ng() -> None:
    if shutil.which("stress-ng"):
        return
    if os.geteuid() != 0:
        sys.exit("stress-ng is missing: apt-get install stress-ng")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "stress-ng"], check=True,
                   stdout=subprocess.DEVNULL)


def shared_pairs(samples, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Region-0 (iso, int) times of the set's pairs measured in shared blocks."""
    iso = {s.pair: s.cpu_ns for s in samples if s.region == 0 and s.condition == "iso"}
    rows = [(iso[s.pair], s.cpu_ns) for s in samples if s.region == 0 and s.condition == "int"
            and s.aggressor_set == label and s.regime == SHARED and s.pair in iso]
    return (np.array([r[0] for r in rows], dtype=float),
            np.array([r[1] for r in rows], dtype=float))


def delta(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.median(b) / np.median(a))


def ratio_ci(ours: dict, theirs: dict, seed: int = 9) -> tuple[float, float]:
    """Bootstrap CI of max(Δ ours) / max(Δ theirs): every finalist's shared pairs resampled
    (pairs kept whole), the strongest of each side taken anew in every resample."""
    rng = np.random.default_rng(seed)
    out = np.empty(BOOT)
    for i in range(BOOT):
        def best(side: dict) -> float:
            vals = []
            for a, b in side.values():
                idx = rng.integers(0, a.size, a.size)
                vals.append(delta(a[idx], b[idx]))
            return max(vals)
        out[i] = best(ours) / best(theirs)
    lo, hi = np.percentile(out, [2.5, 97.5])
    return float(lo), float(hi)


def run_shared(victim: str, sets: list[str], pairs: int, args, phase: str) -> Result:
    """All sets interleaved, until each has `pairs` pairs in shared blocks (or the cap)."""
    print(f"{phase}: {len(sets)} aggressor sets until {pairs} shared pairs each (at most "
          f"{args.max_factor * pairs}), interleaved", file=sys.stderr, flush=True)
    return measure(Request(victim, aggressors=tuple(sets), runs=pairs, seed=3,
                           block_pairs=args.block_pairs, until_pairs=pairs, regime=SHARED,
                           max_runs=args.max_factor * pairs),
                   db=args.db, argv=sys.argv, command="bench aggressor_strength",
                   on_phase=lambda t: print(t, file=sys.stderr, flush=True))


def check_shared(result: Result, names: dict[str, str], pairs: int, phase: str) -> None:
    """Fail closed: every candidate needs its shared pairs."""
    got = {name: shared_pairs(result.outcome.samples, spec)[0].size
           for name, spec in names.items()}
    short = {n: k for n, k in got.items() if k < pairs}
    if short:
        blocks = result.regime_counts()
        raise Refused(f"{phase}: fewer than {pairs} shared pairs for "
                      + ", ".join(f"{n} ({k})" for n, k in short.items())
                      + f" after up to {result.plan.most_runs} pairs each (blocks: "
                      + ", ".join(f"{k} {v}" for k, v in blocks.items()) + "): the CPUs did "
                      "not share their cache long enough to compare aggressor strength")


def search_winner(victim: str, fp: Footprints, topo, args) -> tuple[str, dict]:
    """The saved winner for this victim on this host, or a search now (ranked on shared
    pairs); with the evidence it was chosen on."""
    key = named.worst_name(parse_victim(victim, [], fp))
    try:
        spec = named_lookup(args.db, topo)(key)
        print(f"search winner from {args.db}: {spec}", file=sys.stderr)
        return spec, {"source": str(args.db), "name": key}
    except InputError:
        pass
    print("no search winner saved for this host: searching now", file=sys.stderr)
    try:
        found = search.search(Request(victim, seed=3), db=args.db, argv=sys.argv,
                              first_pairs=args.search_pairs, topo=topo,
                              on_phase=lambda t: print(t, file=sys.stderr, flush=True))
    except search.SearchRefused as exc:
        raise Refused(f"the worst-aggressor search refused: {exc}") from None
    search.save_winner(args.db, topo, found)
    w = found.winner.to_dict()
    print(f"search winner: {w['aggressor']}: Δ {w['delta']:.3f} {w['delta_ci']} in "
          f"{w['ranked_in']} blocks, n {w['n']}, paired max {w['paired_max']:.3f}",
          file=sys.stderr)
    return found.winner.spec, {"search": w, "rounds": len(found.rounds)}


def compare(args, victim: str, ours: dict[str, str], theirs: dict[str, str], doc: dict,
            goals: Goals) -> None:
    # Screening: every candidate, interleaved, ranked on its shared pairs.
    screen = run_shared(victim, [*ours.values(), *theirs.values()], args.screen, args,
                        "screening")
    check_shared(screen, {**ours, **theirs}, args.screen, "screening")
    strength = {name: delta(*shared_pairs(screen.outcome.samples, spec))
                for name, spec in {**ours, **theirs}.items()}
    doc["screening"] = {n: {"delta_shared": d} for n, d in strength.items()}
    k = min(len(ours), len(theirs))
    top_ours = sorted(ours, key=strength.get, reverse=True)[:k]
    top_theirs = sorted(theirs, key=strength.get, reverse=True)[:k]

    final = run_shared(victim, [ours[n] for n in top_ours] + [theirs[n] for n in top_theirs],
                       args.runs, args, "final")
    finalists = {**{n: ours[n] for n in top_ours}, **{n: theirs[n] for n in top_theirs}}
    check_shared(final, finalists, args.runs, "final")
    rows, fin_ours, fin_theirs = {}, {}, {}
    for side, names, into in (("ours", top_ours, fin_ours), ("theirs", top_theirs, fin_theirs)):
        for name in names:
            a, b = shared_pairs(final.outcome.samples, finalists[name])
            into[name] = (a, b)
            c = next(c for c in final.regions if c.region == 0 and
                     c.aggressor_set == finalists[name])
            shared = c.by_regime[SHARED]
            rows[name] = {"side": side, "n_shared": int(a.size), "delta_shared": delta(a, b),
                          "delta_shared_ci": list(shared.delta_ci),
                          "paired_max_shared": shared.paired_max,
                          "n_all": sum(r.n for r in c.by_regime.values()),
                          "by_regime": {r: {"n": v.n, "delta": v.delta}
                                        for r, v in c.by_regime.items()}}
    blocks = final.regime_counts()
    print(f"\n{victim}: finalists, at least {args.runs} shared pairs each, interleaved in "
          f"{sum(blocks.values())} blocks ({', '.join(f'{r} {v}' for r, v in blocks.items())})")
    print(f"{'aggressor':<46}{'side':>7}{'n shared':>9}{'Δ shared':>10}{'95% CI':>18}"
          f"{'pair max':>10}{'n all':>7}")
    for name, r in rows.items():
        lo, hi = r["delta_shared_ci"]
        print(f"{name[:45]:<46}{r['side']:>7}{r['n_shared']:>9}{r['delta_shared']:>10.3f}"
              f"{f'[{lo:.3f}, {hi:.3f}]':>18}{r['paired_max_shared']:>10.3f}{r['n_all']:>7}")
    best_ours, best_theirs, ratio, (lo, hi) = judge(fin_ours, fin_theirs, goals)
    n = (rows[best_ours]["n_shared"], rows[best_theirs]["n_shared"])
    doc.update({"finalists": rows, "regime_blocks": blocks, "k": k, "ratio": ratio,
                "ratio_ci": [lo, hi], "strongest_ours": best_ours,
                "strongest_theirs": best_theirs, "n_shared": n})
    if args.json:
        print(json.dumps(doc, indent=2))
    print(f"strongest: ours {best_ours} Δ {delta(*fin_ours[best_ours]):.3f} (n {n[0]}), "
          f"theirs {best_theirs} Δ {delta(*fin_theirs[best_theirs]):.3f} (n {n[1]})")
    print(f"aggressor_strength_ratio_ptrchase: {ratio:.3f} [{lo:.3f}, {hi:.3f}] "
          f"(n {n[0]} and {n[1]} shared pairs)")


def judge(ours: dict, theirs: dict, goals: Goals
          ) -> tuple[str, str, float, tuple[float, float]]:
    """The strongest finalist of each side (name -> its shared (iso, int) pairs), the ratio
    of their Δ with its bootstrap CI, checked against the goals: a ratio under 1.2 or a CI
    reaching down to 1 fails, and a figure that came out NaN (no pairs) is missing."""
    best_ours = max(ours, key=lambda n: delta(*ours[n]))
    best_theirs = max(theirs, key=lambda n: delta(*theirs[n]))
    ratio = delta(*ours[best_ours]) / delta(*theirs[best_theirs])
    lo, hi = ratio_ci(ours, theirs)
    goals.check(RATIO, ratio, ">=", GOAL)
    goals.check(RATIO_LOW, lo, ">", 1)
    return best_ours, best_theirs, ratio, (lo, hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=MIN_SHARED_PAIRS,
                    help=f"shared pairs per finalist (default and least {MIN_SHARED_PAIRS})")
    ap.add_argument("--screen", type=int, default=6,
                    help="shared pairs per candidate when screening (default 6)")
    ap.add_argument("--max-factor", type=int, default=12,
                    help="a run adds pairs until every set has its shared pairs, up to this "
                         "many times as many pairs (default 12)")
    ap.add_argument("--block-pairs", type=int, default=2,
                    help="pairs per block (default 2): short blocks spread every candidate "
                         "over the host's shared and separate spells")
    ap.add_argument("--search-pairs", type=int, default=3,
                    help="shared pairs per candidate in the search's first round (default 3)")
    ap.add_argument("--cmd", action="append", default=[],
                    help="another external stressor for their side, e.g. 'stress-ng "
                         "--memcpy 1' (pinned to the aggressor CPU)")
    ap.add_argument("--db", type=Path, default=Path("intercore.db"),
                    help="store holding (or receiving) the search winner")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < MIN_SHARED_PAIRS:
        ap.error(f"--runs: at least {MIN_SHARED_PAIRS} shared pairs per finalist")
    ensure_stress_ng()
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    if not acpus:
        why = "one online CPU, no cross-core interference to compare"
        print(f"aggressor_strength_ratio_ptrchase: refused: {why}")
        goals = Goals()
        goals.refuse(RATIO, ">=", GOAL, why)
        return goals.finish()
    acpu = acpus[0]
    fp = Footprints.for_host(topo, vcpu)
    victim = f"ptrchase:size={fp.shared_victim}"
    theirs = {label: f"cmd:stress-ng {opt} --taskset {acpu} --timeout 1h --quiet@{acpu}"
              for label, opt in STRESS_NG.items()}
    theirs.update({c: f"cmd:{c}@{acpu}" for c in args.cmd})
    ours = {name: name for name in PRESETS if fp.host_bank or not name.startswith("BkPLL")}
    doc: dict = {"victim": victim, "victim_cpu": vcpu, "aggressor_cpu": acpu}
    goals = Goals()
    try:
        winner, evidence = search_winner(victim, fp, topo, args)
        doc["search_winner"] = {"spec": winner, **evidence}
        if winner not in ours.values():
            ours[f"search winner ({winner})"] = winner
        compare(args, victim, ours, theirs, doc, goals)
    except (Refused, HostUnsupported) as exc:
        # HostUnsupported: what this host lacks (memory for every candidate at once).
        doc["refused"] = str(exc)
        if args.json:
            print(json.dumps(doc, indent=2))
        print(f"aggressor_strength_ratio_ptrchase: refused: {exc}")
        goals.refuse(RATIO, ">=", GOAL, str(exc))
        goals.refuse(RATIO_LOW, ">", 1, "no ratio")
    except (InputError, NativeError, TimeoutError) as exc:
        # A run that broke (a tool failed, an aggressor never answered) produced no figure:
        # both goals fail as missing, never pass.
        print(f"aggressor_strength_ratio_ptrchase: missing: {exc}")
        goals.check(RATIO, None, ">=", GOAL, f"the run failed: {exc}")
        goals.check(RATIO_LOW, None, ">", 1, "no ratio")
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
