"""Schema of the results store, versioned with PRAGMA user_version.

MIGRATIONS[i] takes a store from version i to i + 1. A new version appends a migration and
never edits an old one, so a store written by any earlier release can be brought forward.
"""

from __future__ import annotations

import sqlite3

from ..base.errors import InputError

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
_JOBS: tuple[str, ...] = (            # periodic jobs (matrix, experiment protection)
    # One row per job of a periodic task. `label` says which run of the invocation the job
    # belongs to ("same-core/protected", "alone", "with noise" ...); times are CLOCK_MONOTONIC
    # ns as the job runner saw them, so releases of tasks in one run share an origin.
    """CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        task_id INTEGER NOT NULL REFERENCES workloads(id) ON DELETE CASCADE,
        label TEXT NOT NULL,
        job INTEGER NOT NULL,
        release_ns INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,
        end_ns INTEGER NOT NULL,
        response_ns INTEGER NOT NULL,
        cpu_ns INTEGER NOT NULL,
        deadline_ns INTEGER NOT NULL,
        missed INTEGER NOT NULL CHECK (missed IN (0, 1)),
        skipped INTEGER NOT NULL
    )""",
    "CREATE INDEX jobs_run ON jobs(invocation_id, label, task_id)",
)
# platform-model validation (model validate): one header per validating invocation, with the
# model text it checked, and one verdict per exercised pair; a verdict names its victim
# workload, so its raw samples are (invocation, victim_id, aggressor_set) in `samples`.
_VALIDATION: tuple[str, ...] = (
    """CREATE TABLE model_validations (
        invocation_id INTEGER PRIMARY KEY REFERENCES invocations(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        model_hash TEXT NOT NULL,
        source TEXT NOT NULL,
        model_text TEXT NOT NULL,
        runs INTEGER NOT NULL,
        threshold REAL NOT NULL,
        regime TEXT NOT NULL,
        canary_json TEXT NOT NULL
    )""",
    "CREATE INDEX model_validations_hash ON model_validations(model_hash)",
    """CREATE TABLE model_verdicts (
        id INTEGER PRIMARY KEY,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        victim_id INTEGER NOT NULL REFERENCES workloads(id) ON DELETE CASCADE,
        expected TEXT NOT NULL CHECK (expected IN ('interference', 'free')),
        channel TEXT,
        victim_tx TEXT NOT NULL,
        aggressor_tx TEXT NOT NULL,
        aggressor_set TEXT NOT NULL,
        region_name TEXT NOT NULL,
        verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'not observed', 'contradicted')),
        n INTEGER NOT NULL,
        delta REAL NOT NULL,
        ci_low REAL,
        ci_high REAL,
        paired_max REAL NOT NULL,
        regime TEXT NOT NULL,
        services_json TEXT NOT NULL
    )""",
    "CREATE INDEX model_verdicts_invocation ON model_verdicts(invocation_id)",
)
# campaign setups and runs (campaign run / resume). A runs row is written only for a finished
# slot (setup x round), in the same transaction as its invocation, so UNIQUE(campaign, setup,
# round) makes "each run exactly once" a property of the store, not of the runner.
_CAMPAIGNS: tuple[str, ...] = (
    """CREATE TABLE campaigns (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        source_text TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        plan_hash TEXT NOT NULL,
        schedule_json TEXT NOT NULL,
        options_json TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE campaign_runs (
        id INTEGER PRIMARY KEY,
        campaign_id INTEGER NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
        setup TEXT NOT NULL,
        setup_hash TEXT NOT NULL,
        round INTEGER NOT NULL CHECK (round >= 1),
        status TEXT NOT NULL CHECK (status IN ('done', 'skipped')),
        invocation_id INTEGER REFERENCES invocations(id) ON DELETE CASCADE,
        reason TEXT,
        recorded_at TEXT NOT NULL,
        UNIQUE (campaign_id, setup, round),
        CHECK ((status = 'done') = (invocation_id IS NOT NULL)),
        CHECK ((status = 'skipped') = (reason IS NOT NULL))
    )""",
    "CREATE INDEX campaign_runs_invocation ON campaign_runs(invocation_id)",
)

# bandwidth profiles (profile): the profiler's raw samples as it took them (ticks and counts
# per source, little-endian u64 arrays) with the clock pairs that turn ticks into time, and
# the command's region tags; everything shown is recomputed from these.
_PROFILES: tuple[str, ...] = (
    """CREATE TABLE bw_profiles (
        invocation_id INTEGER PRIMARY KEY REFERENCES invocations(id) ON DELETE CASCADE,
        interval_ns INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        missed INTEGER NOT NULL,
        self_test INTEGER NOT NULL CHECK (self_test IN (0, 1)),
        sources_json TEXT NOT NULL,
        ready_json TEXT NOT NULL,
        end_json TEXT NOT NULL,
        ticks BLOB NOT NULL,
        readings BLOB NOT NULL,
        tags BLOB NOT NULL
    )""",
)

# measurement evidence (measure, issue 9): where each sample stands in the interleaved schedule
# (its block and the block's start, ns since the run started), the clock its markers read and
# whether a wall-clock repetition was descheduled; and the aggressor sets a search saved under
# a name (`-a @worst:VICTIM`), per host, since the worst aggressor is a property of the host.
_EVIDENCE: tuple[str, ...] = (
    "ALTER TABLE samples ADD COLUMN block INTEGER",
    "ALTER TABLE samples ADD COLUMN block_start_ns INTEGER",
    "ALTER TABLE samples ADD COLUMN clock TEXT NOT NULL DEFAULT 'cpu' "
    "CHECK (clock IN ('cpu', 'wall'))",
    "ALTER TABLE samples ADD COLUMN descheduled INTEGER NOT NULL DEFAULT 0 "
    "CHECK (descheduled IN (0, 1))",
    """CREATE TABLE named_sets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        host_id INTEGER NOT NULL REFERENCES hosts(id),
        spec TEXT NOT NULL,
        invocation_id INTEGER REFERENCES invocations(id) ON DELETE SET NULL,
        evidence_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (name, host_id)
    )""",
)

# learning datasets (learn dataset): the drawn programs and their order, and one row per
# finished program, written in the transaction of the invocation that measured it, with its
# traced features; UNIQUE(dataset, program) makes a resumed generation record each program once.
_LEARN: tuple[str, ...] = (
    """CREATE TABLE learn_datasets (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        settings_json TEXT NOT NULL,
        programs_json TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE learn_programs (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES learn_datasets(id) ON DELETE CASCADE,
        program TEXT NOT NULL,
        spec_hash TEXT NOT NULL,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        record_json TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        UNIQUE (dataset_id, program)
    )""",
    "CREATE INDEX learn_programs_invocation ON learn_programs(invocation_id)",
)

# merged stores (results merge, issue 14): where an invocation or a campaign that a merge
# brought in was first recorded (the store file and its id there). A row written here needs no
# origin row: it came from this store. See store/provenance.py.
_MERGE: tuple[str, ...] = (
    """CREATE TABLE invocation_origins (
        invocation_id INTEGER PRIMARY KEY REFERENCES invocations(id) ON DELETE CASCADE,
        store TEXT NOT NULL,
        origin_id INTEGER NOT NULL,
        merged_at TEXT NOT NULL
    )""",
    """CREATE TABLE campaign_origins (
        campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id) ON DELETE CASCADE,
        store TEXT NOT NULL,
        origin_id INTEGER NOT NULL,
        origin_name TEXT NOT NULL,
        merged_at TEXT NOT NULL
    )""",
)

# measurement evidence, continued (issue 9): a model verdict may be `unobservable` (a pair
# through the shared cache that never ran while the CPUs shared it). SQLite cannot alter a
# CHECK constraint, so the verdict table is rebuilt with its rows.
_VERDICTS_COLUMNS = ("id, invocation_id, victim_id, expected, channel, victim_tx, aggressor_tx, "
                     "aggressor_set, region_name, verdict, n, delta, ci_low, ci_high, "
                     "paired_max, regime, services_json")
_EVIDENCE_2: tuple[str, ...] = (
    """CREATE TABLE model_verdicts_v2 (
        id INTEGER PRIMARY KEY,
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        victim_id INTEGER NOT NULL REFERENCES workloads(id) ON DELETE CASCADE,
        expected TEXT NOT NULL CHECK (expected IN ('interference', 'free')),
        channel TEXT,
        victim_tx TEXT NOT NULL,
        aggressor_tx TEXT NOT NULL,
        aggressor_set TEXT NOT NULL,
        region_name TEXT NOT NULL,
        verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'not observed', 'contradicted',
                                                 'unobservable')),
        n INTEGER NOT NULL,
        delta REAL NOT NULL,
        ci_low REAL,
        ci_high REAL,
        paired_max REAL NOT NULL,
        regime TEXT NOT NULL,
        services_json TEXT NOT NULL
    )""",
    f"INSERT INTO model_verdicts_v2 ({_VERDICTS_COLUMNS}) SELECT {_VERDICTS_COLUMNS} "
    "FROM model_verdicts",
    "DROP TABLE model_verdicts",
    "ALTER TABLE model_verdicts_v2 RENAME TO model_verdicts",
    "CREATE INDEX model_verdicts_invocation ON model_verdicts(invocation_id)",
)

# learning datasets measured in attempts: a program's shared-regime pairs are pooled over
# every attempt at it (a row each, with the invocation holding its samples), until its regions
# have enough of them or the bound is reached; `closed_json` says which and when. A program
# recorded before attempts existed was measured once: that invocation is its attempt 1.
_LEARN_ATTEMPTS: tuple[str, ...] = (
    """CREATE TABLE learn_attempts (
        id INTEGER PRIMARY KEY,
        dataset_id INTEGER NOT NULL REFERENCES learn_datasets(id) ON DELETE CASCADE,
        program TEXT NOT NULL,
        attempt INTEGER NOT NULL CHECK (attempt >= 1),
        invocation_id INTEGER NOT NULL REFERENCES invocations(id) ON DELETE CASCADE,
        summary_json TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        UNIQUE (dataset_id, program, attempt)
    )""",
    "CREATE INDEX learn_attempts_invocation ON learn_attempts(invocation_id)",
    """INSERT INTO learn_attempts (dataset_id, program, attempt, invocation_id, summary_json,
                                  recorded_at)
       SELECT dataset_id, program, 1, invocation_id, '{}', recorded_at FROM learn_programs""",
    "ALTER TABLE learn_programs ADD COLUMN closed_json TEXT",
)

# the core state (issue 24): whether the victim's CPU shared a physical core with the
# aggressor CPU around the sample's block ('same-core', 'separate-cores', 'unknown'), as the
# core probe saw it; NULL where none ran (every sample recorded before it existed).
_CORE: tuple[str, ...] = (
    "ALTER TABLE samples ADD COLUMN core TEXT "
    "CHECK (core IN ('same-core', 'separate-cores', 'unknown'))",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _JOBS, _VALIDATION, _CAMPAIGNS, _PROFILES,
                                          _EVIDENCE, _LEARN, _MERGE, _EVIDENCE_2,
                                          _LEARN_ATTEMPTS, _CORE)
VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, source: str) -> int:
    """Bring the store at `conn` (opened in autocommit mode) to VERSION; returns the version
    it had.

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
    return current
