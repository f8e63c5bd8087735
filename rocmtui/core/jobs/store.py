"""The job store: one folder per job and an SQLite index shared by every console and command.

Layout under the state folder (`paths.state_dir`):

    jobs.sqlite            the index (WAL, busy timeout): one row per job
    jobs/<id>/log          bake's stdout and stderr, plus a header and footer we write
    jobs/<id>/metadata.json  bake's --metadata-file (image digest), kept in room of its own
                             once bake has ended (bake writes it off this disk: bakefiles.py)
    jobs/<id>/record.json  the row as JSON, replaced atomically (tmp + rename) on every change
    jobs/<id>/lock         flock held by the job's supervisor for its whole life

The stored `state` is what the supervisor (or cancel, or a reader that found the supervisor
gone) recorded; the state to show is computed on read by `control.job_state`, because
`stalled` and `lost` depend on the clock and on the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.schema import (
    COSTS_INDEXES,
    COSTS_TABLE,
    STEPS_TABLE,
    add_missing_cost_columns,
)
from rocmtui.core.diskroom import condition, describe
from rocmtui.core.jobs.record import JobRecord, new_job_id
from rocmtui.core.jobs.schema import (
    COLUMNS,
    FIELD_NAMES,
    REFS_TABLE,
    SCHEMA_VERSION,
    add_missing_columns,
    record_to_row,
    row_to_record,
)
from rocmtui.core.jobs.views import record_json
from rocmtui.core.paths import state_dir
from rocmtui.core.runs.schema import RUN_JOBS_TABLE, RUNS_INDEXES, RUNS_TABLE, TARGETS_TABLE
from rocmtui.core.sharing import close_to_others, make_folder, open_file, sharing_of

BUSY_TIMEOUT_MS = 10_000


class JobNotFound(LookupError):
    """No job matches the id or prefix given."""


class JobStoreError(Exception):
    """The store's database cannot be read or written; the message names the file."""


class AmbiguousJob(LookupError):
    """A prefix matches more than one job."""


def _for_want_of_space(exc: sqlite3.Error) -> bool:
    """SQLite's words for a file it could not create or grow (a full disk)."""
    text = str(exc).lower()
    return any(w in text for w in ("disk i/o error", "disk is full", "unable to open"))


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of one. Its mode
    is the folder's sharing's (`core.sharing`: the user's alone, or the group's to read)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(3).hex()}.tmp")
    mode = sharing_of(path.parent).file_mode
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with open(open_file(tmp, flags, mode), "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


class JobStore:
    """The SQLite index and job folders under one state folder. Safe to use from many
    processes at once; each call opens its own connection, so it is also safe across threads.
    """

    def __init__(self, root: Path | str | FleetConfig) -> None:
        """`root` is the state folder, or a fleet config whose state folder to use."""
        self.root = state_dir(root) if isinstance(root, FleetConfig) else Path(root)
        self.jobs_dir = self.root / "jobs"
        self.db_path = self.root / "jobs.sqlite"
        self._ready = False

    @classmethod
    def for_config(
        cls, config: FleetConfig | None = None, env: Mapping[str, str] | None = None
    ) -> JobStore:
        """The store in the state folder the fleet file (and environment) point at."""
        return cls(state_dir(config, env))

    @contextlib.contextmanager
    def connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection; with `write`, inside BEGIN IMMEDIATE (other writers wait, readers go
        on) and committed on success. SQLite's errors, the caller's queries' too, come out as
        JobStoreError naming the database file (a corrupt one said only "file is not a
        database")."""
        try:
            with self._connection(write) as conn:
                yield conn
        except sqlite3.Error as exc:
            said = condition(self.root)  # SQLite's words never say the disk is full
            said = f" ({said})" if said else ""
            raise JobStoreError(f"{self.db_path}: {exc}{said}") from exc

    @contextlib.contextmanager
    def _connection(self, write: bool) -> Iterator[sqlite3.Connection]:
        try:
            self._ensure()
        except sqlite3.OperationalError as exc:
            if write or not _for_want_of_space(exc) or not self.db_path.is_file():
                raise
        conn = self._open() if write else self._open_for_reading()
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if write:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            else:
                yield conn
        finally:
            conn.close()

    def _open(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)

    def _open_for_reading(self) -> sqlite3.Connection:
        """A connection for reading, even on a full disk. Once the last connection closes,
        SQLite removes the WAL index (-shm), and the next reader must make it again: on a
        full disk that fails ('disk I/O error'). With nobody else connected the WAL has been
        checkpointed into the file, so the file alone is the whole store: it is then read
        as immutable (no index, no locks, nothing written)."""
        conn = self._open()
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if not _for_want_of_space(exc):
                raise
        uri = f"file:{urllib.parse.quote(str(self.db_path))}?immutable=1"
        return sqlite3.connect(uri, uri=True, isolation_level=None)

    def _ensure(self) -> None:
        if self._ready:
            return
        try:
            make_folder(self.root, 0o700, parents=True)  # a new state folder is private
            close_to_others(self.root)  # one an older rocmtui made 0755
            make_folder(self.jobs_dir, sharing_of(self.root).common_folder_mode)
        except OSError as exc:  # the state folder is a file, on a read-only or full disk ...
            raise JobStoreError(describe(exc.filename or self.jobs_dir, exc)) from exc
        conn = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(f"CREATE TABLE IF NOT EXISTS jobs ({COLUMNS})")
                conn.execute("CREATE INDEX IF NOT EXISTS jobs_started ON jobs(started_at)")
                conn.execute(f"CREATE TABLE IF NOT EXISTS history_refs ({REFS_TABLE})")
                conn.execute(f"CREATE TABLE IF NOT EXISTS build_costs ({COSTS_TABLE})")
                conn.execute(f"CREATE TABLE IF NOT EXISTS runs ({RUNS_TABLE})")
                conn.execute(f"CREATE TABLE IF NOT EXISTS run_jobs ({RUN_JOBS_TABLE})")
                conn.execute(f"CREATE TABLE IF NOT EXISTS build_targets ({TARGETS_TABLE})")
                for index in (*COSTS_INDEXES, *RUNS_INDEXES):
                    conn.execute(index)
                conn.execute(f"CREATE TABLE IF NOT EXISTS build_steps ({STEPS_TABLE})")
                add_missing_cost_columns(conn)
                add_missing_columns(conn)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
        finally:
            conn.close()
        self._ready = True

    # -- writing -------------------------------------------------------------------------

    def create(self, make: Callable[[str, Path], JobRecord]) -> JobRecord:
        """Allocate a fresh id and folder, then insert `make(job_id, job_dir)` (a JobRecord).

        The id is checked against the index inside the write transaction, so two launches in
        the same minute never share one.
        """
        with self.connect(write=True) as conn:
            for _ in range(50):
                job_id = new_job_id()
                job_dir = self.jobs_dir / job_id
                taken = conn.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone()
                if taken is None and not job_dir.exists():
                    break
            else:  # pragma: no cover - 50 collisions of 16 random bits in one minute
                raise RuntimeError("could not allocate a job id")
            make_folder(job_dir, sharing_of(self.root).common_folder_mode)
            record = make(job_id, job_dir)
            row = record_to_row(record)
            names = ", ".join(row)
            marks = ", ".join(f":{k}" for k in row)
            conn.execute(f"INSERT INTO jobs ({names}) VALUES ({marks})", row)
            write_json_atomic(record.record_path, record_json(record))
        return record

    def open_log(self, record: JobRecord) -> int:
        """The job's log, opened for appending (made with the state folder's file mode)."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        return open_file(record.log_path, flags, sharing_of(self.root).file_mode)

    def update(self, job_id: str, only_if_unfinished: bool = False, **changes: Any) -> JobRecord:
        """Change some fields of a job; the row and record.json change together.

        With `only_if_unfinished`, nothing changes once an end time is recorded (so a late
        writer never overwrites the outcome another process already recorded).
        """
        unknown = set(changes) - set(FIELD_NAMES)
        if unknown:
            raise ValueError(f"unknown job fields: {sorted(unknown)}")
        with self.connect(write=True) as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            record = row_to_record(row)
            if only_if_unfinished and record.ended_at is not None:
                return record
            record = replace(record, **changes)
            data = record_to_row(record)
            sets = ", ".join(f"{k} = :{k}" for k in changes)
            conn.execute(f"UPDATE jobs SET {sets} WHERE id = :id", data)
            write_json_atomic(record.record_path, record_json(record))
        return record

    def create_for_ref(
        self, ref: str, node: str, make: Callable[[str, Path], JobRecord]
    ) -> JobRecord | None:
        """Like `create`, for BuildKit history record `ref` on `node`: None (nothing made)
        when a job is tied to that ref already, so two discoverers make one job, not two."""
        made: list[JobRecord] = []

        def make_tied(job_id: str, job_dir: Path) -> JobRecord:
            record = make(job_id, job_dir)
            made.append(record)
            return record

        with self.connect(write=True) as conn:
            if conn.execute("SELECT 1 FROM history_refs WHERE ref = ?", (ref,)).fetchone():
                return None
            conn.execute(
                "INSERT INTO history_refs (ref, job_id, node) VALUES (?, ?, ?)",
                (ref, "", node),
            )
        try:
            record = self.create(make_tied)
        except BaseException:
            with self.connect(write=True) as conn:
                conn.execute("DELETE FROM history_refs WHERE ref = ? AND job_id = ''", (ref,))
            raise
        with self.connect(write=True) as conn:
            conn.execute("UPDATE history_refs SET job_id = ? WHERE ref = ?", (record.id, ref))
        return record

    def tie_ref(self, ref: str, job_id: str, node: str) -> bool:
        """Tie BuildKit history record `ref` to job `job_id` (one of rocmtui's own); the job's
        `buildkit_ref` is set when it has none. False when the ref was tied already."""
        with self.connect(write=True) as conn:
            if conn.execute("SELECT 1 FROM history_refs WHERE ref = ?", (ref,)).fetchone():
                return False
            conn.execute(
                "INSERT INTO history_refs (ref, job_id, node) VALUES (?, ?, ?)", (ref, job_id, node)
            )
        with contextlib.suppress(JobNotFound):
            if self.get(job_id).buildkit_ref is None:
                self.update(job_id, buildkit_ref=ref)
        return True

    def known_refs(self) -> dict[str, str]:
        """Every BuildKit ref tied to a job: ref -> job id ("" while its job is being made)."""
        with self.connect() as conn:
            rows = conn.execute("SELECT ref, job_id FROM history_refs").fetchall()
        return {row[0]: row[1] for row in rows}

    # -- reading -------------------------------------------------------------------------

    def get(self, job_id: str) -> JobRecord:
        """The job with exactly this id."""
        with self.connect() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return row_to_record(row)

    def resolve(self, ref: str) -> JobRecord:
        """The job named by a full id, a unique prefix, or a unique random suffix (`ab12`)."""
        ref = ref.strip()
        if not ref or not re.fullmatch(r"[0-9a-f-]+", ref):
            raise JobNotFound(f"not a job id: {ref!r}")
        with self.connect() as conn:
            exact = conn.execute("SELECT * FROM jobs WHERE id = ?", (ref,)).fetchone()
            if exact is not None:
                return row_to_record(exact)
            rows = conn.execute(
                "SELECT * FROM jobs WHERE substr(id, 1, ?) = ? ORDER BY started_at DESC LIMIT 2",
                (len(ref), ref),
            ).fetchall()
            if not rows and "-" not in ref:
                rows = conn.execute(
                    "SELECT * FROM jobs WHERE id LIKE ? ORDER BY started_at DESC LIMIT 2",
                    (f"%-{ref}",),
                ).fetchall()
        if not rows:
            raise JobNotFound(f"no job matches {ref!r}")
        if len(rows) > 1:
            raise AmbiguousJob(f"{ref!r} matches more than one job ({rows[0]['id']}, ...)")
        return row_to_record(rows[0])

    def list(self, limit: int | None = 100, unfinished_only: bool = False) -> list[JobRecord]:
        """Jobs newest first."""
        sql = "SELECT * FROM jobs"
        if unfinished_only:
            sql += " WHERE ended_at IS NULL"
        sql += " ORDER BY started_at DESC, id DESC"
        params: tuple[int, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        with self.connect() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [row_to_record(r) for r in rows]
