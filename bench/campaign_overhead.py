#!/usr/bin/env python3
"""Campaign orchestration overhead, apart from the workload and from its process handling.

    python bench/campaign_overhead.py [--quick] [--canary] [--campaign FILE]

Runs the small example campaign (examples/campaigns/small.yaml) into a temporary store through
the code `intercore measure campaign run` uses, and splits the session's wall time three ways:

    workload       the victim's measured repetitions: the sum of region 0 ("total") of every
                   stored sample, isolated and interfered
    harness        the rest of each run (its invocations' finished_at - started_at, once per
                   interleaved group): spawning the victim and the aggressors, the sync
                   handshakes, pausing, resuming, parking and unparking aggressors between
                   repetitions and blocks, stopping them (and, with --canary, the running
                   canary's probes between blocks)
    orchestration  the rest of the session: planning, enforcement decisions, the store, the
                   skipped setups recorded, every raw sample written

The goal is on orchestration, the runner's own cost (<= 5 % of the workload); the harness
share is printed beside it, as the price of the paired design, not orchestration. The
shared-cache canary is a validity probe: left out unless --canary; its once-per-session
probe is then timed apart. Fails closed (bench/_goals.py): a run without samples, or none at all,
fails the goal rather than shrinking the denominator.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _goals import Goals
from intercore.campaign import runner

GOAL = 0.05
SMALL = Path(__file__).resolve().parents[1] / "examples" / "campaigns" / "small.yaml"


def split(db: Path, campaign_id: int) -> tuple[int, float, float, int]:
    """(runs, seconds inside runs, seconds of measured repetitions, runs without samples)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT i.id, i.started_at, i.finished_at, "
            "(SELECT SUM(s.wall_ns) FROM samples s WHERE s.invocation_id = i.id "
            " AND s.region = 0) FROM campaign_runs r JOIN invocations i "
            "ON i.id = r.invocation_id WHERE r.campaign_id = ?", (campaign_id,)).fetchall()
    # A round's setups of one task run as one interleaved run, stored as one invocation
    # each with the run's times: count every run once.
    inside = sum((datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()
                 for a, b in {(a, b) for _, a, b, _ in rows})
    measured = sum(ns or 0 for *_, ns in rows) / 1e9
    return len(rows), inside, measured, sum(ns is None for *_, ns in rows)


class CanaryClock:
    """Times the canary: from the runner's canary phase to the start of the first run."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.seconds = 0.0

    def phase(self, text: str) -> None:
        if "canary" in text:
            self.started = time.perf_counter()

    def session(self, campaign, total: int, recorded: int) -> None:
        if self.started is not None:
            self.seconds = time.perf_counter() - self.started

    def run_started(self, slot, setup) -> None:
        pass

    def run_finished(self, slot, status: str, seconds: float, detail: str) -> None:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaign", type=Path, default=SMALL, help="campaign file (default: "
                    "examples/campaigns/small.yaml)")
    ap.add_argument("--quick", action="store_true", help="quick mode (shorter runs, so a "
                    "larger share of fixed per-run costs)")
    ap.add_argument("--canary", action="store_true", help="include the shared-cache canary")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        clock = CanaryClock()
        t0 = time.perf_counter()
        session = runner.start(args.campaign, db, quick_mode=args.quick, canary=args.canary,
                               listener=clock)
        wall = time.perf_counter() - t0
        runs, inside, workload, empty = split(db, session.campaign_id)
    harness = inside - workload
    orchestration = wall - inside - clock.seconds
    print(f"campaign {session.campaign}: {runs} runs, {session.skipped} skipped, "
          f"regime {session.regime}")
    print(f"wall {wall:.2f} s = workload {workload:.2f} s (measured repetitions) + harness "
          f"{harness:.2f} s (processes, handshakes, pause/resume) + orchestration "
          f"{orchestration:.2f} s" + (f" + canary {clock.seconds:.2f} s" if args.canary else ""))
    if runs:
        print(f"per run: harness {1000 * harness / runs:.0f} ms, orchestration "
              f"{1000 * orchestration / runs:.0f} ms")
    usable = runs > 0 and not empty and workload > 0
    if usable:
        print(f"campaign_harness_share: {harness / workload:.4f} (no goal: the paired design)")
    goals = Goals()
    goals.check("campaign_orchestration_share", orchestration / workload if usable else None,
                "<=", GOAL, missing=f"{runs} runs, {empty} of them without samples")
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
