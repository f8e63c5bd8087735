"""What the job store says, read once per round for the metrics: builds that run now (and how
long each has been silent), the outcomes on record, and the compile cache hit rate of the last
job of each target and arch whose log reported sccache statistics.

Blocking (SQLite, a lock check and a stat per unfinished job, a small JSON file per recent
job): the monitor calls `read_jobs` in a worker thread. Labels come from the records' target,
arch and node, all named in the fleet and bake files: never a job id, a digest or a message.
"""

from __future__ import annotations

import time

from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.control import live_record, silent_seconds
from rocmtui.core.jobs.images import read_cache_stats
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from rocmtui.core.verdicts.context import StallJudge


class ActiveBuild(Struct, frozen=True):
    """A build that runs now."""

    node: str
    stalled: bool
    silent: float | None  # seconds since its log last grew (None: no log yet)
    verdict: str | None = None  # silent past stall_after_seconds: the verdict's kind


class Outcomes(Struct, frozen=True):
    """How many jobs of one target, arch and node ended in one state (all on record)."""

    target: str
    arch: str
    node: str
    state: str
    count: int


class LastJob(Struct, frozen=True):
    """The latest job of a target and arch, among those that pushed or those that did not."""

    target: str
    arch: str
    push: bool
    state: str
    duration: float
    ended_at: float


class CacheRate(Struct, frozen=True):
    """sccache's hits per looked-up compile (0..1) in the last job of a target and arch that
    reported one (the supervisor writes a job's statistics, read from its log, when it ends)."""

    target: str
    arch: str
    ratio: float


class JobsView(Struct, frozen=True):
    """The job store at one moment, as the metrics need it."""

    read_at: float
    active: tuple[ActiveBuild, ...] = ()
    outcomes: tuple[Outcomes, ...] = ()
    last: tuple[LastJob, ...] = ()
    cache: tuple[CacheRate, ...] = ()
    error: str | None = None  # why the store could not be read (the rest is then empty)


_OUTCOMES = (
    "SELECT target, arch, node, state, COUNT(*) FROM jobs WHERE ended_at IS NOT NULL "
    "GROUP BY target, arch, node, state"
)
# SQLite takes the bare columns of a MAX() aggregate from the row holding the maximum
_LAST = (
    "SELECT target, arch, push, state, started_at, MAX(ended_at) FROM jobs "
    "WHERE ended_at IS NOT NULL GROUP BY target, arch, push"
)

# the latest finished jobs of each target and arch, newest first: the first of them whose log
# reported a hit rate is the one exported (a job that failed before compiling reports none);
# bounded, so a round reads a few small files per target and arch, never the whole history
CACHE_LOOKBACK = 5
_RECENT = (
    "SELECT target, arch, job_dir FROM (SELECT target, arch, job_dir, ROW_NUMBER() OVER "
    "(PARTITION BY target, arch ORDER BY ended_at DESC) AS newest FROM jobs "
    f"WHERE ended_at IS NOT NULL) WHERE newest <= {CACHE_LOOKBACK} ORDER BY target, arch, newest"
)


def cache_rates(rows: list[tuple[object, object, object]]) -> tuple[CacheRate, ...]:
    """The first known hit rate of each target and arch in `rows` (newest first per pair)."""
    found: dict[tuple[str, str], float] = {}
    for target, arch, job_dir in rows:
        key = (str(target), str(arch))
        if key in found:
            continue
        stats = read_cache_stats(str(job_dir))
        if stats is not None and stats.rate is not None:
            found[key] = stats.rate
    return tuple(CacheRate(t, a, r) for (t, a), r in found.items())


def read_jobs(
    config: FleetConfig,
    store: JobStore,
    now: float | None = None,
    judge: StallJudge | None = None,
) -> JobsView:
    """The active builds with their silence and verdict (from `judge`, which has seen the
    round's vitals), outcome counts, the last job per target, arch and push, and the last
    known sccache hit rate per target and arch. An unreadable store gives a view that says
    why (the monitor goes on)."""
    now = time.time() if now is None else now
    try:
        active = []
        running: set[str] = set()
        for record in store.list(limit=None, unfinished_only=True):
            after = config.stall_after_seconds
            live = live_record(store, record, after, now, config, judge=judge)
            if live.state in (JobState.RUNNING, JobState.STALLED):
                stalled = live.state is JobState.STALLED
                silent = silent_seconds(live, now)
                active.append(ActiveBuild(live.node, stalled, silent, live.verdict))
                running.add(live.id)
        if judge is not None:  # what it keeps per build: the running ones' only
            judge.forget_except(running)
        with store.connect() as conn:
            outcomes = tuple(
                Outcomes(str(t), str(a), str(n), str(s), int(c))
                for t, a, n, s, c in conn.execute(_OUTCOMES).fetchall()
            )
            last = tuple(
                LastJob(str(t), str(a), bool(p), str(s), max(0.0, float(e) - float(b)), float(e))
                for t, a, p, s, b, e in conn.execute(_LAST).fetchall()
            )
            recent = conn.execute(_RECENT).fetchall()
        cache = cache_rates(recent)
    except Exception as exc:  # a store being replaced, a full disk ...: said, not fatal
        return JobsView(read_at=now, error=str(exc).splitlines()[0] if str(exc) else repr(exc))
    return JobsView(read_at=now, active=tuple(active), outcomes=outcomes, last=last, cache=cache)
