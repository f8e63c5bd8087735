"""What a job is: its record (`JobRecord`, the stored fields and where its files are) and its id.

`store.JobStore` keeps records; `control.job_state` computes the state to show from one.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from msgspec import Struct

from rocmtui.core.history.outside import OutsideBuild
from rocmtui.core.states import JobState

#: JobRecord fields computed on every read and never stored
LIVE_FIELDS = frozenset({"verdict", "verdict_line"})
JOB_ID_RE = re.compile(r"^\d{8}-\d{4}-[0-9a-f]{4,8}$")


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
    # the `--allow` words the operator granted bake for this build (a rebuild asks again)
    allowed: tuple[str, ...] = ()
    # live only, never stored (`LIVE_FIELDS`): the verdict on a build silent past
    # stall_after_seconds (rocmtui.core.verdicts): its kind ("busy", "idle", "disk", ...) and
    # its one line; a `running` job with a verdict is quiet, a `stalled` one says why
    verdict: str | None = None
    verdict_line: str | None = None

    @property
    def quiet(self) -> bool:
        """Running, silent past the stall threshold, and judged busy: marked, not alarmed."""
        return self.state is JobState.RUNNING and self.verdict is not None

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


def new_job_id(now: float | None = None) -> str:
    """A short, sortable, unique-enough id: UTC minute plus 16 random bits (checked on insert)."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{os.urandom(2).hex()}"


__all__ = ["JOB_ID_RE", "LIVE_FIELDS", "JobRecord", "new_job_id"]
