"""A process killed in the middle of Store.record() must leave no trace of that invocation."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import intercore
from intercore.store import Store

SRC = str(Path(intercore.__file__).resolve().parents[1])

# The child writes 20 000 samples and, once half of them are inserted inside the open
# transaction, says so and waits to be killed.
CHILD = textwrap.dedent("""
    import sys, time
    from datetime import datetime, timezone
    from intercore.base.sample import Sample
    from intercore.store import InvocationRecord, Store, WorkloadRecord

    store = Store.open(sys.argv[1])
    host = store.ensure_host("fp", "h", "k", "c", 2, {})
    now = datetime.now(timezone.utc)
    inv = InvocationRecord(host, "measure", ("measure",), now, now, "0.1.0")
    samples = [Sample(0, p, p, c, "" if c == "iso" else "BwWrite", 0, "total",
                            1000, 990, 0, 1, counters={"cycles": 1.0})
               for p in range(10_000) for c in ("iso", "int")]

    def halfway(done, total):
        if done >= total // 2:
            print("halfway", done, flush=True)
            time.sleep(120)

    store.record(inv, [WorkloadRecord("victim", "matmul", "matmul")], samples, progress=halfway)
    print("committed", flush=True)
""")


def _count(path, table):
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_sigkill_mid_record_leaves_nothing_of_that_invocation(tmp_path, make_run):
    path = tmp_path / "intercore.db"
    with Store.open(path) as store:
        host = store.ensure_host("fp", "h", "k", "c", 2, {})
        kept = store.record(*make_run(host, n=3))

    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("halfway"), line
        # the child's uncommitted rows really exist at this point, inside its transaction
        assert int(line.split()[1]) >= 10_000
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert _count(path, "invocations") == 1
    assert _count(path, "samples") == 6
    assert _count(path, "counters") == 0
    assert _count(path, "workloads") == 2
    with Store.open(path) as store:
        assert [x.invocation.id for x in store.list_invocations()] == [kept]
        assert len(store.samples_for(kept)) == 6
        # and the store still takes new invocations
        store.record(*make_run(host, n=1))
