"""The campaign report from a real (small) campaign: one self-contained file with every
section, skipped setups with their reasons, and the warnings that weaken the evidence."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from intercore.campaign import runner
from intercore.campaign.results import load, warnings as campaign_warnings
from intercore.host.topology import read_topology
from intercore.report import html
from intercore.report.campaign import build
from intercore.store import Store

HAS_RESCTRL = Path("/sys/fs/resctrl/info").is_dir()
pytestmark = pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                                reason="needs two online CPUs (victim + engine)")

CAMPAIGN = """\
name: rep
description: "report test <b>not bold</b>"
repetitions: 4
rounds: 1
seed: 2
guests:
  crit:
    kind: critical
    tasks:
      - {name: chase, victim: "ptrchase:size=256K"}
      - {name: mm, victim: "matmul:n=16,k=256,m=4"}
  engine: {kind: engine}
generators:
  engine: {sizes: [64KiB, 256KiB], ops: [read, write]}
  colouring: {colours: 4, guests: [engine, crit], min_colours: {crit: 2}}
"""
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|"""
                      r"""<link\b|<script\b|@import""", re.IGNORECASE)
SECTIONS = ("overview", "warnings", "slowdown-per-benchmark-and-setup", "slowdown-heatmaps",
            "evidence-per-setup", "counters", "statistics", "per-host-regime", "skipped-setups",
            "enforcement", "configuration", "environment")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    path, db = tmp / "rep.yaml", tmp / "s.db"
    path.write_text(CAMPAIGN)
    runner.start(path, db, canary=False)
    with Store.open(db) as store:
        results = load(store, store.campaigns.find("rep"))
    stats, sections = build(results)
    out = html.write(tmp / "rep.html", "Campaign rep", sections)
    return results, stats, out.read_text()


@pytest.mark.slow
def test_report_is_one_self_contained_file(report):
    _, _, page = report
    assert not EXTERNAL.search(page)
    images = re.findall(r'<img src="([^"]+)"', page)
    assert images and all(i.startswith("data:image/svg+xml;base64,") for i in images)
    for uri in images:
        svg = base64.b64decode(uri.split(",", 1)[1]).decode()
        assert not re.search(r"""(?:href|src)=["']https?:""", svg)


def test_report_has_every_section(report):
    _, _, page = report
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in page
    # measure --plot's figure, once per interfered setup that ran
    evidence = page.split('<section id="evidence-per-setup">')[1].split("</section>")[0]
    assert evidence.count("<img ") >= 1 and "regime" in evidence
    assert "&lt;b&gt;not bold&lt;/b&gt;" in page  # the campaign file, escaped


def test_report_shows_statistics_of_every_setup_that_ran(report):
    results, stats, page = report
    ran = {r.setup for r in results.runs if r.status == "done"}
    assert {t.setup for t in stats} == ran
    for setup in ran:
        assert f"<td>{setup}</td>" in page
    interf = [t for t in stats if t.region == "total" and t.setup.startswith("interf_")
              and "_cc" not in t.setup]
    assert len(interf) == 8  # 2 sizes x 2 ops x 2 tasks
    assert all(t.slowdown is not None and t.paired is not None for t in interf)
    assert "insufficient n (&lt; 10)" in page  # 4 repetitions: no p90
    # Without a canary every repetition is of regime "unknown": one row per setup's total.
    regimes = page.split('<section id="per-host-regime">')[1].split("</section>")[0]
    for t in stats:
        if t.region == "total":
            assert set(t.by_regime) == {"unknown"} and t.by_regime["unknown"].n == t.summary.n
            assert f"<td>{t.setup}</td>" in regimes


@pytest.mark.skipif(HAS_RESCTRL, reason="this host can enforce cache colouring")
def test_report_lists_skipped_setups_with_their_reason(report):
    results, _, page = report
    skipped = {r.setup for r in results.skipped}
    assert skipped == {s for s in results.campaign.setups if "_cc" in s}
    section = page.split('<section id="skipped-setups">')[1].split("</section>")[0]
    for setup in skipped:
        assert f"<td>{setup}</td>" in section
    assert "needs l3-cat" in section


def test_warnings_say_what_weakens_the_evidence(report):
    results, stats, page = report
    warnings = campaign_warnings(results, stats)
    assert any("none of the" in w and "unknown" in w for w in warnings)  # no canary was run
    section = page.split('<section id="warnings">')[1].split("</section>")[0]
    assert section.count("<li>") == len(warnings)


def test_a_campaign_with_no_finished_run_still_reports(tmp_path):
    with Store.open(tmp_path / "s.db") as store:
        row = store.campaigns.create("empty", "e.yaml", "name: empty\n",
                                     {"setups": [], "rounds": 1}, [(1, "solo")], {"quick": True})
        results = load(store, row)
    stats, sections = build(results)
    page = html.render("Campaign empty", sections)
    assert stats == []
    assert "incomplete: 1 of 1 runs have not run yet" in page
    assert "quick mode" in page and "No slowdown yet" in page


def _record(store, row, setup, setup_hash, round_, summary):
    from datetime import datetime, timezone

    from intercore.base.sample import Sample
    from intercore.store import InvocationRecord, WorkloadRecord
    from intercore.store.campaigns import RunAttachment

    host = store.ensure_host("fp", "board", "6.1", "cpu", 4, {"warnings": ["no PMU"]})
    now = datetime.now(timezone.utc)
    store.record(InvocationRecord(host, "campaign run", (), now, now, "0",
                                  params={"setup": setup, "round": round_}, summary=summary),
                 [WorkloadRecord("victim", "qsort", "qsort")],
                 [Sample(0, i, i, "iso", "", 0, "total", 100 + i, 100 + i, 0, 1)
                  for i in range(3)],
                 attachments=[RunAttachment(row.id, setup, setup_hash, round_)])


def test_enforcement_and_hash_changes_are_reported(tmp_path):
    enforcement = {"backend": "resctrl", "last_cmd_status": "ok", "groups": [
        {"guest": "crit", "group": "intercore-abc-crit", "pids": [42],
         "l3": {"colours": "0xc", "requested": "0xff00", "applied": {"L3": {"0": "ff00"}}}}]}
    setup = {"name": "solo_cc2", "hash": "h2", "baseline": None, "task": "qsort",
             "config": "solo_cc2", "engine": [], "colours": {"crit": "0xc"}, "bandwidth": {},
             "needs": ["l3-cat"], "reps": 3, "colour_count": 2, "contention": None}
    with Store.open(tmp_path / "s.db") as store:
        row = store.campaigns.create("enf", "e.yaml", "name: enf\n",
                                     {"setups": [setup], "rounds": 2},
                                     [(1, "solo_cc2"), (2, "solo_cc2")], {})
        _record(store, row, "solo_cc2", "h1", 1, {"regime": "shared", "enforcement": enforcement})
        _record(store, row, "solo_cc2", "h2", 2, {"regime": "shared", "enforcement": enforcement})
        results = load(store, row)
    stats, sections = build(results)
    page = html.render("Campaign enf", sections)
    section = page.split('<section id="enforcement">')[1].split("</section>")[0]
    assert section.count("<td>intercore-abc-crit</td>") == 2
    assert "0xff00" in section and "ff00" in section and "<td>ok</td>" in section
    warnings = campaign_warnings(results, stats)
    assert any("solo_cc2 was measured under 2 different hashes (h1, h2)" in w for w in warnings)
    assert "host board: no PMU" in warnings
    assert not any("regime" in w for w in warnings)  # every run saw a shared cache
