"""The run book: runs and their builds in the job store (`runs`, `run_jobs`), read back as
`Run`s with each build's live state and cache condition.

A run's builds are jobs, so a run outlives BuildKit's history as its jobs do. Builds started
elsewhere by one bake invocation across nodes (their jobs started within `RUN_WINDOW` of each
other on at least two nodes, found in the nodes' BuildKit history) are adopted as a run of
their own by `adopt_outside`, once, when the newest of them is `RUN_WINDOW` old. Blocking
(SQLite): call it from a command or a worker.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence

from rocmtui.core.history.cost import BuildEvidence, Condition
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.schema import row_to_record
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.model import ORIGIN_ELSEWHERE, Run, RunBuild, new_run_id

#: Builds started elsewhere within this many seconds of each other form one run.
RUN_WINDOW = 10.0
_COST_COLUMNS = "steps_total, steps_cached, sccache_hits, sccache_misses"


def _condition(values: Sequence[object] | None, record: JobRecord) -> Condition:
    if record.ended_at is None or values is None or values[0] is None:
        return Condition.UNKNOWN

    def opt(x: object) -> int | None:
        return x if isinstance(x, int) else None

    return BuildEvidence(opt(values[0]), opt(values[1]), opt(values[2]), opt(values[3])).classify()


class RunBook:
    """Runs in one job store."""

    def __init__(self, store: JobStore, stall_after: float = 900.0) -> None:
        self.store = store
        self.stall_after = stall_after

    # -- writing ------------------------------------------------------------------------------

    def create(self, run: Run) -> None:
        """Record a run (its builds are added with `add_job` as they start)."""
        with self.store.connect(write=True) as conn:
            conn.execute(
                "INSERT INTO runs (id, target, started_at, origin, started_by, nodes, notes, "
                "overrides) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.id,
                    run.target,
                    run.started_at,
                    run.origin,
                    run.started_by,
                    json.dumps(list(run.nodes)),
                    json.dumps(run.notes, sort_keys=True),
                    json.dumps(run.overrides, sort_keys=True),
                ),
            )

    def add_jobs(self, run_id: str, jobs: Iterable[tuple[str, str]]) -> None:
        """Tie jobs (job id, node) to a run."""
        with self.store.connect(write=True) as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO run_jobs (run_id, job_id, node) VALUES (?, ?, ?)",
                [(run_id, job, node) for job, node in jobs],
            )

    def note(self, run_id: str, node: str, why: str) -> None:
        """Say why the run did not start on `node`."""
        with self.store.connect(write=True) as conn:
            row = conn.execute("SELECT notes FROM runs WHERE id = ?", (run_id,)).fetchone()
            notes = json.loads(row[0]) if row else {}
            notes[node] = why
            conn.execute(
                "UPDATE runs SET notes = ? WHERE id = ?",
                (json.dumps(notes, sort_keys=True), run_id),
            )

    # -- reading ------------------------------------------------------------------------------

    def runs(self, limit: int | None = None, now: float | None = None) -> list[Run]:
        """Runs newest first, each with its builds."""
        sql = "SELECT * FROM runs ORDER BY started_at DESC, id DESC"
        params: tuple[object, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        with self.store.connect() as conn:
            rows = conn.execute(sql, params).fetchall()
        return self._with_builds(rows, now)

    def get(self, ref: str, now: float | None = None) -> Run:
        """The run with this id, or the one whose id ends with `ref` (LookupError otherwise)."""
        ref = ref.strip()
        with self.store.connect() as conn:
            rows = conn.execute("SELECT * FROM runs WHERE id = ?", (ref,)).fetchall()
            if not rows and ref:
                rows = conn.execute(
                    "SELECT * FROM runs WHERE id LIKE ? ORDER BY started_at DESC LIMIT 2",
                    (f"%{ref.replace('%', '').replace('_', '')}",),
                ).fetchall()
        if not rows:
            raise LookupError(f"no run matches {ref!r}")
        if len(rows) > 1:
            raise LookupError(f"{ref!r} matches more than one run ({rows[0]['id']}, ...)")
        return self._with_builds(rows, now)[0]

    def _with_builds(self, rows: Sequence[sqlite3.Row], now: float | None) -> list[Run]:
        from rocmtui.core.jobs.control import live_record

        now = time.time() if now is None else now
        ids = [r["id"] for r in rows]
        members: dict[str, list[str]] = {i: [] for i in ids}
        records: dict[str, JobRecord] = {}
        costs: dict[str, tuple[object, ...]] = {}
        with self.store.connect() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                for run_id, job_id in conn.execute(
                    f"SELECT run_id, job_id FROM run_jobs WHERE run_id IN ({marks})", chunk
                ):
                    members[run_id].append(job_id)
                for row in conn.execute(
                    f"SELECT jobs.* FROM jobs JOIN run_jobs ON jobs.id = run_jobs.job_id "
                    f"WHERE run_jobs.run_id IN ({marks})",
                    chunk,
                ):
                    records[row["id"]] = row_to_record(row)
                for row in conn.execute(
                    f"SELECT job_id, {_COST_COLUMNS} FROM build_costs WHERE job_id IN "
                    f"(SELECT job_id FROM run_jobs WHERE run_id IN ({marks}))",
                    chunk,
                ):
                    costs[row[0]] = tuple(row[1:])
        out = []
        for r in rows:
            builds = []
            missing = 0
            for job_id in members[r["id"]]:
                record = records.get(job_id)
                if record is None:
                    missing += 1
                    continue
                if record.ended_at is None:
                    record = live_record(self.store, record, self.stall_after, now)
                builds.append(
                    RunBuild(
                        job_id=record.id,
                        node=record.node,
                        target=record.target,
                        arch=record.arch,
                        started_at=record.started_at,
                        ended_at=record.ended_at,
                        state=str(record.state),
                        condition=_condition(costs.get(record.id), record),
                        started_elsewhere=record.started_elsewhere,
                    )
                )
            out.append(
                Run(
                    id=r["id"],
                    target=r["target"],
                    started_at=r["started_at"],
                    origin=r["origin"],
                    started_by=r["started_by"],
                    nodes=tuple(json.loads(r["nodes"])),
                    notes=json.loads(r["notes"]),
                    overrides=json.loads(r["overrides"]),
                    builds=tuple(sorted(builds, key=lambda b: (b.started_at, b.job_id))),
                    missing_jobs=missing,
                )
            )
        return out

    # -- builds started elsewhere -------------------------------------------------------------

    def adopt_outside(self, now: float | None = None) -> list[str]:
        """Make a run of each cluster of builds started elsewhere (see the module doc) whose
        jobs are in no run yet; the new run ids."""
        now = time.time() if now is None else now
        with self.store.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM jobs WHERE outside IS NOT NULL AND started_at <= ? AND id NOT IN "
                "(SELECT job_id FROM run_jobs) ORDER BY started_at",
                (now - RUN_WINDOW,),
            ).fetchall()
        records = [row_to_record(r) for r in rows]
        made = []
        for cluster in clusters(records):
            first = cluster[0]
            names = sorted({r.target or "?" for r in cluster})
            who = {r.outside.client or r.outside.name for r in cluster if r.outside} - {None}
            run = Run(
                id=new_run_id(first.started_at),
                target=", ".join(names),
                started_at=first.started_at,
                origin=ORIGIN_ELSEWHERE,
                started_by=", ".join(sorted(str(w) for w in who)) or "elsewhere",
                nodes=tuple(dict.fromkeys(r.node for r in cluster)),
            )
            self.create(run)
            self.add_jobs(run.id, [(r.id, r.node) for r in cluster])
            made.append(run.id)
        return made


def clusters(records: Sequence[JobRecord]) -> list[list[JobRecord]]:
    """Builds (oldest first) that started within `RUN_WINDOW` of the previous one, on at
    least two nodes: one bake invocation across the fleet (a lone node's builds are not a
    fleet run)."""
    out: list[list[JobRecord]] = []
    current: list[JobRecord] = []
    for r in records:
        if current and r.started_at - current[-1].started_at > RUN_WINDOW:
            out.append(current)
            current = []
        current.append(r)
    if current:
        out.append(current)
    return [c for c in out if len({r.node for r in c}) >= 2]


__all__ = ["RUN_WINDOW", "RunBook", "clusters"]
