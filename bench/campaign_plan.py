#!/usr/bin/env python3
"""Planning cost: load and plan a campaign of exactly 100 000 setups (goal <= 5 s).

    python bench/campaign_plan.py [--repeat N]

The campaign is generated in a temporary file: 21 engine variants (7 sizes x 3 operations) x
40 colour assignments (S = 40, N = 2) x 119 bandwidth budgets for the engine, plus 40 solo
baselines = 40 x (21 x 119 + 1) = 100 000 setups, each with its content hash. Timed: reading
and validating the file and expanding it (`load_campaign` + `make_plan`), with the host
description taken once beforehand as `measure campaign plan` does. Last line:
`campaign_plan_100k_s: <median> (goal 5 s, ratio <median / 5>)`, then its goal line
(bench/_goals.py); a plan that is not exactly 100 000 setups fails it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _goals import Goals

from intercore.campaign.executors.local import LocalExecutor
from intercore.campaign.plan import make_plan
from intercore.campaign.spec import load_campaign

GOAL_S = 5.0
EXPECTED = 100_000

CAMPAIGN = f"""\
name: bench-100k
guests:
  crit: {{kind: critical, tasks: [ptrchase]}}
  eng: {{kind: engine}}
generators:
  engine:
    sizes: [32KiB, 64KiB, 256KiB, 1MiB, 4MiB, 16MiB, 64MiB]
    ops: [read, write, rw]
  colouring: {{colours: 40, guests: [eng, crit]}}
  bandwidth:
    unit: MBps
    guests:
      eng: {{budgets: {list(range(100, 100 + 119 * 10, 10))}}}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (default 3)")
    args = ap.parse_args()
    host = LocalExecutor().describe()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench-100k.yaml"
        path.write_text(CAMPAIGN)
        load_campaign(path)  # warm: the victims' option table is read from ic-victim once
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            plan = make_plan(load_campaign(path), source=str(path), host=host)
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"setups: {len(plan.setups)} ({len({s.hash for s in plan.setups})} distinct hashes)")
    print(f"n:      {len(times)} repetitions, min {min(times):.2f} s, max {max(times):.2f} s")
    print(f"campaign_plan_100k_s: {median:.2f} (goal {GOAL_S:.0f} s, ratio {median / GOAL_S:.2f})")
    goals = Goals()
    goals.check("campaign_plan_setups", len(plan.setups), "==", EXPECTED)
    goals.check("campaign_plan_100k_s", median, "<=", GOAL_S)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
