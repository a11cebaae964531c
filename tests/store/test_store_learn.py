"""The learning-dataset rows: a program recorded once, each attempt at it once, closing once;
and a store written before attempts existed brought forward."""

import sqlite3

import pytest

from intercore.store import Store
from intercore.store import schema
from intercore.store.learn import AttemptAttachment, ProgramAttachment, ProgramTaken

from _store_fixtures import sql


def _dataset(store):
    return store.learn.create("d", {"generator": {}}, [{"name": "p"}, {"name": "q"}]).id


def test_attempts_are_recorded_once_each_and_closing_once(store, host_id, make_run):
    ds = _dataset(store)
    store.record(*make_run(host_id), attachments=[
        ProgramAttachment(ds, "p", "h", {"spec": {"name": "p"}})])
    assert store.learn.attempts(ds) == {} and store.learn.closed(ds) == {}
    first = store.record(*make_run(host_id), attachments=[
        AttemptAttachment(ds, "p", 1, {"pairs": {"shared": 3}})])
    second = store.record(*make_run(host_id), attachments=[
        AttemptAttachment(ds, "p", 2, {"pairs": {"shared": 5}},
                          {"reason": "target", "attempts": 2})])
    rows = store.learn.attempts(ds)["p"]
    assert [(a.attempt, a.invocation_id, a.summary) for a in rows] == [
        (1, first, {"pairs": {"shared": 3}}), (2, second, {"pairs": {"shared": 5}})]
    assert store.learn.closed(ds) == {"p": {"reason": "target", "attempts": 2}}
    assert store.learn.done(ds) == {"p": "h"}

    before = sql(store, "SELECT COUNT(*) FROM invocations").fetchone()[0]
    with pytest.raises(ProgramTaken):  # the same attempt again: nothing of it is kept
        store.record(*make_run(host_id), attachments=[
            AttemptAttachment(ds, "p", 2, {}, None)])
    with pytest.raises(ProgramTaken):  # a closed program is not closed a second time
        store.record(*make_run(host_id), attachments=[
            AttemptAttachment(ds, "p", 3, {}, {"reason": "bound"})])
    assert sql(store, "SELECT COUNT(*) FROM invocations").fetchone()[0] == before
    assert len(store.learn.attempts(ds)["p"]) == 2
    assert not store.learn.close(ds, "p", {"reason": "again"})
    assert store.learn.closed(ds)["p"]["reason"] == "target"


def test_a_program_is_recorded_once(store, host_id, make_run):
    ds = _dataset(store)
    store.record(*make_run(host_id), attachments=[ProgramAttachment(ds, "q", "h", {})])
    with pytest.raises(ProgramTaken):
        store.record(*make_run(host_id), attachments=[ProgramAttachment(ds, "q", "h", {})])
    assert store.learn.close(ds, "q", {"reason": "rebuilt"})
    assert store.learn.closed(ds) == {"q": {"reason": "rebuilt"}}


def test_programs_recorded_before_attempts_become_attempt_one(tmp_path):
    path = tmp_path / "old.db"
    learn = schema.MIGRATIONS.index(schema._LEARN)
    with sqlite3.connect(path, isolation_level=None) as conn:
        for migration in schema.MIGRATIONS[:learn + 1]:
            for statement in migration:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {learn + 1}")
        conn.execute("INSERT INTO hosts VALUES (1, 'fp', 'h', 'k', 'c', 2, '{}', 't')")
        conn.execute("INSERT INTO invocations VALUES (7, 1, 'learn dataset', '[]', 't', 't', "
                     "'complete', '{}', '{}', '0')")
        conn.execute("INSERT INTO learn_datasets VALUES (1, 'old', '{}', '[]', 't')")
        conn.execute("INSERT INTO learn_programs VALUES (1, 1, 'p', 'h', 7, '{}', 't0')")
    with Store.open(path) as store:
        rows = store.learn.attempts(1)
        assert [(a.program, a.attempt, a.invocation_id, a.summary, a.recorded_at)
                for a in rows["p"]] == [("p", 1, 7, {}, "t0")]
        assert store.learn.closed(1) == {}
