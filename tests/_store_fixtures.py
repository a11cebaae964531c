from datetime import datetime, timedelta, timezone

import pytest

from intercore.base.sample import Sample
from intercore.store import InvocationRecord, Store, WorkloadRecord

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def sql(store: Store, statement: str, args=()):
    """Run SQL on the store's own connection: what the tests check beneath the Store API
    (row counts, per-connection pragmas, constraints)."""
    return store._conn.execute(statement, args)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "results.db") as s:
        yield s


@pytest.fixture
def host_id(store):
    return store.ensure_host("fp-1", "board", "6.18.0", "Test CPU", 2, {"l3": 1 << 20})


def paired_run(host_id, *, victims=("matmul",), sets=("BwWrite(LLC)",), n=5, slowdown=1.5,
               regions=((0, "total"),), counters=None, command="measure"):
    """An invocation whose pair p has one iso sample and one int sample per aggressor set,
    for every victim and region: iso wall = 1000 + 10p ns, int = iso * slowdown."""
    workloads = [WorkloadRecord("victim", v, v, {"reps": n}, cpu=1) for v in victims]
    workloads.append(WorkloadRecord("aggressor", "bw", "bw", {"op": "write"}, cpu=0,
                                    stats={"mbps": 1000.0}))
    samples = []
    for vi in range(len(victims)):
        for p in range(n):
            for region, name in regions:
                iso = 1000 + 10 * p
                samples.append(Sample(vi, p, p, "iso", "", region, name, iso, iso - 5, 0,
                                            1, counters=counters or {}))
                for k, agg in enumerate(sets):
                    wall = int(iso * slowdown)
                    samples.append(Sample(vi, p, p, "int", agg, region, name, wall,
                                                wall - 5, k + p % 2, 1, regime="steady"))
    inv = InvocationRecord(host_id=host_id, command=command, argv=("measure", "--reps", str(n)),
                           started_at=T0, finished_at=T0 + timedelta(seconds=3),
                           tool_version="0.1.0", params={"reps": n}, summary={"ok": True})
    return inv, workloads, samples


@pytest.fixture
def make_run():
    return paired_run
