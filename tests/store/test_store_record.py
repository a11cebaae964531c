import sqlite3
from dataclasses import replace

import pytest

from intercore.base.sample import Sample
from intercore.store import Store, WorkloadRecord

from _store_fixtures import sql


def test_record_round_trip(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id, regions=((0, "total"), (1, "kernel")),
                                       counters={"cycles": 123.0})
    inv_id = store.record(inv, workloads, samples)

    got = store.get_invocation(inv_id)
    assert (got.command, got.argv, got.status) == ("measure", inv.argv, "complete")
    assert (got.started_at, got.finished_at) == (inv.started_at, inv.finished_at)
    assert got.params == {"reps": 5} and got.summary == {"ok": True}
    assert got.host.fingerprint == "fp-1" and got.host.info == {"l3": 1 << 20}
    assert got.tool_version == "0.1.0"

    stored_w = store.workloads_for(inv_id)
    assert [(w.role, w.name, w.cpu, w.stats) for w in stored_w] == [
        ("victim", "matmul", 1, None), ("aggressor", "bw", 0, {"mbps": 1000.0})]

    stored = store.samples_for(inv_id)
    assert len(stored) == len(samples) == 20
    for rec, row in zip(samples, stored):
        assert row.victim == stored_w[rec.victim].id
        assert (row.rep, row.pair, row.condition, row.aggressor_set, row.region,
                row.region_name, row.wall_ns, row.cpu_ns, row.nivcsw, row.cpu, row.regime,
                dict(row.counters)) == (
            rec.rep, rec.pair, rec.condition, rec.aggressor_set, rec.region, rec.region_name,
            rec.wall_ns, rec.cpu_ns, rec.nivcsw, rec.cpu, rec.regime, dict(rec.counters))


def test_sample_ids_continue_across_records(store, host_id, make_run):
    first = store.record(*make_run(host_id, n=3))
    second = store.record(*make_run(host_id, n=3))
    def rows(*invocations):
        header, values = store.export_table(invocations)
        return [dict(zip(header, row)) for row in values]

    ids = [r["sample_id"] for r in rows(first, second)]
    assert ids == sorted(set(ids))
    assert {r["invocation_id"] for r in rows(second)} == {second}


def test_ensure_host_is_idempotent(store, host_id):
    assert store.ensure_host("fp-1", "board", "6.18.0", "Test CPU", 2, {}) == host_id
    assert store.ensure_host("fp-2", "board2", "6.1", "Other", 4, {}) != host_id


def test_sample_must_name_a_victim(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id)
    aggressor_index = len(workloads) - 1
    for bad in (aggressor_index, len(workloads), -1):
        with pytest.raises(ValueError, match="not a victim"):
            store.record(inv, workloads, [replace(samples[0], victim=bad)])
    assert store.list_invocations() == []


def test_records_validate_their_fields():
    with pytest.raises(ValueError, match="condition"):
        Sample(0, 0, 0, "busy", "x", 0, "total", 1, 1, 0, 0)
    with pytest.raises(ValueError, match="aggressor_set"):
        Sample(0, 0, 0, "iso", "BwWrite", 0, "total", 1, 1, 0, 0)
    with pytest.raises(ValueError, match="aggressor_set"):
        Sample(0, 0, 0, "int", "", 0, "total", 1, 1, 0, 0)
    with pytest.raises(ValueError, match="role"):
        WorkloadRecord("bystander", "x", "x")


def test_naive_timestamps_rejected(host_id, make_run):
    inv, _, _ = make_run(host_id)
    with pytest.raises(ValueError, match="timezone"):
        replace(inv, started_at=inv.started_at.replace(tzinfo=None))


def test_listing(store, host_id, make_run):
    a = store.record(*make_run(host_id, victims=("matmul", "qsort"), n=4))
    b = store.record(*make_run(host_id, sets=("BwWrite(LLC)", "PLL(DRAM)"), n=6,
                               command="demo"))
    listing = store.list_invocations()
    assert [x.invocation.id for x in listing] == [b, a]
    assert listing[0].victims == ("matmul",)
    assert listing[0].aggressor_sets == ("BwWrite(LLC)", "PLL(DRAM)")
    assert listing[0].n == 6
    assert listing[1].victims == ("matmul", "qsort") and listing[1].n == 4
    assert [x.invocation.id for x in store.list_invocations(limit=1)] == [b]
    assert [x.invocation.id for x in store.list_invocations(command="measure")] == [a]


def test_listing_n_counts_only_complete_pairs(store, host_id, make_run):
    inv, workloads, samples = make_run(host_id, n=5)
    without_iso_0 = [s for s in samples if not (s.pair == 0 and s.condition == "iso")]
    inv_id = store.record(inv, workloads, without_iso_0)
    assert store.list_invocations()[0].n == 4
    assert store.get_invocation(inv_id + 1) is None


def test_exception_inside_record_rolls_back(store, host_id, make_run):
    kept = store.record(*make_run(host_id, n=2))

    def explode(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.record(*make_run(host_id, n=2000), progress=explode)
    assert [x.invocation.id for x in store.list_invocations()] == [kept]
    assert sql(store, "SELECT COUNT(*) FROM samples").fetchone()[0] == 4
    assert sql(store, "SELECT COUNT(*) FROM workloads").fetchone()[0] == 2
    # the connection is usable again afterwards
    store.record(*make_run(host_id, n=2))


def test_reader_sees_only_committed_invocations_during_a_write(tmp_path, make_run):
    path = tmp_path / "intercore.db"
    seen = []
    with Store.open(path) as writer:
        host = writer.ensure_host("fp", "h", "k", "c", 2, {})
        kept = writer.record(*make_run(host, n=2))

        def read_midway(done, total):
            if not seen:
                with Store.open(path) as reader:
                    seen.append([x.invocation.id for x in reader.list_invocations()])

        new = writer.record(*make_run(host, n=2000), progress=read_midway)
    assert seen == [[kept]]
    with Store.open(path) as reader:
        assert [x.invocation.id for x in reader.list_invocations()] == [new, kept]


def test_writer_commits_while_a_reader_holds_a_snapshot(tmp_path, make_run):
    # Without WAL the writer's commit would wait for the reader and fail with "locked".
    path = tmp_path / "intercore.db"
    with Store.open(path, busy_timeout_ms=200) as writer:
        host = writer.ensure_host("fp", "h", "k", "c", 2, {})
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT COUNT(*) FROM invocations").fetchone()[0] == 0
            writer.record(*make_run(host, n=50))
            assert reader.execute("SELECT COUNT(*) FROM invocations").fetchone()[0] == 0
            reader.execute("COMMIT")
            assert reader.execute("SELECT COUNT(*) FROM invocations").fetchone()[0] == 1
        finally:
            reader.close()
