"""Campaigns compared host by host: the same campaign run on two hosts (two stores merged, or
one campaign spread over labgrid boards) gives one column group per host, each slowdown
against the baseline measured on the same host, never pooled across hosts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from _store_fixtures import T0

from intercore.campaign.results import host_columns, load
from intercore.base.sample import Sample
from intercore.report import html
from intercore.report.campaign import hosts_report
from intercore.store import InvocationRecord, Store, WorkloadRecord
from intercore.store.campaigns import RunAttachment

SETUPS = [{"name": "solo", "baseline": None, "task": "chase"},
          {"name": "interf", "baseline": "solo", "task": "chase"}]
# host -> (solo median, interfered median) in ns
HOSTS = {"alpha": (1000, 1500), "beta": (2000, 2400)}


def _run(store: Store, host: str, setup: str, round_: int, campaign_id: int, *,
         board: str | None = None) -> None:
    solo, interfered = HOSTS[host]
    hid = store.ensure_host(f"fp-{host}", host, "6.18", "cpu", 2, {})
    samples = []
    for p in range(9):
        jitter = p - 4  # medians exactly as in HOSTS
        samples.append(Sample(0, 2 * p, p, "iso", "", 0, "total", solo + jitter,
                              solo + jitter, 0, 1))
        if setup == "interf":
            samples.append(Sample(0, 2 * p + 1, p, "int", "engine", 0, "total",
                                  interfered + jitter, interfered + jitter, 0, 1))
    params = {"setup": setup, "round": round_, **({"board": {"place": board}} if board else {})}
    at = T0 + timedelta(minutes=round_, seconds=len(setup) + 10 * len(board or host))
    store.record(InvocationRecord(hid, "campaign run", (), at, at + timedelta(seconds=1),
                                  "0.1.0", params=params, summary={"regime": "shared"}),
                 [WorkloadRecord("victim", "chase", "ptrchase")], samples,
                 attachments=[RunAttachment(campaign_id, setup, "h", round_)])


def _campaign(store: Store, name: str, runs) -> None:
    """`runs`: (host, board or None, rounds it ran)."""
    row = store.campaigns.create(name, "c.yaml", "text", {"setups": SETUPS},
                                 [(r, s["name"]) for r in (1, 2) for s in SETUPS], {})
    for host, board, rounds in runs:
        for r in rounds:
            for s in SETUPS:
                _run(store, host, s["name"], r, row.id, board=board)


@pytest.fixture
def merged(tmp_path):
    """One store holding the campaign as run on alpha and, under another name, on beta."""
    with Store.open(tmp_path / "s.db") as store:
        _campaign(store, "sweep", [("alpha", None, (1, 2))])
        _campaign(store, "sweep@beta", [("beta", None, (1, 2))])
        yield store


def test_each_host_is_a_column_with_its_own_baseline(merged):
    results = [load(merged, merged.campaigns.find(n)) for n in ("sweep", "sweep@beta")]
    columns = host_columns(results)
    assert [(c.label, c.campaign, c.runs) for c in columns] == [("alpha", "sweep", 4),
                                                               ("beta", "sweep@beta", 4)]
    for c in columns:
        solo, interfered = HOSTS[c.host]
        total = {t.setup: t for t in c.stats if t.region == "total"}
        assert total["solo"].summary.median == solo and total["solo"].summary.n == 18
        assert total["interf"].slowdown.value == pytest.approx(interfered / solo)
        lo, hi = total["interf"].slowdown.ci
        assert lo <= interfered / solo <= hi


def test_the_report_puts_hosts_side_by_side(merged, tmp_path):
    results = [load(merged, merged.campaigns.find(n)) for n in ("sweep", "sweep@beta")]
    columns, sections = hosts_report(results)
    page = html.write(tmp_path / "r.html", "hosts", sections).read_text()
    side = page.split('<section id="hosts-side-by-side">')[1].split("</section>")[0]
    header = side.split("</thead>")[0]
    for host in HOSTS:
        assert f"<th>{host}: median ms</th>" in header
        assert f"<th>{host}: slowdown [95% CI]</th>" in header
    interf = next(r for r in side.split("<tr>") if r.startswith("<td>interf</td>"))
    assert "1.500 [" in interf and "1.200 [" in interf
    assert "<img " in side  # the bars, host by host
    for anchor in ("overview", "warnings", "statistics", "environment"):
        assert f'<section id="{anchor}">' in page


def test_one_campaign_on_two_boards_shows_its_boards_side_by_side(tmp_path):
    with Store.open(tmp_path / "s.db") as store:
        _campaign(store, "farm", [("alpha", "board-a", (1,)), ("alpha", "board-b", (2,))])
        results = load(store, store.campaigns.find("farm"))
    assert [c.label for c in host_columns([results])] == ["board-a", "board-b"]


def test_campaigns_of_one_host_are_told_apart_by_name(tmp_path):
    with Store.open(tmp_path / "s.db") as store:
        _campaign(store, "sweep", [("alpha", None, (1, 2))])
        _campaign(store, "sweep@b", [("alpha", None, (1, 2))])
        results = [load(store, store.campaigns.find(n)) for n in ("sweep", "sweep@b")]
    assert [c.label for c in host_columns(results)] == ["alpha (sweep)", "alpha (sweep@b)"]


def test_a_campaign_on_one_host_has_no_hosts_section(tmp_path):
    with Store.open(tmp_path / "s.db") as store:
        _campaign(store, "sweep", [("alpha", None, (1, 2))])
        results = load(store, store.campaigns.find("sweep"))
    assert len(host_columns([results])) == 1
