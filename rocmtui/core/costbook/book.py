"""The cost book: every finished build's duration and cache evidence, in the job store.

`CostBook.sync()` turns each finished job (rocmtui's own and builds started elsewhere alike)
that has no row yet into one `build_costs` row: its duration, outcome, who started it, its step
counts (`steps.scan_steps` of its log; BuildKit's counts for a build started elsewhere without
one) and sccache's statistics (the job folder's `sccache.json`, else a scan of its log). A
finished build has its row the moment it ended (an operator who just saw it finish looks for
it), marked *settling* (`CostRow.settling`) while its late evidence may still come: its
supervisor writes `sccache.json` after the outcome. A settling row is read once more,
`SETTLE_SECONDS` after the end, and is then settled for good; so a job's log is scanned at
most twice. Rows older than the retention are deleted, so the table is bounded and a reader's
cost is one indexed query. Readers (`rocmtui history`, the console's history screen) call
`sync` and then `rows`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from msgspec import Struct

from rocmtui.core.config.fleetfile import DEFAULT_RETENTION_DAYS
from rocmtui.core.costbook.cost import (
    HOT_MIN_CACHED_SHARE,
    WARM_MIN_HIT_RATE,
    BuildEvidence,
    Condition,
    CostPoint,
)
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.schema import row_to_record
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState

SETTLE_SECONDS = 30.0  # after a job's end before its row is written (its sccache.json first)
DAY = 86400.0
SYNC_BATCH = 500  # jobs read per round of `sync` (a first sync of a big store goes in rounds)

#: A row's condition in SQL: `BuildEvidence.classify` of its columns, computed the same way
#: (the same divisions and comparisons; tests/unit/test_placement_eta.py holds them equal).
CONDITION_SQL = (
    "CASE WHEN steps_total IS NULL OR steps_total = 0 OR steps_cached IS NULL THEN 'unknown' "
    "WHEN CAST(steps_cached AS REAL) / steps_total >= 1.0 THEN 'frozen' "
    f"WHEN CAST(steps_cached AS REAL) / steps_total >= {HOT_MIN_CACHED_SHARE!r} THEN 'hot' "
    "WHEN sccache_hits IS NULL OR sccache_misses IS NULL OR sccache_hits + sccache_misses = 0 "
    "THEN 'unknown' WHEN CAST(sccache_hits AS REAL) / (sccache_hits + sccache_misses) >= "
    f"{WARM_MIN_HIT_RATE!r} THEN 'warm' ELSE 'cold' END"
)

_COLUMNS = (
    "job_id",
    "target",
    "arch",
    "node",
    "started_at",
    "ended_at",
    "duration",
    "outcome",
    "origin",
    "started_by",
    "steps_total",
    "steps_cached",
    "steps_from",
    "sccache_hits",
    "sccache_misses",
    "settled",
)


class CostRow(Struct, frozen=True):
    """One build in the cost book: what `rocmtui history --json` lists under `builds`."""

    job_id: str
    target: str
    arch: str
    node: str
    started_at: float
    ended_at: float | None
    duration: float
    outcome: str  # the job's state word: succeeded, failed, cancelled, lost (running: live)
    origin: str  # "rocmtui" or "elsewhere"
    started_by: str  # user@host for rocmtui's own; BuildKit's client or record name otherwise
    evidence: BuildEvidence
    # ended less than SETTLE_SECONDS ago: its sccache statistics may still come
    settling: bool = False

    def describe(self) -> str:
        """Its condition with the evidence: `hot: 1/2 steps cached, ...`; `running`; a
        settling build says so (`settling · unknown: 0/1 steps cached, ...`)."""
        if self.ended_at is None:
            return "running"
        text = self.evidence.describe()
        return f"settling · {text}" if self.settling else text

    @property
    def condition(self) -> Condition:
        """The cache condition its evidence proves (unknown while it runs)."""
        if self.ended_at is None:
            return Condition.UNKNOWN
        return self.evidence.classify()

    @property
    def group(self) -> tuple[str, str, str]:
        """(target, arch, node)."""
        return (self.target, self.arch, self.node)

    def point(self) -> CostPoint:
        """The row as the statistics see it."""
        return CostPoint(
            started_at=self.started_at,
            duration=self.duration,
            condition=self.condition,
            succeeded=self.outcome == JobState.SUCCEEDED.value,
            hit_rate=self.evidence.hit_rate,
        )


def evidence_of(record: JobRecord) -> BuildEvidence:
    """A finished job's cache evidence from its folder (and BuildKit's counts)."""
    # on first use: kept off `status`
    from rocmtui.core.history.steps import scan_steps
    from rocmtui.core.jobs.images import read_cache_stats
    from rocmtui.core.progress.sccache import scan_log

    steps = scan_steps(record.log_path)
    total = cached = None
    steps_from = None
    if steps is not None:
        total, cached, steps_from = steps.total, steps.cached, "log"
    elif record.outside is not None and record.outside.total_steps:
        total, cached = record.outside.total_steps, record.outside.cached_steps
        steps_from = "buildkit"
    stats = read_cache_stats(record.job_dir) or scan_log(record.log_path)
    return BuildEvidence(
        steps_total=total,
        steps_cached=cached,
        sccache_hits=stats.hits if stats is not None else None,
        sccache_misses=stats.misses if stats is not None else None,
        steps_from=steps_from,
    )


def started_by(record: JobRecord) -> str:
    """`user@host` for rocmtui's own; BuildKit's client or record name for one elsewhere."""
    out = record.outside
    if out is None:
        return f"{record.user}@{record.host}" if record.host else record.user or "rocmtui"
    return out.client or out.name or "elsewhere"


def row_of(
    record: JobRecord,
    evidence: BuildEvidence,
    now: float | None = None,
    settling: bool = False,
) -> CostRow:
    """A job as a cost row."""
    duration = record.duration(now)
    if record.outside is not None and record.outside.duration and record.ended_at is not None:
        duration = record.outside.duration  # BuildKit's own measure of a build elsewhere
    return CostRow(
        job_id=record.id,
        target=record.target,
        arch=record.arch,
        node=record.node,
        started_at=record.started_at,
        ended_at=record.ended_at,
        duration=duration,
        outcome=str(record.state),
        origin="rocmtui" if record.outside is None else "elsewhere",
        started_by=started_by(record),
        evidence=evidence,
        settling=settling,
    )


def _to_values(row: CostRow) -> tuple[object, ...]:
    e = row.evidence
    return (
        row.job_id,
        row.target,
        row.arch,
        row.node,
        row.started_at,
        row.ended_at,
        row.duration,
        row.outcome,
        row.origin,
        row.started_by,
        e.steps_total,
        e.steps_cached,
        e.steps_from,
        e.sccache_hits,
        e.sccache_misses,
        0 if row.settling else 1,
    )


def _from_values(v: Sequence[object]) -> CostRow:
    def opt_int(x: object) -> int | None:
        return x if isinstance(x, int) else None

    return CostRow(
        job_id=str(v[0]),
        target=str(v[1]),
        arch=str(v[2]),
        node=str(v[3]),
        started_at=float(v[4]),  # type: ignore[arg-type]
        ended_at=float(v[5]),  # type: ignore[arg-type]
        duration=float(v[6]),  # type: ignore[arg-type]
        outcome=str(v[7]),
        origin=str(v[8]),
        started_by=str(v[9]),
        evidence=BuildEvidence(
            steps_total=opt_int(v[10]),
            steps_cached=opt_int(v[11]),
            steps_from=v[12] if isinstance(v[12], str) else None,
            sccache_hits=opt_int(v[13]),
            sccache_misses=opt_int(v[14]),
        ),
        settling=v[15] == 0,
    )


class CostFilter(Struct, frozen=True):
    """Which rows to read (None: any)."""

    target: str | None = None
    arch: str | None = None
    node: str | None = None
    since: float | None = None  # epoch seconds

    def sql(self) -> tuple[str, list[object]]:
        """A WHERE clause (or "") and its parameters."""
        where: list[str] = []
        params: list[object] = []
        for name in ("target", "arch", "node"):
            value = getattr(self, name)
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        if self.since is not None:
            where.append("started_at >= ?")
            params.append(self.since)
        return (" WHERE " + " AND ".join(where) if where else ""), params

    def admits(self, row: CostRow) -> bool:
        """The same test in Python (for rows not in the table: running builds)."""
        return all(
            getattr(self, n) in (None, getattr(row, n)) for n in ("target", "arch", "node")
        ) and (self.since is None or row.started_at >= self.since)


class CostBook:
    """The `build_costs` table of one job store."""

    def __init__(self, store: JobStore, retention_days: float = DEFAULT_RETENTION_DAYS) -> None:
        self.store = store
        self.retention = retention_days * DAY

    def sync(self, now: float | None = None) -> int:
        """Write a row for every finished job that has none (settling when it ended less
        than `SETTLE_SECONDS` ago), read each settling row's job again once it has settled;
        drop rows (and ignore jobs) past the retention. The number of rows written or
        settled."""
        now = time.time() if now is None else now
        cutoff = now - self.retention
        settle_by = now - SETTLE_SECONDS
        written = 0
        with self.store.connect(write=True) as conn:
            conn.execute("DELETE FROM build_costs WHERE started_at < ?", (cutoff,))
        queries = (
            (
                "SELECT * FROM jobs WHERE ended_at IS NOT NULL AND started_at >= ? "
                "AND id NOT IN (SELECT job_id FROM build_costs) ORDER BY started_at LIMIT ?",
                (cutoff, SYNC_BATCH),
            ),
            (
                "SELECT * FROM jobs WHERE id IN (SELECT job_id FROM build_costs "
                "WHERE settled = 0 AND ended_at <= ?) ORDER BY started_at LIMIT ?",
                (settle_by, SYNC_BATCH),
            ),
        )
        for sql, params in queries:
            while True:
                with self.store.connect() as conn:
                    found = conn.execute(sql, params).fetchall()
                records = [row_to_record(r) for r in found]
                rows = [
                    row_of(r, evidence_of(r), settling=(r.ended_at or 0.0) > settle_by)
                    for r in records
                ]
                if rows:
                    self.add(rows)
                    written += len(rows)
                if len(found) < SYNC_BATCH:
                    break
        return written

    def rows(self, which: CostFilter | None = None) -> list[CostRow]:
        """Rows oldest first."""
        where, params = (which or CostFilter()).sql()
        sql = f"SELECT {', '.join(_COLUMNS)} FROM build_costs{where} ORDER BY started_at, job_id"
        with self.store.connect() as conn:
            return [_from_values(v) for v in conn.execute(sql, params).fetchall()]

    def newest_by_group(
        self, since: float, per: int, limit: int, leave_out: tuple[str, str] | None = None
    ) -> dict[tuple[str, str, str], list[CostPoint]]:
        """Of the newest `limit` succeeded builds started since `since` (leaving out one
        target × arch), the newest `per` of each known condition of each target × arch ×
        node, as points oldest first. What placement's condition ratios read on every
        `--node auto`: SQLite picks and classifies (`CONDITION_SQL`), Python sees a few rows
        per group, and `limit` bounds the cost whatever the book holds."""
        target, arch = leave_out or ("", "")
        sql = (
            "SELECT target, arch, node, cond, started_at, duration FROM (SELECT *, ROW_NUMBER() "
            "OVER (PARTITION BY target, arch, node, cond ORDER BY started_at DESC) AS n FROM "
            f"(SELECT target, arch, node, started_at, duration, {CONDITION_SQL} AS cond "
            "FROM build_costs WHERE outcome = ? AND started_at >= ? AND NOT (target = ? AND "
            "arch = ?) ORDER BY started_at DESC LIMIT ?)) WHERE n <= ? AND cond != ? "
            "ORDER BY started_at"
        )
        params = (JobState.SUCCEEDED.value, since, target, arch, limit, per, "unknown")
        with self.store.connect() as conn:
            found = conn.execute(sql, params).fetchall()
        out: dict[tuple[str, str, str], list[CostPoint]] = {}
        for t, a, node, cond, started, duration in found:
            point = CostPoint(started, duration, Condition(cond), True)
            out.setdefault((t, a, node), []).append(point)
        return out

    def add(self, rows: Sequence[CostRow]) -> None:
        """Write rows as they are (recorded history for tests and benchmarks)."""
        marks = ", ".join("?" for _ in _COLUMNS)
        with self.store.connect(write=True) as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO build_costs ({', '.join(_COLUMNS)}) VALUES ({marks})",
                [_to_values(r) for r in rows],
            )


def running_rows(
    store: JobStore, stall_after: float = 900.0, now: float | None = None
) -> list[CostRow]:
    """Unfinished jobs with their live state (running or stalled; one whose supervisor is gone
    reads lost and is left out) as cost rows, with no evidence yet: their condition is known
    at their end."""
    # on first use: jobs.control brings psutil, which the console's first frame does not load
    from rocmtui.core.jobs.control import live_record

    out = []
    for record in store.list(limit=None, unfinished_only=True):
        live = live_record(store, record, stall_after, now)
        if live.state in (JobState.RUNNING, JobState.STALLED):
            out.append(row_of(live, BuildEvidence(), now))
    return out


def load_history(
    store: JobStore,
    retention_days: float = DEFAULT_RETENTION_DAYS,
    which: CostFilter | None = None,
    stall_after: float = 900.0,
    now: float | None = None,
) -> tuple[list[CostRow], list[CostRow]]:
    """(finished builds oldest first, running builds) after bringing the book up to date:
    what `rocmtui history` and the console's history screen read."""
    now = time.time() if now is None else now
    book = CostBook(store, retention_days)
    book.sync(now)
    which = which or CostFilter()
    running = [r for r in running_rows(store, stall_after, now) if which.admits(r)]
    return book.rows(which), running


__all__ = [
    "CONDITION_SQL",
    "SETTLE_SECONDS",
    "CostBook",
    "CostFilter",
    "CostRow",
    "evidence_of",
    "load_history",
    "row_of",
    "running_rows",
]
