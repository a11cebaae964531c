#!/usr/bin/env python3
"""Campaign orchestration overhead as a share of the workload time (goal <= 5 %).

    python bench/campaign_overhead.py [--quick] [--canary] [--campaign FILE]

Runs the small example campaign (examples/campaigns/small.yaml) into a temporary store through
the code `intercore campaign run` uses: planning, the store, enforcement decisions, skipped
setups recorded, every raw sample written. Workload time is the sum of the runs' own
timestamps (each invocation's finished_at - started_at: from the victim's start to the last
process stopped); everything else in the session's wall time is orchestration. The
shared-cache canary is a validity probe run once per session, not orchestration: it is left
out unless --canary, and its time is printed apart when included.

Last line: `campaign_overhead_share: <(wall - workload) / workload> (goal 0.05)`.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from datetime import datetime
from pathlib import Path

from intercore.campaign import runner

GOAL = 0.05
SMALL = Path(__file__).resolve().parents[1] / "examples" / "campaigns" / "small.yaml"


def workload_seconds(db: Path, campaign_id: int) -> tuple[float, int]:
    """Sum of the recorded runs' durations, and their count."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT i.started_at, i.finished_at FROM campaign_runs r JOIN invocations i "
            "ON i.id = r.invocation_id WHERE r.campaign_id = ?", (campaign_id,)).fetchall()
    total = sum((datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()
                for a, b in rows)
    return total, len(rows)


class CanaryClock:
    """Times the canary: from the runner's canary phase to the start of the first run."""

    def __init__(self) -> None:
        self.started = self.seconds = None

    def phase(self, text: str) -> None:
        if "canary" in text:
            self.started = time.perf_counter()

    def session(self, campaign, total: int, recorded: int) -> None:
        self.seconds = time.perf_counter() - self.started

    def run_started(self, slot, setup) -> None:
        pass

    def run_finished(self, slot, status: str, seconds: float, detail: str) -> None:
        pass


def main() -> None:
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
        workload, runs = workload_seconds(db, session.campaign_id)
    overhead = wall - workload
    print(f"campaign {session.campaign}: {runs} runs, {session.skipped} skipped, "
          f"regime {session.regime}")
    if args.canary:
        print(f"canary {clock.seconds:.2f} s, included in the orchestration below "
              f"(without it: {(overhead - clock.seconds) / workload:.4f})")
    print(f"wall {wall:.2f} s, workload {workload:.2f} s (sum of run timestamps), "
          f"orchestration {overhead:.2f} s = {1000 * overhead / max(1, runs):.0f} ms per run")
    print(f"campaign_overhead_share: {overhead / workload:.4f} (goal {GOAL})")


if __name__ == "__main__":
    main()
