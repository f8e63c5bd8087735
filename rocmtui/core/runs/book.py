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

from msgspec.structs import replace

from rocmtui.core.costbook.book import CostBook
from rocmtui.core.costbook.cost import BuildEvidence, Condition
from rocmtui.core.jobs.control import live_record
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.schema import row_to_record
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.livetargets import read_live
from rocmtui.core.runs.run import ORIGIN_ELSEWHERE, Run, RunBuild, TargetSpan, new_run_id
from rocmtui.core.runs.targetspans import group_targets, load_spans

#: Builds started elsewhere within this many seconds of each other form one run.
RUN_WINDOW = 10.0
#: A group build ended this recently without target spans kept yet (its supervisor reads its
#: BuildKit records after the outcome) is drawn from bake's printed target times meanwhile.
LIVE_GRACE = 300.0
#: Of the builds ended within `LIVE_GRACE` without spans, the newest this many have their
#: printed file read (a bound: a list of 200 runs just made reads no 4,800 files).
LIVE_READS = 64
_COST_COLUMNS = "bc.steps_total, bc.steps_cached, bc.sccache_hits, bc.sccache_misses"


def _opt(x: object) -> int | None:
    return x if isinstance(x, int) else None


def _build(v: Sequence[object]) -> RunBuild:
    """A finished member from its row: run_id, job_id, id, node, target, arch, started_at,
    ended_at, state, outside?, and the cost book's four evidence columns (None: not yet)."""
    steps = _opt(v[10])
    condition = Condition.UNKNOWN
    if steps is not None:
        condition = BuildEvidence(steps, _opt(v[11]), _opt(v[12]), _opt(v[13])).classify()
    return RunBuild(
        job_id=str(v[2]),
        node=str(v[3]),
        target=str(v[4]),
        arch=str(v[5]),
        started_at=float(v[6]),  # type: ignore[arg-type]
        ended_at=float(v[7]),  # type: ignore[arg-type]
        state=str(v[8]),
        condition=condition,
        started_elsewhere=bool(v[9]),
    )


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
        """The runs of `rows` with their builds: one query for every member's few columns
        (a whole job record only for a build still unfinished, whose live state is read, with
        its group's targets as bake printed them so far: `livetargets`)."""
        now = time.time() if now is None else now
        ids = [r["id"] for r in rows]
        builds: dict[str, list[RunBuild]] = {i: [] for i in ids}
        missing: dict[str, int] = dict.fromkeys(ids, 0)
        unfinished: list[tuple[str, str]] = []
        with self.store.connect() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                found = conn.execute(
                    "SELECT rj.run_id, rj.job_id, j.id, j.node, j.target, j.arch, j.started_at, "
                    f"j.ended_at, j.state, j.outside IS NOT NULL, {_COST_COLUMNS} "
                    "FROM run_jobs rj LEFT JOIN jobs j ON j.id = rj.job_id "
                    "LEFT JOIN build_costs bc ON bc.job_id = rj.job_id "
                    f"WHERE rj.run_id IN ({marks})",
                    chunk,
                ).fetchall()
                for v in found:
                    if v[2] is None:
                        missing[v[0]] += 1
                    elif v[7] is None:
                        unfinished.append((v[0], v[1]))
                    else:
                        builds[v[0]].append(_build(v))
            spans = load_spans(conn, [b.job_id for bs in builds.values() for b in bs])
            groups = group_targets(conn) if unfinished else set()
        fresh = sorted(
            (b for bs in builds.values() for b in bs if b.job_id not in spans and b.ended_at
             and now - b.ended_at < LIVE_GRACE),
            key=lambda b: -(b.ended_at or 0.0),
        )[:LIVE_READS]  # fmt: skip
        printed = {b.job_id for b in fresh}
        for bs in builds.values():
            bs[:] = [self._targets_of(b, spans.get(b.job_id), b.job_id in printed) for b in bs]
        for run_id, job_id in unfinished:
            try:
                record = live_record(self.store, self.store.get(job_id), self.stall_after, now)
            except LookupError:
                missing[run_id] += 1
                continue
            builds[run_id].append(
                RunBuild(
                    job_id=record.id,
                    node=record.node,
                    target=record.target,
                    arch=record.arch,
                    started_at=record.started_at,
                    ended_at=record.ended_at,
                    state=str(record.state),
                    started_elsewhere=record.started_elsewhere,
                    group=record.target in groups,
                    targets=tuple(live := read_live(record.path)),
                    live=bool(live),
                )
            )
        return [
            Run(
                id=r["id"],
                target=r["target"],
                started_at=r["started_at"],
                origin=r["origin"],
                started_by=r["started_by"],
                nodes=tuple(json.loads(r["nodes"])),
                notes=json.loads(r["notes"]),
                overrides=json.loads(r["overrides"]),
                builds=tuple(sorted(builds[r["id"]], key=lambda b: (b.started_at, b.job_id))),
                missing_jobs=missing[r["id"]],
            )
            for r in rows
        ]

    def _targets_of(self, b: RunBuild, spans: list[TargetSpan] | None, fresh: bool) -> RunBuild:
        """An ended build with its kept target spans; a group's just ended (`fresh`), whose
        BuildKit records are still being read (`LIVE_GRACE`), with bake's printed ones
        meanwhile."""
        if spans:
            return replace(b, targets=tuple(spans))
        if fresh:
            live = read_live(self.store.jobs_dir / b.job_id)
            if len(live) > 1:
                return replace(b, targets=tuple(live), live=True)
        return b

    def bring_up_to_date(
        self, retention_days: float, now: float | None = None, costs: bool = True
    ) -> None:
        """Before a read: adopt new runs from builds started elsewhere, and take settled
        builds into the cost book, whose evidence gives each build its cache condition (as
        `rocmtui history` does before its read; `costs` False: not the cost book, a write a
        screen reading every few seconds need not make each time)."""
        now = time.time() if now is None else now
        self.adopt_outside(now)
        if costs:
            CostBook(self.store, retention_days).sync(now)

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


__all__ = ["LIVE_GRACE", "RUN_WINDOW", "RunBook", "clusters"]
