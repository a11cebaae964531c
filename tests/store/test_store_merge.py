"""`results merge` on stores built through the Store API: every table carried with its
references remapped, idempotence, provenance, older schemas read without being changed, and
refusals that leave the target as it was and nothing beside it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from _store_fixtures import T0, paired_run, sql

from intercore.base.errors import InputError
from intercore.base.job import JobResult
from intercore.base.sample import Sample
from intercore.store import Store, schema
from intercore.store.bandwidth import ProfileAttachment, ProfileRecord
from intercore.store.campaigns import RunAttachment
from intercore.store.jobs import JobRun, JobsAttachment
from intercore.store.learn import AttemptAttachment, ProgramAttachment
from intercore.store.merge import CARRIED, content_key, merge
from intercore.store.records import InvocationRecord, WorkloadRecord
from intercore.store.validation import ValidationAttachment, ValidationRecord, VerdictRecord


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def host(store: Store, name: str) -> int:
    return store.ensure_host(f"fp-{name}", name, "6.18.0", "Test CPU", 2, {"l3": 1 << 20})


def measured(store: Store, name: str, minutes: int = 0, slowdown: float = 1.5) -> int:
    inv, workloads, samples = paired_run(host(store, name), slowdown=slowdown,
                                         regions=((0, "total"), (1, "loop")),
                                         counters={"cycles": 7.0})
    inv = replace(inv, started_at=T0 + timedelta(minutes=minutes),
                  finished_at=T0 + timedelta(minutes=minutes, seconds=3))
    samples = [replace(s, block=s.pair // 2, block_start_ns=1000 * s.pair) for s in samples]
    return store.record(inv, workloads, samples)


def periodic(store: Store, name: str) -> int:
    """An invocation whose workloads come after others in the store (ids != indexes), with
    jobs, a model validation and a bandwidth profile."""
    jobs = [JobResult(j, 100 * j, 100 * j + 5, 100 * j + 50, 50, 40, j == 2, 0)
            for j in range(3)]
    workloads = [WorkloadRecord("aggressor", "noise", "bw"),
                 WorkloadRecord("victim", "crit", "matmul", cpu=1)]
    samples = [Sample(1, 0, 0, "iso", "", 0, "total", 10, 9, 0, 1),
               Sample(1, 0, 0, "int", "noise", 0, "total", 20, 19, 0, 1)]
    verdict = VerdictRecord(1, "interference", "llc", "R", "W", "noise", "total", "confirmed",
                            1, 2.0, None, None, 2.0, "shared", ("llc",))
    profile = ProfileRecord(1000, 2, 0, False, [{"spec": "x"}], {"ready": 1}, {"end": 1},
                            b"\x01" * 16, b"\x02" * 16, b"")
    inv = InvocationRecord(host(store, name), "experiment protection", ("x",), T0,
                           T0 + timedelta(seconds=1), "0.1.0", summary={"name": name})
    return store.record(inv, workloads, samples, attachments=[
        JobsAttachment([JobRun("solo", 1, 60, jobs), JobRun("solo", 0, 150, jobs[:1])]),
        ValidationAttachment(ValidationRecord("m", "h1", "m.yaml", "text", 1, 1.1, "shared", []),
                             [verdict]),
        ProfileAttachment(profile)])


def dataset(store: Store, name: str, hostname: str) -> None:
    """A learning dataset of two programs, each traced and measured once by an invocation
    of its own (its attempt 1); the first is closed."""
    row = store.learn.create("ds", {"seed": name}, [{"name": "p1"}, {"name": "p2"}])
    for k, program in enumerate(("p1", "p2")):
        inv, workloads, samples = paired_run(host(store, hostname), n=2)
        inv = replace(inv, command="learn dataset",
                      started_at=T0 + timedelta(days=k + 1, seconds=len(name)))
        store.record(inv, workloads, samples, attachments=[
            ProgramAttachment(row.id, program, f"h{k}", {"features": [k, 1.5]}),
            AttemptAttachment(row.id, program, 1, {"pairs": {"shared": k}},
                              None if k else {"reason": "target"})])


def campaign(store: Store, name: str, hostname: str, rounds=(1, 2)) -> None:
    row = store.campaigns.create(name, f"{name}.yaml", "text", {"setups": [{"name": "s"}],
                                                                "host": hostname},
                                 [(r, "s") for r in (1, 2, 3)], {"quick": True})
    for r in rounds:
        inv, workloads, samples = paired_run(host(store, hostname))
        inv = replace(inv, command="campaign run", params={"setup": "s", "round": r},
                      started_at=T0 + timedelta(hours=r, seconds=len(hostname)))
        store.record(inv, workloads, samples, attachments=[RunAttachment(row.id, "s", "h", r)])
    store.campaigns.record_skipped(row.id, "s", "h", 3, "needs resctrl")


@pytest.fixture
def two(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with Store.open(a) as s:
        measured(s, "alpha")
        periodic(s, "alpha")
        campaign(s, "sweep", "alpha")
        dataset(s, "a", "alpha")
        s.named_sets.save("worst:x", host(s, "alpha"), "bw:op=write", 1, {"delta": 1.5})
    with Store.open(b) as s:
        s.ensure_host("fp-unused", "unused", "k", "c", 1, {})  # row ids differ from a's
        measured(s, "beta", minutes=5)
        periodic(s, "beta")
        campaign(s, "sweep", "beta")
        dataset(s, "b", "beta")
    return a, b


def everything(path: Path) -> dict:
    """What a store holds, by content: no row ids."""
    with Store.snapshot(path) as s:
        out = {}
        for inv in s.invocations():
            w = {x.id: x.name for x in s.workloads_for(inv.id)}
            out[content_key(inv)] = (
                sorted((w[x.victim], x.condition, x.region, x.pair, x.wall_ns, x.block,
                        tuple(sorted(x.counters.items()))) for x in s.samples_for(inv.id)),
                sorted((r.label, w[r.task], r.deadline_ns, tuple(r.jobs))
                       for r in s.jobs.runs(inv.id)),
                None if (v := s.validations.of_invocation(inv.id)) is None else
                (v.header, [replace(x, victim=w[x.victim]) for x in v.verdicts]),
                s.profiles.of_invocation(inv.id))
        campaigns = {c.name: sorted((r.setup, r.round, r.status, r.reason,
                                     None if r.invocation_id is None else
                                     content_key(s.get_invocation(r.invocation_id)))
                                    for r in s.campaigns.runs(c.id))
                     for c in s.campaigns.all()}
        datasets = {d.name: (d.settings, sorted(
            (p.program, p.spec_hash, json.dumps(p.record), p.recorded_at,
             content_key(s.get_invocation(i.id)))
            for i in s.invocations() if (p := s.learn.program_of(i.id)) is not None
            and p.dataset_id == d.id), sorted(
            (a.program, a.attempt, a.summary, a.recorded_at,
             content_key(s.get_invocation(a.invocation_id)))
            for rows in s.learn.attempts(d.id).values() for a in rows),
            s.learn.closed(d.id)) for d in s.learn.all()}
        return {"invocations": out, "campaigns": campaigns, "datasets": datasets,
                "named": sorted((n.name, n.fingerprint, n.spec) for n in s.named_sets.all())}


def test_every_table_of_the_schema_is_carried(tmp_path):
    """A stage that adds a table must teach store/merge.py to carry it (CARRIED)."""
    with Store.open(tmp_path / "s.db") as s:
        tables = {r[0] for r in sql(s, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == CARRIED


def test_merge_carries_every_row_with_its_references(two, tmp_path):
    a, b = two
    result = merge([a, b], tmp_path / "all.db")
    merged, ea, eb = everything(tmp_path / "all.db"), everything(a), everything(b)
    assert merged["invocations"] == {**ea["invocations"], **eb["invocations"]}
    assert len(merged["invocations"]) == 12 == result.invocations
    # the same campaign name with another campaign behind it is renamed after its store
    assert merged["campaigns"] == {"sweep": ea["campaigns"]["sweep"],
                                   "sweep@b": eb["campaigns"]["sweep"]}
    assert result.stores[1].renamed == {"sweep": "sweep@b"}
    assert merged["datasets"] == {"ds": ea["datasets"]["ds"], "ds@b": eb["datasets"]["ds"]}
    assert result.stores[1].renamed_datasets == {"ds": "ds@b"}
    assert merged["named"] == ea["named"]
    assert [s.samples for s in result.stores] == [20 + 2 + 20 + 8, 20 + 2 + 20 + 8]


def test_merge_keeps_provenance(two, tmp_path):
    a, b = two
    merge([a, b], tmp_path / "all.db")
    with Store.open(b) as s:
        b_ids = {content_key(i): i.id for i in s.invocations()}
    with Store.open(tmp_path / "all.db") as s:
        for inv in s.invocations():
            origin = s.origins.of_invocation(inv.id)
            store = str(b.resolve()) if content_key(inv) in b_ids else str(a.resolve())
            assert origin.store == store
            if store == str(b.resolve()):
                assert origin.origin_id == b_ids[content_key(inv)]
            assert inv.host.hostname in ("alpha", "beta")
        renamed = s.campaigns.find("sweep@b")
        origin = s.origins.of_campaign(renamed.id)
        assert (origin.store, origin.origin_name) == (str(b.resolve()), "sweep")
    # merged again into another store, an invocation still names the store that measured it
    merge([tmp_path / "all.db"], tmp_path / "again.db")
    with Store.open(tmp_path / "again.db") as s:
        stores = {s.origins.of_invocation(i.id).store for i in s.invocations()}
        assert stores == {str(a.resolve()), str(b.resolve())}
        assert s.origins.of_campaign(s.campaigns.find("sweep@b").id).origin_name == "sweep"


def test_merge_is_idempotent(two, tmp_path):
    a, b = two
    out = tmp_path / "all.db"
    merge([a, b], out)
    first = everything(out)
    again = merge([a, b, a], out)  # twice, and a listed twice
    assert all(s.invocations == 0 and s.campaigns == 0 and s.skipped_runs == 0
               for s in again.stores)
    assert [s.already for s in again.stores] == [6, 6]
    assert everything(out) == first
    # the target listed as an input is the target
    merge([out, a], out)
    assert everything(out) == first


def test_overlapping_stores_add_each_invocation_once(two, tmp_path):
    a, _ = two
    grown = tmp_path / "grown.db"
    merge([a], grown)
    with Store.open(grown) as s:
        measured(s, "alpha", minutes=60)  # measured after the copy
    result = merge([a, grown], tmp_path / "all.db")
    assert (result.stores[1].invocations, result.stores[1].already) == (1, 6)
    assert len(everything(tmp_path / "all.db")["invocations"]) == 7
    assert everything(tmp_path / "all.db")["campaigns"] == everything(a)["campaigns"]


def test_a_campaign_resumed_separately_in_two_copies_merges_its_disjoint_slots(tmp_path):
    a = tmp_path / "a.db"
    with Store.open(a) as s:
        campaign(s, "sweep", "alpha", rounds=(1,))
    b = tmp_path / "b.db"
    merge([a], b)  # a copy
    with Store.open(a) as s:  # round 2 resumed in a
        row = s.campaigns.find("sweep")
        inv, w, x = paired_run(host(s, "alpha"))
        s.record(replace(inv, started_at=T0 + timedelta(days=1)), w, x,
                 attachments=[RunAttachment(row.id, "s", "h", 2)])
    merged = merge([a, b], tmp_path / "all.db")
    assert merged.campaigns == 1 and merged.invocations == 2
    # ... but two different runs of one slot are refused
    with Store.open(b) as s:
        row = s.campaigns.find("sweep")
        inv, w, x = paired_run(host(s, "beta"))
        s.record(replace(inv, started_at=T0 + timedelta(days=2)), w, x,
                 attachments=[RunAttachment(row.id, "s", "h", 2)])
    before = digest(tmp_path / "all.db")
    with pytest.raises(InputError, match="round 2 of setup s is recorded by another run"):
        merge([a, b], tmp_path / "all.db")
    assert digest(tmp_path / "all.db") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "all.db", "b.db"]


def _version_1_store(path: Path) -> None:
    """A store as the first release wrote it: schema version 1, no block columns."""
    conn = sqlite3.connect(path)
    for statement in schema.MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO hosts VALUES (1, 'fp-old', 'old', 'k', 'c', 2, '{}', ?)",
                 (T0.isoformat(),))
    conn.execute("INSERT INTO invocations VALUES (1, 1, 'measure', '[]', ?, ?, 'complete', "
                 "'{}', '{}', '0.0.1')", (T0.isoformat(), T0.isoformat()))
    conn.execute("INSERT INTO workloads VALUES (1, 1, 'victim', 'v', 'matmul', '{}', 1, NULL)")
    for i, (cond, agg) in enumerate((("iso", ""), ("int", "bw"))):
        conn.execute("INSERT INTO samples VALUES (?, 1, 1, 0, 0, ?, ?, 0, 'total', ?, ?, 0, 1, "
                     "NULL)", (i + 1, cond, agg, 100 * (i + 1), 90 * (i + 1)))
    conn.commit()
    conn.close()


def test_an_older_store_is_read_as_it_is_and_merged(two, tmp_path):
    a, _ = two
    old = tmp_path / "old.db"
    _version_1_store(old)
    before = digest(old)
    result = merge([old, a], tmp_path / "all.db")
    assert digest(old) == before  # not migrated in place
    assert result.stores[0].schema_version == 1 and result.stores[0].samples == 2
    with Store.open(tmp_path / "all.db") as s:
        inv = next(i for i in s.invocations() if i.host.fingerprint == "fp-old")
        samples = s.samples_for(inv.id)
        assert [(x.condition, x.wall_ns, x.block, x.clock) for x in samples] == \
            [("iso", 100, None, "cpu"), ("int", 200, None, "cpu")]


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text("not a database, just text\n" * 100), "not a usable results store"),
    (lambda p: p.write_bytes(b""), "empty file"),
    (lambda p: None, "no results store here"),
    (lambda p: sqlite3.connect(p).execute(f"PRAGMA user_version = {schema.VERSION + 1}"),
     "newer than this intercore"),
])
def test_bad_input_is_refused_before_anything_is_written(two, tmp_path, make, message):
    a, b = two
    bad = tmp_path / "bad.db"
    make(bad)
    out = tmp_path / "all.db"
    merge([a], out)
    before = digest(out)
    with pytest.raises(InputError, match=message) as raised:
        merge([b, bad], out)
    assert str(bad) in str(raised.value)
    assert digest(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".all.db")]


def test_a_target_that_is_not_a_store_is_refused(two, tmp_path):
    a, _ = two
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n" * 100)
    with pytest.raises(InputError, match="not a usable results store"):
        merge([a], out)
    assert out.read_text() == "my notes\n" * 100


def test_a_target_open_in_another_process_is_refused(two, tmp_path):
    a, b = two
    out = tmp_path / "all.db"
    merge([a], out)
    writer = Store.open(out)  # another process's connection, writing
    try:
        host(writer, "gamma")
        with pytest.raises(InputError, match="open in another process"):
            merge([b], out)
    finally:
        writer.close()
    merge([b], out)  # once it is closed


def test_an_interrupted_merge_leaves_the_target_and_no_temporary_file(two, tmp_path,
                                                                        monkeypatch):
    a, b = two
    out = tmp_path / "all.db"
    merge([a], out)
    before = digest(out)
    calls = []
    real = Store.record

    def record_then_interrupt(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "record", record_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        merge([b], out)
    assert digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "all.db", "b.db"]


def test_a_dataset_program_measured_twice_in_two_copies_is_refused(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with Store.open(a) as s:
        s.learn.create("ds", {"seed": 1}, [{"name": "p1"}])
    merge([a], b)  # a copy, then p1 measured in each
    for path, name in ((a, "alpha"), (b, "beta")):
        with Store.open(path) as s:
            inv, w, x = paired_run(host(s, name), n=2)
            s.record(inv, w, x, attachments=[
                ProgramAttachment(s.learn.find("ds").id, "p1", "h", {"x": name})])
    with pytest.raises(InputError, match="program p1 is recorded by another run"):
        merge([a, b], tmp_path / "all.db")
    assert not (tmp_path / "all.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db"]


def test_a_dataset_attempt_made_twice_in_two_copies_is_refused(tmp_path):
    """p1 traced once, then its attempt 2 made in each copy of the store: two different
    pools of pairs, and merge will not pick one."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with Store.open(a) as s:
        ds = s.learn.create("ds", {"seed": 1}, [{"name": "p1"}]).id
        inv, w, x = paired_run(host(s, "alpha"), n=2)
        s.record(inv, w, x, attachments=[ProgramAttachment(ds, "p1", "h", {}),
                                         AttemptAttachment(ds, "p1", 1, {})])
    merge([a], b)
    for path, name in ((a, "alpha"), (b, "beta")):
        with Store.open(path) as s:
            inv, w, x = paired_run(host(s, name), n=2)
            s.record(replace(inv, summary={"attempt": 2}), w, x, attachments=[
                AttemptAttachment(s.learn.find("ds").id, "p1", 2, {"x": name})])
    with pytest.raises(InputError, match="attempt 2 at program p1 is recorded by another"):
        merge([a, b], tmp_path / "all.db")
    assert not (tmp_path / "all.db").exists()
