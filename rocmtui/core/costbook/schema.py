"""The job store's `build_costs` table (schema 4): one row per finished build, kept for
`history_retention_days` whatever BuildKit's own history has since forgotten; from schema 5
its `settled` flag (0 while the build's late evidence, its sccache.json, may still come) and
the `build_steps` table beside it.

Its own module so `jobs.store` can make the table without importing what fills it
(`costbook.book`, which imports the store).
"""

from __future__ import annotations

import sqlite3

COSTS_TABLE = """
    job_id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    arch TEXT NOT NULL,
    node TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    duration REAL NOT NULL,
    outcome TEXT NOT NULL,
    origin TEXT NOT NULL,
    started_by TEXT NOT NULL,
    steps_total INTEGER,
    steps_cached INTEGER,
    steps_from TEXT,
    sccache_hits INTEGER,
    sccache_misses INTEGER,
    settled INTEGER NOT NULL DEFAULT 1
"""

#: Schema 5: a build's steps (BuildKit vertices), one row per build: a msgpack blob of
#: `history.stepgraph.Step`s, so a 10,000-step build is one read.
STEPS_TABLE = """
    job_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    count INTEGER NOT NULL,
    steps BLOB NOT NULL
"""

COSTS_INDEXES = (
    "CREATE INDEX IF NOT EXISTS build_costs_started ON build_costs(started_at)",
    "CREATE INDEX IF NOT EXISTS build_costs_group ON build_costs(target, arch, node, started_at)",
)


def add_missing_cost_columns(conn: sqlite3.Connection) -> None:
    """Bring a `build_costs` made by schema 4 up to `COSTS_TABLE` (`settled`: 1, as every row
    of schema 4 was written settled)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(build_costs)")}
    if "settled" not in have:
        conn.execute("ALTER TABLE build_costs ADD COLUMN settled INTEGER NOT NULL DEFAULT 1")
