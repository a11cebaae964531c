import csv
import io

import sys

import pytest

from intercore.base.errors import HostUnsupported, InputError
from intercore.store import export
from intercore.store.export import COLUMNS


def _read(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_export_one_row_per_sample_with_context(store, host_id, make_run, tmp_path):
    a = store.record(*make_run(host_id, n=2, counters={"cycles": 7.0}))
    b = store.record(*make_run(host_id, n=3, victims=("qsort",)))
    out = tmp_path / "all.csv"
    assert export.write_csv(store.export_table(), out) == 4 + 6
    rows = _read(out.read_text())
    assert list(rows[0]) == [*COLUMNS, "counter.cycles"]
    assert [int(r["invocation_id"]) for r in rows] == [a] * 4 + [b] * 6

    first = rows[0]
    assert first["command"] == "measure" and first["hostname"] == "board"
    assert first["host_fingerprint"] == "fp-1" and first["cpu_model"] == "Test CPU"
    assert first["victim_name"] == "matmul" and first["victim_cpu"] == "1"
    assert (first["condition"], first["aggressor_set"], first["wall_ns"]) == ("iso", "", "1000")
    assert first["counter.cycles"] == "7.0"
    second = rows[1]
    assert (second["condition"], second["aggressor_set"], second["wall_ns"]) == (
        "int", "BwWrite(LLC)", "1500")
    assert second["regime"] == "steady" and second["counter.cycles"] == ""
    assert rows[-1]["victim_name"] == "qsort"


def test_csv_export_selected_invocations_to_a_stream(store, host_id, make_run):
    store.record(*make_run(host_id, n=2))
    b = store.record(*make_run(host_id, n=3))
    stream = io.StringIO()
    assert export.write_csv(store.export_table([b]), stream) == 6
    rows = _read(stream.getvalue())
    assert {r["invocation_id"] for r in rows} == {str(b)}
    assert "counter.cycles" not in rows[0]


def test_export_of_unknown_invocation_names_it(store, host_id, make_run):
    a = store.record(*make_run(host_id, n=1))
    with pytest.raises(InputError, match=f"no invocation with id {a + 1}, {a + 7}"):
        export.write_csv(store.export_table([a, a + 1, a + 7]), io.StringIO())


def test_parquet_without_pyarrow_says_what_to_install(store, host_id, make_run, tmp_path,
                                                      monkeypatch):
    # None in sys.modules makes `import pyarrow` fail exactly as on a host without it.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    store.record(*make_run(host_id, n=1))
    with pytest.raises(HostUnsupported, match="pip install pyarrow .*'parquet' extra"):
        export.write_parquet(store.export_table(), tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_parquet_round_trip(store, host_id, make_run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    store.record(*make_run(host_id, n=2, counters={"cycles": 7.0}))
    out = tmp_path / "x.parquet"
    assert export.write_parquet(store.export_table(), out) == 4
    table = pq.read_table(out)
    assert table.column_names == [*COLUMNS, "counter.cycles"]
    assert table.column("wall_ns").to_pylist() == [1000, 1500, 1010, 1515]
    assert table.column("counter.cycles").to_pylist() == [7.0, None, 7.0, None]
