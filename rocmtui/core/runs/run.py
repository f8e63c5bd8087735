"""A run and its builds, as the run book keeps and reads them."""

from __future__ import annotations

import os
import re
import time

from msgspec import Struct, field

from rocmtui.core.costbook.cost import Condition

RUN_ID_RE = re.compile(r"^run-\d{8}-\d{4}-[0-9a-f]{4,8}$")
ORIGIN_ROCMTUI = "rocmtui"
ORIGIN_ELSEWHERE = "elsewhere"


def new_run_id(now: float | None = None) -> str:
    """`run-20261206-1142-ab12`: sortable, and never mistaken for a job id."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(time.time() if now is None else now))
    return f"run-{stamp}-{os.urandom(2).hex()}"


class RunBuild(Struct, frozen=True):
    """One build of a run: a job, with its live state and (once settled) its cache condition."""

    job_id: str
    node: str
    target: str
    arch: str
    started_at: float
    ended_at: float | None  # None while it runs
    state: str  # the job's state word (running, succeeded, failed, stalled, lost ...)
    condition: Condition = Condition.UNKNOWN
    started_elsewhere: bool = False

    def duration(self, now: float) -> float:
        """Seconds from start to end (to `now` while it runs)."""
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


class Run(Struct, frozen=True):
    """Builds started together across the fleet (`rocmtui run`, or one bake invocation
    elsewhere found in the nodes' BuildKit history)."""

    id: str
    target: str
    started_at: float
    origin: str  # ORIGIN_ROCMTUI or ORIGIN_ELSEWHERE
    started_by: str
    nodes: tuple[str, ...]  # the nodes it was meant for, in the order asked
    notes: dict[str, str] = field(default_factory=dict)  # node -> why it did not start there
    overrides: dict[str, str] = field(default_factory=dict)  # redacted, for people to read
    builds: tuple[RunBuild, ...] = ()
    missing_jobs: int = 0  # members whose job is no longer in the store

    def running(self) -> bool:
        """A build of it still runs."""
        return any(b.ended_at is None for b in self.builds)

    def state(self) -> str:
        """`running`, `not started` (no build started anywhere), `failed` (a build failed,
        was lost or cancelled, or a node did not start), or `done`."""
        if self.running():
            return "running"
        if not self.builds:
            return "not started"
        bad = any(b.state in ("failed", "lost", "cancelled") for b in self.builds)
        return "failed" if bad or self.notes else "done"


__all__ = ["ORIGIN_ELSEWHERE", "ORIGIN_ROCMTUI", "RUN_ID_RE", "Run", "RunBuild", "new_run_id"]
