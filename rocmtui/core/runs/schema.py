"""The job store's run tables (schema 7). A run's builds are ordinary jobs: `run_jobs` ties
them to it, so a run outlives BuildKit's history as its jobs do. Its own module so
`jobs.store` makes the tables without importing what fills them.
"""

from __future__ import annotations

RUNS_TABLE = """
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    started_at REAL NOT NULL,
    origin TEXT NOT NULL,
    started_by TEXT NOT NULL,
    nodes TEXT NOT NULL,
    notes TEXT NOT NULL,
    overrides TEXT NOT NULL
"""

RUN_JOBS_TABLE = """
    run_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    node TEXT NOT NULL,
    PRIMARY KEY (run_id, job_id)
"""

#: Schema 8: each target of a bake group one job built, from its own BuildKit record's steps
#: (`core/runs/targetspans.py`), on the node's BuildKit clock.
TARGETS_TABLE = """
    job_id TEXT NOT NULL,
    target TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    failed INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    cached INTEGER NOT NULL,
    PRIMARY KEY (job_id, target)
"""

RUNS_INDEXES = (
    "CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at)",
    "CREATE INDEX IF NOT EXISTS run_jobs_job ON run_jobs(job_id)",
)
