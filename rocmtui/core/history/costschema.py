"""The job store's `build_costs` table (schema 4): one row per finished build, kept for
`history_retention_days` whatever BuildKit's own history has since forgotten.

Its own module so `jobs.store` can make the table without importing what fills it
(`history.costbook`, which imports the store).
"""

from __future__ import annotations

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
    sccache_misses INTEGER
"""

COSTS_INDEXES = (
    "CREATE INDEX IF NOT EXISTS build_costs_started ON build_costs(started_at)",
    "CREATE INDEX IF NOT EXISTS build_costs_group ON build_costs(target, arch, node, started_at)",
)
