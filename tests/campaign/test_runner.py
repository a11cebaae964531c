"""The campaign runner: schedule, exactly-once recording, resume checks, skipped setups, and
the local executor, with real victims and aggressors on this host."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from intercore.campaign import runner
from intercore.campaign.executors import executor_for
from intercore.campaign.executors.base import RunRequest
from intercore.campaign.executors.local import LocalExecutor
from intercore.campaign.spec import load_campaign
from intercore.base.errors import InputError
from intercore.host.topology import read_topology
from intercore.base.sample import Sample
from intercore.store import InvocationRecord, Store, WorkloadRecord
from intercore.store.campaigns import RunAttachment, SlotTaken

from _campaigns import write_campaign
from _store_fixtures import sql

TOPO = read_topology()
needs_two_cpus = pytest.mark.skipif(len(TOPO.online_cpus) < 2,
                                    reason="needs two online CPUs (victim + engine)")
HAS_RESCTRL = Path("/sys/fs/resctrl/info").is_dir()

COLOURING = """\
  colouring:
    colours: 4
    guests: [engine, crit]
    min_colours: {crit: 2}
"""



class StopAfter:
    """A listener that interrupts the session (as Ctrl-C would) after n runs."""

    def __init__(self, n: int) -> None:
        self.n, self.finished = n, []

    def phase(self, text):
        pass

    def session(self, campaign, total, recorded):
        pass

    def run_started(self, slot, setup):
        pass

    def run_finished(self, slot, status, seconds, detail):
        self.finished.append((slot, status))
        if len(self.finished) == self.n:
            raise KeyboardInterrupt


def run_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT round, setup, setup_hash, status, invocation_id, reason "
                            "FROM campaign_runs ORDER BY id").fetchall()


# --- pure parts -----------------------------------------------------------------------------

def test_schedule_runs_every_setup_once_per_round_in_round_order():
    names = [f"s{i}" for i in range(7)]
    order = runner.schedule(names, 3, seed=1)
    assert Counter(order) == Counter((r, n) for r in (1, 2, 3) for n in names)
    assert [r for r, _ in order] == sorted(r for r, _ in order)
    rounds = [[n for r, n in order if r == k] for k in (1, 2, 3)]
    assert len({tuple(x) for x in rounds}) > 1  # each round shuffled on its own


def test_schedule_is_deterministic_per_seed():
    names = [f"s{i}" for i in range(10)]
    assert runner.schedule(names, 2, 4) == runner.schedule(names, 2, 4)
    assert runner.schedule(names, 2, 4) != runner.schedule(names, 2, 5)


def test_run_seeds_are_stable_and_distinct():
    seeds = {runner.run_seed(1, s, r) for s in ("solo", "interf") for r in (1, 2, 3)}
    assert len(seeds) == 6
    assert runner.run_seed(1, "solo", 1) == runner.run_seed(1, "solo", 1)
    assert all(0 <= s < 2 ** 31 for s in seeds)


def test_quick_caps_repetitions_and_rounds(tmp_path):
    campaign = load_campaign(write_campaign(tmp_path / "c.yaml", reps=50))
    q = runner.quick(campaign)
    assert (q.repetitions, q.rounds) == (runner.QUICK_REPETITIONS, 2)
    assert runner.quick(runner.quick(q)) == q


# --- the store makes "exactly once" structural ----------------------------------------------

def test_a_slot_cannot_be_recorded_twice(tmp_path):
    with Store.open(tmp_path / "s.db") as store:
        row = store.campaigns.create("c", "c.yaml", "name: c\n", {"setups": []}, [(1, "solo")],
                                     {})
        host = store.ensure_host("fp", "h", "k", "cpu", 2, {})
        now = datetime.now(timezone.utc)
        record = (InvocationRecord(host, "campaign run", (), now, now, "0"),
                  [WorkloadRecord("victim", "v", "v")],
                  [Sample(0, 0, 0, "iso", "", 0, "total", 10, 10, 0, 1)])
        store.record(*record, attachments=[RunAttachment(row.id, "solo", "h1", 1)])
        with pytest.raises(SlotTaken):
            store.record(*record, attachments=[RunAttachment(row.id, "solo", "h1", 1)])
        # The second invocation was rolled back with its slot row: no orphan samples.
        assert sql(store, "SELECT COUNT(*) FROM invocations").fetchone()[0] == 1
        assert sql(store, "SELECT COUNT(*) FROM samples").fetchone()[0] == 1
        assert not store.campaigns.record_skipped(row.id, "solo", "h1", 1, "a reason")


# --- the local executor ---------------------------------------------------------------------

@needs_two_cpus
def test_local_executor_reports_every_process_and_stores_solo_runs_as_isolated():
    executor = LocalExecutor()
    started: list[tuple[str, int]] = []
    solo = executor.run(RunRequest("ptrchase:size=256K", reps=3),
                        on_start=lambda role, pid: started.append((role, pid)))
    assert [role for role, _ in started] == ["victim"]
    totals = [s for s in solo.samples if s.region_name == "total"]
    assert len(totals) == 4  # 3 repetitions round up to 2 harness pairs of 2
    assert {s.condition for s in solo.samples} == {"iso"}
    assert len({s.pair for s in totals}) == len(totals)  # each its own pair
    assert not any("aggressor_bytes" in s.counters for s in solo.samples)
    assert [w.role for w in solo.workloads] == ["victim"]

    started.clear()
    paired = executor.run(RunRequest("ptrchase:size=256K", engine=("bw:op=write,size=64K",),
                                     reps=3),
                          on_start=lambda role, pid: started.append((role, pid)))
    assert sorted(role for role, _ in started) == ["aggressor", "victim"]
    assert len({pid for _, pid in started}) == 2
    conditions = Counter(s.condition for s in paired.samples if s.region_name == "total")
    assert conditions == {"iso": 3, "int": 3}
    assert [w.role for w in paired.workloads] == ["victim", "aggressor"]
    assert paired.started_at < paired.finished_at


def test_executor_description_is_stable_and_names_the_binaries():
    executor = executor_for(type("P", (), {"executor": "local", "ssh": None})())
    first, second = executor.describe(), executor.describe()
    assert first == second
    assert set(first["binaries"]) == {"ic-victim", "ic-aggr"}
    assert all(len(h) == 64 for h in first["binaries"].values())


def test_an_unknown_executor_is_bad_input():
    with pytest.raises(InputError, match="unknown executor"):
        executor_for(type("P", (), {"executor": "carrier-pigeon", "ssh": None})())


# --- whole campaigns ------------------------------------------------------------------------

@needs_two_cpus
def test_a_campaign_records_every_slot_once_in_schedule_order(tmp_path):
    path, db = write_campaign(tmp_path / "c.yaml"), tmp_path / "s.db"
    result = runner.start(path, db, canary=False)
    assert (result.total, result.done, result.skipped, result.complete) == (6, 6, 0, True)
    assert result.regime == "unknown"
    rows = run_rows(db)
    with Store.open(db) as store:
        row = store.campaigns.find("tiny")
        assert [(r, s) for r, s, *_ in rows] == list(row.schedule)
        for _, setup, setup_hash, status, invocation_id, _ in rows:
            assert status == "done" and setup_hash == row.setups[setup]["hash"]
            inv = store.get_invocation(invocation_id)
            assert inv.params["setup"] == setup and inv.command == "campaign run"
            samples = store.samples_for(invocation_id)
            assert samples and {s.regime for s in samples} == {"unknown"}
        assert row.source_text == path.read_text()
        with pytest.raises(InputError, match="already holds a campaign named 'tiny'"):
            runner.start(path, db, canary=False)


@needs_two_cpus
def test_interrupted_campaign_resumes_in_the_stored_order(tmp_path):
    path, db = write_campaign(tmp_path / "c.yaml"), tmp_path / "s.db"
    stop = StopAfter(1)
    with pytest.raises(KeyboardInterrupt):
        runner.start(path, db, canary=False, listener=stop)
    # A round's three setups ran as one interleaved group and were recorded together.
    assert len(run_rows(db)) == 3
    result = runner.resume("tiny", db, canary=False)
    assert (result.already, result.done, result.complete) == (3, 3, True)
    rows = run_rows(db)
    with Store.open(db) as store:
        schedule = store.campaigns.find("tiny").schedule
    assert [(r, s) for r, s, *_ in rows] == list(schedule)
    again = runner.resume("1", db, canary=False)  # by id; nothing left to do
    assert (again.done, again.already, again.complete) == (0, 6, True)


@needs_two_cpus
def test_resume_refuses_changed_hashes_unless_forced(tmp_path):
    path, db = write_campaign(tmp_path / "c.yaml"), tmp_path / "s.db"
    with pytest.raises(KeyboardInterrupt):
        runner.start(path, db, canary=False, listener=StopAfter(1))
    write_campaign(path, reps=4)  # every setup's request, hence its hash, changes
    with pytest.raises(InputError, match="changed since it was planned.*--force"):
        runner.resume("tiny", db, canary=False)
    assert len(run_rows(db)) == 3  # nothing ran
    result = runner.resume("tiny", db, force=True, canary=False)
    assert result.complete and any("hash" in w for w in result.warnings)
    rows = run_rows(db)
    before, after = {h for _, _, h, *_ in rows[:3]}, {h for _, _, h, *_ in rows[3:]}
    assert len(before) == 3 and len(after) == 3 and before.isdisjoint(after)


@needs_two_cpus
def test_resume_refuses_a_removed_setup_even_when_forced(tmp_path):
    path, db = write_campaign(tmp_path / "c.yaml"), tmp_path / "s.db"
    with pytest.raises(KeyboardInterrupt):
        runner.start(path, db, canary=False, listener=StopAfter(1))
    write_campaign(path, sizes="64KiB")
    with pytest.raises(InputError, match="interf_write_256KiB is no longer in the campaign"):
        runner.resume("tiny", db, force=True, canary=False)
    path.unlink()
    with pytest.raises(InputError, match="is gone"):
        runner.resume("tiny", db, canary=False)


@needs_two_cpus
@pytest.mark.skipif(HAS_RESCTRL, reason="this host can enforce cache colouring")
def test_unenforceable_setups_are_skipped_with_the_reason(tmp_path):
    path = write_campaign(tmp_path / "c.yaml", sizes="64KiB", extra=COLOURING)
    db = tmp_path / "s.db"
    result = runner.start(path, db, canary=False)
    rows = run_rows(db)
    skipped = [r for r in rows if r[3] == "skipped"]
    done = [r for r in rows if r[3] == "done"]
    # solo and interf_write_64KiB run; their _cc2/_cc3 variants need L3 CAT.
    assert {s for _, s, *_ in done} == {"solo", "interf_write_64KiB"}
    assert {s for _, s, *_ in skipped} == {"solo_cc2", "solo_cc3", "interf_write_64KiB_cc2",
                                           "interf_write_64KiB_cc3"}
    assert all(inv is None and "l3-cat" in reason for *_, inv, reason in skipped)
    assert (result.done, result.skipped, result.complete) == (4, 8, True)


def test_run_groups_interleave_a_rounds_setups_of_one_task_and_leave_enforced_ones_alone():
    from types import SimpleNamespace

    def setup(name, victim="ptrchase", needs=()):
        return SimpleNamespace(name=name, needs=needs,
                               request=RunRequest(victim, ("size=1M",), 1, (), None, 3, 1))

    setups = {s.name: s for s in (setup("solo"), setup("a"), setup("b"),
                                  setup("a_cc2", needs=("l3-cat",)), setup("q", "qsort"))}
    slots = [(1, "a"), (1, "q"), (1, "a_cc2"), (1, "solo"), (1, "b"), (2, "b"), (2, "solo")]
    assert runner.run_groups(slots, setups) == [
        [(1, "a"), (1, "solo"), (1, "b")], [(1, "q")], [(1, "a_cc2")], [(2, "b"), (2, "solo")]]
    assert runner.group_seed(1, ["a"], 2) == runner.run_seed(1, "a", 2)
    assert runner.group_seed(1, ["b", "a"], 2) == runner.group_seed(1, ["a", "b"], 2)


@needs_two_cpus
@pytest.mark.slow
def test_a_round_runs_interleaved_with_a_regime_per_sample(tmp_path):
    path, db = write_campaign(tmp_path / "c.yaml", reps=4), tmp_path / "s.db"
    result = runner.start(path, db, canary=True)
    assert result.complete and result.done == 6
    with Store.open(db) as store:
        row = store.campaigns.find("tiny")
        for round_ in (1, 2):
            runs = [r for r in store.campaigns.runs(row.id) if r.round == round_]
            invocations = [store.get_invocation(r.invocation_id) for r in runs]
            designs = [inv.summary["design"] for inv in invocations]
            # One group: every setup knows the others, and their blocks alternate in time.
            assert all(sorted(d["interleaved"]) == sorted(r.setup for r in runs)
                       for d in designs)
            spans = sorted((b["start_ns"], inv.params["setup"])
                           for inv, d in zip(invocations, designs) for b in d["blocks"])
            switches = sum(a[1] != b[1] for a, b in zip(spans, spans[1:]))
            assert switches >= len(runs)  # more than one block per setup, taking turns
            for r in runs:
                samples = store.samples_for(r.invocation_id)
                total = [s for s in samples if s.region_name == "total"]
                assert len(total) == (4 if r.setup == "solo" else 8)
                assert all(s.regime in ("shared", "not-shared", "unknown") for s in samples)
                assert all(s.block is not None for s in samples)
