"""Schema of the results store, versioned with PRAGMA user_version.

MIGRATIONS[i] takes a store from version i to i + 1. A new version appends a migration and
never edits an old one, so a store written by any earlier release can be brought forward.
"""

from __future__ import annotations

import sqlite3

from ..errors import InputError

_V1 = (
    """CREATE TABLE hosts (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,
        hostname TEXT NOT NULL,
        kernel TEXT NOT NULL,
        cpu_model TEXT NOT NULL,
        ncpus INTEGER NOT NULL,
        info_json TEXT NOT NULL,
        first_seen TEXT NOT NULL
    )""",
    """CREATE TABLE invocations (
        id INTEGER PRIMARY KEY,
        host_id INTEGER NOT NULL REFERENCES hosts(id),
        command TEXT NOT NULL,
        argv_json TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('complete', 'interrupted')),
        params_json TEXT NOT NULL,
        summary_json TEXT NOT NULL,
        tool_version TEXT NOT NULL
    )""",
    """CREATE TABLE workloads (
        id INTEGER PRIMARY KEY,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('victim', 'aggressor', 'canary')),
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        params_json TEXT NOT NULL,
        cpu INTEGER,
        stats_json TEXT
    )""",
    """CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        victim_id INTEGER NOT NULL REFERENCES workloads(id) ON DELETE CASCADE,
        rep INTEGER NOT NULL,
        pair INTEGER NOT NULL,
        condition TEXT NOT NULL CHECK (condition IN ('iso', 'int')),
        aggressor_set TEXT NOT NULL,
        region INTEGER NOT NULL,
        region_name TEXT NOT NULL,
        wall_ns INTEGER NOT NULL,
        cpu_ns INTEGER NOT NULL,
        nivcsw INTEGER NOT NULL,
        cpu INTEGER NOT NULL,
        regime TEXT
    )""",
    """CREATE TABLE counters (
        sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (sample_id, name)
    )""",
    "CREATE INDEX invocations_host ON invocations(host_id)",
    "CREATE INDEX workloads_invocation ON workloads(invocation_id)",
    # Also the lookup that joins an int sample to the iso sample of its pair.
    "CREATE INDEX samples_pair ON samples(invocation_id, victim_id, region, pair)",
    "CREATE INDEX samples_victim ON samples(victim_id)",
)

# Each stage that stores more than samples owns one migration, in this order:
_JOBS: tuple[str, ...] = ()          # periodic jobs (mitigate / experiment protection)
_VALIDATION: tuple[str, ...] = ()    # platform-model validation verdicts (model validate)
_CAMPAIGNS: tuple[str, ...] = ()     # campaign setups and runs (campaign run / resume)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _JOBS, _VALIDATION, _CAMPAIGNS)
VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, source: str) -> None:
    """Bring the store at `conn` (opened in autocommit mode) to VERSION.

    Each step runs in its own write transaction together with its user_version bump, so an
    interrupted upgrade leaves the store at a whole version.
    """
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > VERSION:
        raise InputError(f"results store has schema version {current}, newer than this "
                         f"intercore understands ({VERSION}); upgrade intercore", source=source)
    for version in range(current, VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated between our read and our lock.
            if conn.execute("PRAGMA user_version").fetchone()[0] != version:
                conn.execute("ROLLBACK")
                continue
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
