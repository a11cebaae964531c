import dataclasses
import sqlite3

import pytest

from intercore.base.errors import InputError
from intercore.base import sample
from intercore.store import Store
from intercore.store import schema

from _store_fixtures import sql


def _tables(path):
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_open_creates_schema_in_a_new_file_and_no_directory(tmp_path):
    with pytest.raises(sqlite3.OperationalError):
        Store.open(tmp_path / "a" / "intercore.db")
    assert not (tmp_path / "a").exists()
    path = tmp_path / "intercore.db"
    Store.open(path).close()
    assert {"hosts", "invocations", "workloads", "samples", "counters"} <= _tables(path)
    with sqlite3.connect(path) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        assert version == schema.VERSION == len(schema.MIGRATIONS)
        indexes = {r[0] for r in conn.execute(
            "SELECT tbl_name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    assert {"invocations", "workloads", "samples"} <= indexes


def test_samples_table_holds_the_sample_record_field_for_field(store):
    """A field added to base/sample.py needs its column in a migration, and back."""
    columns = [r[1] for r in sql(store, "PRAGMA table_info(samples)")]
    assert sorted(columns) == sorted(["id", "invocation_id", "victim_id", *sample.COLUMNS])
    assert {"victim", "counters", *sample.COLUMNS} == {
        f.name for f in dataclasses.fields(sample.Sample)}


def test_store_is_in_wal_mode_with_foreign_keys(store):
    assert sql(store, "PRAGMA journal_mode").fetchone()[0] == "wal"
    assert sql(store, "PRAGMA foreign_keys").fetchone()[0] == 1
    assert sql(store, "PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with pytest.raises(sqlite3.IntegrityError):
        sql(store, "INSERT INTO workloads (invocation_id, role, name, kind, params_json) "
                    "VALUES (999, 'victim', 'x', 'x', '{}')")


def test_reopening_keeps_data(tmp_path):
    path = tmp_path / "intercore.db"
    with Store.open(path) as s:
        host = s.ensure_host("fp", "h", "k", "c", 2, {})
    with Store.open(path) as s:
        assert s.ensure_host("fp", "other", "k", "c", 2, {}) == host


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "intercore.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    with pytest.raises(InputError, match="newer than this intercore"):
        Store.open(path)


def test_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "intercore.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match=str(path)):
        Store.open(path)
