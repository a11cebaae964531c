#!/usr/bin/env python3
"""Aggressor strength: the paired slowdown each intercore preset inflicts on a shared-cache-sized
pointer chase and on matrix1, side by side, in the same run, with Debian's stress-ng --stream,
--cache and --vm (each paused with SIGSTOP while a register-only spinner holds its CPU).

    python bench/aggressor_strength.py [--runs N] [--json]

Last line: `aggressor_strength_ratio_ptrchase: X`, the Δ of intercore's strongest preset over
stress-ng's strongest on the pointer chase (goal >= 1.2). Installs stress-ng with apt when
missing and running as root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

from intercore.host.topology import default_placement, read_topology
from intercore.measure.presets import PRESETS, Footprints
from intercore.measure.session import Request, measure

STRESS_NG = {
    "stress-ng --stream": "--stream 1",
    "stress-ng --cache": "--cache 1",
    "stress-ng --vm": "--vm 1",
}


def ensure_stress_ng() -> None:
    if shutil.which("stress-ng"):
        return
    if os.geteuid() != 0:
        sys.exit("stress-ng is missing: apt-get install stress-ng")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "stress-ng"], check=True,
                   stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="pairs per aggressor (default 10)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ensure_stress_ng()
    topo = read_topology()
    vcpu, acpus = default_placement(topo)
    fp = Footprints.for_host(topo, vcpu)
    acpu = acpus[0]
    ours = list(PRESETS)
    theirs = {label: f"cmd:stress-ng {opt} --taskset {acpu} --timeout 1h --quiet@{acpu}"
              for label, opt in STRESS_NG.items()}
    sets = ours + list(theirs.values())
    label_of = {v: k for k, v in theirs.items()}
    report = {}
    for victim in (f"ptrchase:size={fp.shared_victim}", "matrix1"):
        res = measure(Request(victim, aggressors=tuple(sets), runs=args.runs, seed=3),
                      db=None, argv=sys.argv, command="bench",
                      on_phase=lambda t: print(t, file=sys.stderr, flush=True))
        rows = {}
        for r in res.regions:
            if r.region_name != "total":
                continue
            name = label_of.get(r.aggressor_set, r.aggressor_set)
            c = r.result
            rows[name] = {"n": c.n, "delta": c.delta, "ci": list(c.delta_ci),
                          "paired_median": c.paired_median, "paired_max": c.paired_max}
        report[res.plan.victim.label] = {"regime": res.regime, "rows": rows}
        print(f"\n{res.plan.victim.label} (regime {res.regime}, canaries "
              f"{[c['regime'] for c in res.canaries]})")
        print(f"{'aggressor':<22}{'n':>4}{'delta':>8}{'95% CI':>18}{'pair med':>10}{'pair max':>10}")
        for name, row in rows.items():
            print(f"{name:<22}{row['n']:>4}{row['delta']:>8.3f}"
                  f"{'[%.3f, %.3f]' % tuple(row['ci']):>18}{row['paired_median']:>10.3f}"
                  f"{row['paired_max']:>10.3f}")
    first = next(iter(report.values()))
    chase = first["rows"]
    best_ours = max((chase[n] for n in ours), key=lambda r: r["delta"])
    best_theirs = max((chase[n] for n in STRESS_NG), key=lambda r: r["delta"])
    if args.json:
        print(json.dumps(report))
    print(f"\nstrongest intercore delta {best_ours['delta']:.3f}, strongest stress-ng delta "
          f"{best_theirs['delta']:.3f} (n={best_ours['n']} pairs each)")
    if first["regime"] != "shared":
        print(f"warning: canary regime {first['regime']!r}: the two CPUs did not visibly share "
              "a cache during the run, so this ratio compares noise, not aggressor strength")
    print(f"aggressor_strength_ratio_ptrchase: {best_ours['delta'] / best_theirs['delta']:.3f}")


if __name__ == "__main__":
    main()
