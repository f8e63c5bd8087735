"""What the job store says, read once per round for the metrics: builds that run now (and how
long each has been silent), and the outcomes on record.

Blocking (SQLite, a lock check and a stat per unfinished job): the monitor calls `read_jobs`
in a worker thread. Labels come from the records' target, arch and node, all named in the fleet
and bake files: never a job id, a digest or a message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rocmtui.core.config import FleetConfig
from rocmtui.core.jobs.control import live_record, silent_seconds
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState


@dataclass(frozen=True, slots=True)
class ActiveBuild:
    """A build that runs now."""

    node: str
    stalled: bool
    silent: float | None  # seconds since its log last grew (None: no log yet)


@dataclass(frozen=True, slots=True)
class Outcomes:
    """How many jobs of one target, arch and node ended in one state (all on record)."""

    target: str
    arch: str
    node: str
    state: str
    count: int


@dataclass(frozen=True, slots=True)
class LastJob:
    """The latest job of a target and arch, among those that pushed or those that did not."""

    target: str
    arch: str
    push: bool
    state: str
    duration: float
    ended_at: float


@dataclass(frozen=True, slots=True)
class JobsView:
    """The job store at one moment, as the metrics need it."""

    read_at: float
    active: tuple[ActiveBuild, ...] = ()
    outcomes: tuple[Outcomes, ...] = ()
    last: tuple[LastJob, ...] = ()
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


def read_jobs(config: FleetConfig, store: JobStore, now: float | None = None) -> JobsView:
    """The active builds with their silence, outcome counts and the last job per target, arch
    and push. An unreadable store gives a view that says why (the monitor goes on)."""
    now = time.time() if now is None else now
    try:
        active = []
        for record in store.list(limit=None, unfinished_only=True):
            live = live_record(store, record, config.stall_after_seconds, now)
            if live.state in (JobState.RUNNING, JobState.STALLED):
                stalled = live.state is JobState.STALLED
                active.append(ActiveBuild(live.node, stalled, silent_seconds(live, now)))
        with store.connect() as conn:
            outcomes = tuple(
                Outcomes(str(t), str(a), str(n), str(s), int(c))
                for t, a, n, s, c in conn.execute(_OUTCOMES).fetchall()
            )
            last = tuple(
                LastJob(str(t), str(a), bool(p), str(s), max(0.0, float(e) - float(b)), float(e))
                for t, a, p, s, b, e in conn.execute(_LAST).fetchall()
            )
    except Exception as exc:  # a store being replaced, a full disk ...: said, not fatal
        return JobsView(read_at=now, error=str(exc).splitlines()[0] if str(exc) else repr(exc))
    return JobsView(read_at=now, active=tuple(active), outcomes=outcomes, last=last)
