#!/usr/bin/env python3
"""Aggressor strength: intercore's strongest aggressor against stress-ng's, on a pointer chase
sized to the shared cache, interleaved, in the shared regime only.

    python bench/aggressor_strength.py [--runs N] [--screen N] [--cmd 'stress-ng ...'] [--json]

Candidates: ours are the ten presets and the worst-aggressor search's winner for this victim
on this host (`@worst:VICTIM` from --db; searched now when the store has none); theirs are
stress-ng's memory stressors (--stream, --cache, --vm, --memrate) and every --cmd. Both sides
bring the same number of candidates to the comparison: a screening run (--screen pairs each,
all candidates interleaved) picks each side's k strongest, k the smaller side's size, and a
second run (--runs pairs each, the 2k finalists interleaved) measures them again, so the
selection is not judged on the data that made it. The figure is the ratio of the strongest
finalists' Δ, each over the pairs of blocks the running canary saw shared, with a paired
bootstrap 95% CI of the ratio.

Last line: `aggressor_strength_ratio_ptrchase: X [lo, hi] (n ... shared pairs)`, goal X >= 1.2
with lo > 1; or `... refused: REASON` and exit 1 when fewer than 20 shared pairs were seen
for a finalist (the host did not share its cache long enough for a comparison). Installs
stress-ng with apt when missing and running as root.
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

from intercore.errors import InputError
from intercore.host.topology import default_placement, read_topology
from intercore.measure import named, search
from intercore.measure.catalog import parse_victim
from intercore.measure.paired_comparison import comparisons
from intercore.measure.presets import PRESETS, Footprints
from intercore.measure.session import Request, named_lookup, measure

STRESS_NG = {"stress-ng --stream": "--stream 1", "stress-ng --cache": "--cache 1",
             "stress-ng --vm": "--vm 1", "stress-ng --memrate": "--memrate 1"}
MIN_SHARED_PAIRS = 20
BOOT = 4000


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
            and s.aggressor_set == label and s.regime == "shared" and s.pair in iso]
    a = np.array([r[0] for r in rows], dtype=float)
    b = np.array([r[1] for r in rows], dtype=float)
    return a, b


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


def run(victim: str, sets: list[str], runs: int, block_pairs: int, db: Path | None,
        phase: str):
    print(f"{phase}: {len(sets)} aggressor sets x {runs} pairs, interleaved", file=sys.stderr,
          flush=True)
    return measure(Request(victim, aggressors=tuple(sets), runs=runs, seed=3,
                           block_pairs=block_pairs), db=db,
                   argv=sys.argv, command="bench aggressor_strength",
                   on_phase=lambda t: print(t, file=sys.stderr, flush=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=60, help="pairs per finalist (default 60)")
    ap.add_argument("--block-pairs", type=int, default=2,
                    help="pairs per block (default 2): short blocks spread every candidate "
                         "over the host's shared and separate spells")
    ap.add_argument("--screen", type=int, default=8, help="pairs per candidate when "
                                                         "screening (default 8)")
    ap.add_argument("--cmd", action="append", default=[],
                    help="another external stressor for their side, e.g. 'stress-ng "
                         "--memcpy 1' (pinned to the aggressor CPU)")
    ap.add_argument("--db", type=Path, default=Path("intercore.db"),
                    help="store holding (or receiving) the search winner")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ensure_stress_ng()
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    acpu = acpus[0]
    fp = Footprints.for_host(topo, vcpu)
    victim = f"ptrchase:size={fp.shared_victim}"
    theirs = {label: f"cmd:stress-ng {opt} --taskset {acpu} --timeout 1h --quiet@{acpu}"
              for label, opt in STRESS_NG.items()}
    theirs.update({c: f"cmd:{c}@{acpu}" for c in args.cmd})

    # Our side: the presets and the winner of the search for this victim on this host.
    key = named.worst_name(parse_victim(victim, [], fp))
    try:
        winner = named_lookup(args.db, topo)(key)
        print(f"search winner from {args.db}: {winner}", file=sys.stderr)
    except InputError:
        print("no search winner saved for this host: searching now", file=sys.stderr)
        found = search.search(Request(victim, seed=3), db=args.db, argv=sys.argv,
                              first_pairs=3, topo=topo,
                              on_phase=lambda t: print(t, file=sys.stderr, flush=True))
        search.save_winner(args.db, topo, found)
        winner = found.winner.spec
    ours = {name: name for name in PRESETS}
    if winner not in ours:
        ours[f"search winner ({winner})"] = winner

    # Screening: every candidate, interleaved; each side's k strongest go on.
    screen = run(victim, [*ours.values(), *theirs.values()], args.screen, args.block_pairs,
                 args.db, "screening")
    # One stratum for every candidate: shared when all have shared pairs, else all pairs.
    ranked = {r.spec: r for r in search.rank(screen.regions)}
    missing = [n for n, spec in {**ours, **theirs}.items() if spec not in ranked]
    if missing:  # fail closed: a candidate without a measured pair is no candidate at all
        print(f"aggressor_strength_ratio_ptrchase: refused: no complete pair for "
              f"{', '.join(missing)} in the screening run")
        return 1

    def strength(spec: str) -> float:
        return ranked[spec].delta

    k = min(len(ours), len(theirs))
    top_ours = sorted(ours, key=lambda n: strength(ours[n]), reverse=True)[:k]
    top_theirs = sorted(theirs, key=lambda n: strength(theirs[n]), reverse=True)[:k]

    final = run(victim, [ours[n] for n in top_ours] + [theirs[n] for n in top_theirs],
                args.runs, args.block_pairs, args.db, "final")
    rows, fin_ours, fin_theirs = {}, {}, {}
    for side, names, specs, into in (("ours", top_ours, ours, fin_ours),
                                     ("theirs", top_theirs, theirs, fin_theirs)):
        for name in names:
            a, b = shared_pairs(final.outcome.samples, specs[name])
            into[name] = (a, b)
            c = next(c for c in final.regions if c.region == 0 and
                     c.aggressor_set == specs[name])
            rows[name] = {"side": side, "n_shared": int(a.size),
                          "delta_shared": delta(a, b) if a.size else None,
                          "n_all": c.result.n, "delta_all": c.result.delta,
                          "delta_all_ci": list(c.result.delta_ci),
                          "by_regime": {r: {"n": v.n, "delta": v.delta}
                                        for r, v in c.by_regime.items()}}
    blocks = final.regime_counts()
    print(f"\n{victim}: finalists, {args.runs} pairs each, interleaved in "
          f"{sum(blocks.values())} blocks ({', '.join(f'{k_} {v}' for k_, v in blocks.items())})")
    print(f"{'aggressor':<44}{'side':>7}{'n shared':>9}{'Δ shared':>10}{'n all':>7}"
          f"{'Δ all':>8}")
    for name, r in rows.items():
        ds = "-" if r["delta_shared"] is None else f"{r['delta_shared']:.3f}"
        print(f"{name[:43]:<44}{r['side']:>7}{r['n_shared']:>9}{ds:>10}{r['n_all']:>7}"
              f"{r['delta_all']:>8.3f}")
    doc = {"victim": victim, "finalists": rows, "regime_blocks": blocks, "k": k,
           "screening": {n: {"delta": strength(s), "ranked_in": ranked[s].regime}
                         for n, s in {**ours, **theirs}.items()}}
    short = [n for n, r in rows.items() if r["n_shared"] < MIN_SHARED_PAIRS]
    if short:
        reason = (f"fewer than {MIN_SHARED_PAIRS} shared pairs for {', '.join(short)} "
                  f"(shared blocks {blocks['shared']} of {sum(blocks.values())}): the CPUs did "
                  "not share their cache long enough to compare aggressor strength")
        doc["refused"] = reason
        if args.json:
            print(json.dumps(doc, indent=2))
        print(f"aggressor_strength_ratio_ptrchase: refused: {reason}")
        return 1
    best_ours = max(fin_ours, key=lambda n: delta(*fin_ours[n]))
    best_theirs = max(fin_theirs, key=lambda n: delta(*fin_theirs[n]))
    ratio = delta(*fin_ours[best_ours]) / delta(*fin_theirs[best_theirs])
    lo, hi = ratio_ci(fin_ours, fin_theirs)
    n = (rows[best_ours]["n_shared"], rows[best_theirs]["n_shared"])
    doc.update({"ratio": ratio, "ratio_ci": [lo, hi], "strongest_ours": best_ours,
                "strongest_theirs": best_theirs, "n_shared": n})
    if args.json:
        print(json.dumps(doc, indent=2))
    print(f"strongest: ours {best_ours} Δ {delta(*fin_ours[best_ours]):.3f} (n {n[0]}), "
          f"theirs {best_theirs} Δ {delta(*fin_theirs[best_theirs]):.3f} (n {n[1]})")
    met = "met" if ratio >= 1.2 and lo > 1 else "not met"
    print(f"goal (ratio >= 1.2, CI lower bound > 1): {met}")
    print(f"aggressor_strength_ratio_ptrchase: {ratio:.3f} [{lo:.3f}, {hi:.3f}] "
          f"(n {n[0]} and {n[1]} shared pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
