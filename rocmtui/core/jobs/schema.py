"""The job store's SQLite schema (`jobs` and `history_refs`; `build_costs` is the cost book's,
`runs` and `run_jobs` the run book's) and the mapping between a `jobs` row and its
`JobRecord`."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import msgspec
from msgspec import to_builtins
from msgspec.structs import fields

from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.jobs.record import LIVE_FIELDS, JobRecord
from rocmtui.core.states import JobState

# 2: link_down_since; 3: buildkit_ref, outside, the history_refs table; 4: build_costs;
# 5: build_costs.settled, the build_steps table; 6: allowed; 7: runs and run_jobs
# (core/runs/schema.py); 8: build_targets (a group's per-target spans, core/runs/schema.py)
SCHEMA_VERSION = 8

COLUMNS = """
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    arch TEXT NOT NULL,
    node TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    push INTEGER NOT NULL,
    overrides TEXT NOT NULL,
    command TEXT NOT NULL,
    user TEXT NOT NULL,
    host TEXT NOT NULL,
    bake_file TEXT NOT NULL,
    job_dir TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    supervisor_pid INTEGER,
    supervisor_start INTEGER,
    bake_pid INTEGER,
    bake_start INTEGER,
    exit_code INTEGER,
    digest TEXT,
    state TEXT NOT NULL,
    error_step TEXT,
    message TEXT,
    evidence TEXT,
    evidence_at REAL,
    cancel_requested_at REAL,
    link_down_since REAL,
    buildkit_ref TEXT,
    outside TEXT,
    allowed TEXT
"""

# Every BuildKit history record (its ref) rocmtui has tied to a job: its own builds (by their
# ROCMTUI_JOB build arg while they run, by bake's metadata `buildx.build.ref` once done) and
# builds started elsewhere. One row per ref, so two discoverers never make two jobs of one.
REFS_TABLE = """
    ref TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    node TEXT NOT NULL
"""


FIELD_NAMES = tuple(f.name for f in fields(JobRecord) if f.name not in LIVE_FIELDS)


def row_to_record(row: sqlite3.Row) -> JobRecord:
    """A `jobs` row as its record (an unknown state word reads as `lost`)."""
    data = {key: row[key] for key in row.keys() if key in FIELD_NAMES}  # noqa: SIM118
    data["push"] = bool(data["push"])
    data["overrides"] = json.loads(data["overrides"])
    data["command"] = tuple(json.loads(data["command"]))
    data["outside"] = outside_from_text(data.get("outside"))
    data["allowed"] = allowed_from_text(data.get("allowed"))
    try:
        data["state"] = JobState(data["state"])
    except ValueError:
        data["state"] = JobState.LOST
    return JobRecord(**data)


def record_to_row(record: JobRecord) -> dict[str, Any]:
    """The `jobs` row of a record (JSON columns for the dict, tuple and struct fields)."""
    data = {name: getattr(record, name) for name in FIELD_NAMES}
    data["push"] = int(record.push)
    data["overrides"] = json.dumps(record.overrides, sort_keys=True)
    data["command"] = json.dumps(list(record.command))
    data["state"] = str(record.state)
    data["allowed"] = json.dumps(list(record.allowed)) if record.allowed else None
    data["outside"] = (
        None if record.outside is None else json.dumps(to_builtins(record.outside), sort_keys=True)
    )
    return data


def outside_from_text(text: str | None) -> OutsideBuild | None:
    """The stored `outside` column; an unreadable one (a newer version's, damaged) reads as a
    bare record of a build started elsewhere rather than failing the whole list."""
    if not text:
        return None
    try:
        return msgspec.convert(json.loads(text), OutsideBuild)
    except (ValueError, msgspec.ValidationError):
        return OutsideBuild(ref="?", follow_note="its stored history facts could not be read")


def allowed_from_text(text: str | None) -> tuple[str, ...]:
    """The stored `allowed` column (a JSON list; empty or unreadable: nothing granted)."""
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a table made by an older version up to `COLUMNS` (new columns are nullable)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
    for line in COLUMNS.strip().splitlines():
        name, _, kind = line.strip().rstrip(",").partition(" ")
        if name not in have and "NOT NULL" not in kind:
            conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")


__all__ = [
    "COLUMNS",
    "FIELD_NAMES",
    "REFS_TABLE",
    "SCHEMA_VERSION",
    "add_missing_columns",
    "allowed_from_text",
    "outside_from_text",
    "record_to_row",
    "row_to_record",
]
