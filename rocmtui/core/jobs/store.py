"""The job store: one folder per job and an SQLite index shared by every console and command.

Layout under the state folder (`paths.state_dir`):

    jobs.sqlite            the index (WAL, busy timeout): one row per job
    jobs/<id>/log          bake's stdout and stderr, plus a header and footer we write
    jobs/<id>/metadata.json  bake's --metadata-file (image digest)
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
import secrets
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Struct, to_builtins
from msgspec.structs import fields, replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.diskroom import condition, describe
from rocmtui.core.history.costschema import COSTS_INDEXES, COSTS_TABLE
from rocmtui.core.history.record import OutsideBuild
from rocmtui.core.paths import state_dir
from rocmtui.core.states import JobState

# 2: link_down_since; 3: buildkit_ref, outside, the history_refs table; 4: build_costs
SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 10_000
JOB_ID_RE = re.compile(r"^\d{8}-\d{4}-[0-9a-f]{4,8}$")

_COLUMNS = """
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
    outside TEXT
"""

# Every BuildKit history record (its ref) rocmtui has tied to a job: its own builds (by their
# ROCMTUI_JOB build arg while they run, by bake's metadata `buildx.build.ref` once done) and
# builds started elsewhere. One row per ref, so two discoverers never make two jobs of one.
_REFS_TABLE = """
    ref TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    node TEXT NOT NULL
"""


class JobNotFound(LookupError):
    """No job matches the id or prefix given."""


class JobStoreError(Exception):
    """The store's database cannot be read or written; the message names the file."""


class AmbiguousJob(LookupError):
    """A prefix matches more than one job."""


class JobRecord(Struct, frozen=True):
    """One job as recorded (the stored state; see `control.job_state` for the live one).

    `overrides` and `command` are stored redacted: they are for people to read, never re-run.
    `command` is the environment assignments that matter followed by bake's argument list.
    """

    id: str
    target: str
    arch: str
    node: str
    endpoint: str
    push: bool
    overrides: dict[str, str]
    command: tuple[str, ...]
    user: str
    host: str
    bake_file: str
    job_dir: str
    started_at: float
    state: JobState = JobState.RUNNING
    ended_at: float | None = None
    supervisor_pid: int | None = None
    supervisor_start: int | None = None
    bake_pid: int | None = None
    bake_start: int | None = None
    exit_code: int | None = None
    digest: str | None = None
    error_step: str | None = None
    message: str | None = None  # why it failed to start, was lost, or was cancelled
    evidence: str | None = None  # last stall evidence, e.g. "silent 16m; engine busy 180% CPU"
    evidence_at: float | None = None
    cancel_requested_at: float | None = None
    # while the link to the job's remote node is down: since when (its supervisor sees it)
    link_down_since: float | None = None
    # BuildKit's history ref of the build (the last part of bake's `buildx.build.ref`, or of
    # `history ls`'s ref); the first one for a group that made several builds
    buildkit_ref: str | None = None
    # set for a build started elsewhere (found in BuildKit's history): what BuildKit knows of it
    outside: OutsideBuild | None = None

    @property
    def started_elsewhere(self) -> bool:
        """A build rocmtui did not start (found in a node's BuildKit history)."""
        return self.outside is not None

    @property
    def path(self) -> Path:
        """The job's folder."""
        return Path(self.job_dir)

    @property
    def log_path(self) -> Path:
        """bake's output (and our header/footer)."""
        return self.path / "log"

    @property
    def metadata_path(self) -> Path:
        """bake's --metadata-file."""
        return self.path / "metadata.json"

    @property
    def record_path(self) -> Path:
        """The atomically replaced JSON copy of the row."""
        return self.path / "record.json"

    @property
    def lock_path(self) -> Path:
        """The flock the supervisor holds while it lives."""
        return self.path / "lock"

    def duration(self, now: float | None = None) -> float:
        """Seconds from start to end (or to now while unfinished)."""
        end = self.ended_at if self.ended_at is not None else (time.time() if now is None else now)
        return max(0.0, end - self.started_at)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the stored fields (the state as its word)."""
        data: dict[str, Any] = to_builtins(self)
        data["command"] = list(self.command)  # to_builtins keeps a tuple a tuple
        data["started_elsewhere"] = self.started_elsewhere
        if self.outside is not None:
            data["outside"]["platforms"] = list(self.outside.platforms)
            data["outside"]["cached_percent"] = self.outside.cached_percent
        return data


_FIELD_NAMES = tuple(f.name for f in fields(JobRecord))


def _row_to_record(row: sqlite3.Row) -> JobRecord:
    data = {key: row[key] for key in row.keys() if key in _FIELD_NAMES}  # noqa: SIM118
    data["push"] = bool(data["push"])
    data["overrides"] = json.loads(data["overrides"])
    data["command"] = tuple(json.loads(data["command"]))
    data["outside"] = _outside_from_text(data.get("outside"))
    try:
        data["state"] = JobState(data["state"])
    except ValueError:
        data["state"] = JobState.LOST
    return JobRecord(**data)


def _record_to_row(record: JobRecord) -> dict[str, Any]:
    data = {name: getattr(record, name) for name in _FIELD_NAMES}
    data["push"] = int(record.push)
    data["overrides"] = json.dumps(record.overrides, sort_keys=True)
    data["command"] = json.dumps(list(record.command))
    data["state"] = str(record.state)
    data["outside"] = (
        None if record.outside is None else json.dumps(to_builtins(record.outside), sort_keys=True)
    )
    return data


def _outside_from_text(text: str | None) -> OutsideBuild | None:
    """The stored `outside` column; an unreadable one (a newer version's, damaged) reads as a
    bare record of a build started elsewhere rather than failing the whole list."""
    if not text:
        return None
    try:
        return msgspec.convert(json.loads(text), OutsideBuild)
    except (ValueError, msgspec.ValidationError):
        return OutsideBuild(ref="?", follow_note="its stored history facts could not be read")


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a table made by an older version up to `_COLUMNS` (new columns are nullable)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
    for line in _COLUMNS.strip().splitlines():
        name, _, kind = line.strip().rstrip(",").partition(" ")
        if name not in have and "NOT NULL" not in kind:
            conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")


def _for_want_of_space(exc: sqlite3.Error) -> bool:
    """SQLite's words for a file it could not create or grow (a full disk)."""
    text = str(exc).lower()
    return any(w in text for w in ("disk i/o error", "disk is full", "unable to open"))


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def new_job_id(now: float | None = None) -> str:
    """A short, sortable, unique-enough id: UTC minute plus 16 random bits (checked on insert)."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


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
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # the state folder is a file, on a read-only or full disk ...
            raise JobStoreError(describe(exc.filename or self.jobs_dir, exc)) from exc
        conn = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(f"CREATE TABLE IF NOT EXISTS jobs ({_COLUMNS})")
                conn.execute("CREATE INDEX IF NOT EXISTS jobs_started ON jobs(started_at)")
                conn.execute(f"CREATE TABLE IF NOT EXISTS history_refs ({_REFS_TABLE})")
                conn.execute(f"CREATE TABLE IF NOT EXISTS build_costs ({COSTS_TABLE})")
                for index in COSTS_INDEXES:
                    conn.execute(index)
                _add_missing_columns(conn)
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
            job_dir.mkdir(mode=0o755)
            record = make(job_id, job_dir)
            row = _record_to_row(record)
            names = ", ".join(row)
            marks = ", ".join(f":{k}" for k in row)
            conn.execute(f"INSERT INTO jobs ({names}) VALUES ({marks})", row)
            write_json_atomic(record.record_path, record.to_json())
        return record

    def update(self, job_id: str, only_if_unfinished: bool = False, **changes: Any) -> JobRecord:
        """Change some fields of a job; the row and record.json change together.

        With `only_if_unfinished`, nothing changes once an end time is recorded (so a late
        writer never overwrites the outcome another process already recorded).
        """
        unknown = set(changes) - set(_FIELD_NAMES)
        if unknown:
            raise ValueError(f"unknown job fields: {sorted(unknown)}")
        with self.connect(write=True) as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            record = _row_to_record(row)
            if only_if_unfinished and record.ended_at is not None:
                return record
            record = replace(record, **changes)
            data = _record_to_row(record)
            sets = ", ".join(f"{k} = :{k}" for k in changes)
            conn.execute(f"UPDATE jobs SET {sets} WHERE id = :id", data)
            write_json_atomic(record.record_path, record.to_json())
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
        return _row_to_record(row)

    def resolve(self, ref: str) -> JobRecord:
        """The job named by a full id, a unique prefix, or a unique random suffix (`ab12`)."""
        ref = ref.strip()
        if not ref or not re.fullmatch(r"[0-9a-f-]+", ref):
            raise JobNotFound(f"not a job id: {ref!r}")
        with self.connect() as conn:
            exact = conn.execute("SELECT * FROM jobs WHERE id = ?", (ref,)).fetchone()
            if exact is not None:
                return _row_to_record(exact)
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
        return _row_to_record(rows[0])

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
        return [_row_to_record(r) for r in rows]
