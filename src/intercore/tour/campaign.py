"""The campaign part of `intercore demo`: the small example campaign in quick mode, reported.

    result = campaign.run(Path("intercore.db"), Path("."))
    result["report"]    # the HTML file to open

Each call stores a new campaign (named after the example and the time), so running the demo
twice keeps both and `intercore measure campaign compare` can set them side by side.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..base import examples
from ..campaign import results as campaign_results
from ..campaign import runner
from ..campaign.spec import load_campaign
from ..campaign.stats import TOTAL_REGION
from ..store import Store


def small_campaign() -> Path:
    return examples.example("campaigns/small.yaml", "the example campaign")


class _Phases:
    """Turns runner events into the one-line phases `intercore demo` shows."""

    def __init__(self, on_phase: Callable[[str], None] | None) -> None:
        self.say = on_phase or (lambda text: None)
        self.total = self.done = 0

    def phase(self, text: str) -> None:
        self.say(f"campaign: {text}")

    def session(self, campaign, total: int, recorded: int) -> None:
        self.total, self.done = total, recorded

    def run_started(self, slot, setup) -> None:
        self.say(f"campaign: run {self.done + 1}/{self.total}, round {slot[0]}: {setup.name}")

    def run_finished(self, slot, status: str, seconds: float, detail: str) -> None:
        self.done += 1


def run(db: Path, out_dir: Path, on_phase: Callable[[str], None] | None = None, *,
        campaign: Path | None = None, canary: bool = True) -> dict[str, Any]:
    """Run `campaign` (default: examples/campaigns/small.yaml) in quick mode into `db` and
    write its report to `out_dir`. Returns {"campaign", "report", "session", "slowdowns",
    "skipped", "warnings"}; slowdowns are the total's median slowdown per setup with a
    baseline."""
    campaign = campaign or small_campaign()
    name = f"{load_campaign(campaign).name}-demo-{datetime.now():%Y%m%d-%H%M%S}"
    session = runner.start(campaign, db, quick_mode=True, name=name, canary=canary,
                           listener=_Phases(on_phase))
    with Store.open(db) as store:
        results = campaign_results.load(store, store.campaigns.get(session.campaign_id))
    if on_phase:
        on_phase("campaign: report")
    # Deferred: the report draws with matplotlib, a third of every command's start-up.
    from ..report import html
    from ..report.campaign import build
    stats, sections = build(results)
    out_dir.mkdir(exist_ok=True)
    report = html.write(out_dir / f"campaign-{name}.html", f"Campaign {name}", sections,
                        subtitle="intercore demo: the small example campaign in quick mode")
    return {
        "campaign": name,
        "report": str(report),
        "session": session.to_dict(),
        "slowdowns": [{"setup": t.setup, "n": t.summary.n, **t.slowdown.to_dict()}
                      for t in stats if t.region == TOTAL_REGION and t.slowdown is not None],
        "skipped": [{"setup": setup, "reason": reason}
                    for setup, reason in sorted({(r.setup, r.reason) for r in results.skipped})],
        "warnings": campaign_results.warnings(results, stats),
    }
