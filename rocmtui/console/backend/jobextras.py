"""What a job's folder says beside its record, for the job row and the log pane header: the
closed loop (does the registry hold what the push recorded?), the sccache statistics and each
target's image (a group job has one digest per target); and, for a failed job, why it failed
and what to do next (read from its log's tail once: a failed job's log no longer changes).

Read by the jobs worker every round for up to 100 jobs, so each job's files are read again only
when its folder changed (the supervisor writes them by rename, which changes the folder's
mtime; a growing log does not).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rocmtui.core.states import JobState

if TYPE_CHECKING:
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.verdicts.failure import FailureWhy

MAX_KEPT = 400


class JobExtras:
    """Per job: the folder's mtime when last read, and what was read."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, dict[str, Any]]] = {}
        # per job: what its record said when its log was read, and what that read found
        self._failures: dict[str, tuple[tuple[object, ...], FailureWhy | None]] = {}

    def fields(self, job_id: str, job_dir: str, target: str, arch: str | None) -> dict[str, Any]:
        """JobView fields (`loop`, `loop_text`, `cache`, `images`) for one job."""
        try:
            stamp = os.stat(job_dir).st_mtime_ns
        except OSError:
            return {}
        kept = self._kept.get(job_id)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        found = read_fields(job_dir, target, arch)
        if len(self._kept) >= MAX_KEPT:
            self._kept.clear()
        self._kept[job_id] = (stamp, found)
        return found

    def failure(self, record: JobRecord) -> FailureWhy | None:
        """Why a failed job failed (`evidence.failure_of`), read again only when its record
        changed (a reader may see it failed before its supervisor recorded all)."""
        # on first use: kept off the console's start
        from rocmtui.core.jobs.evidence import failure_of

        if record.state is not JobState.FAILED:
            return None
        said = (record.ended_at, record.exit_code, record.error_step, record.message)
        kept = self._failures.get(record.id)
        if kept is not None and kept[0] == said:
            return kept[1]
        why = failure_of(record)
        if len(self._failures) >= MAX_KEPT:
            self._failures.clear()
        self._failures[record.id] = (said, why)
        return why


def read_fields(job_dir: str, target: str, arch: str | None) -> dict[str, Any]:
    """Read the job folder's targets, metadata, registry and sccache files."""
    # on first use: kept off the console's start
    from rocmtui.core.jobs.images import job_images, read_cache_stats, read_push_check

    check = read_push_check(job_dir)
    stats = read_cache_stats(job_dir)
    words = {i.target: str(i.state) for i in check.images} if check is not None else {}
    images = job_images(job_dir, target, arch)
    return {
        "loop": str(check.state) if check is not None else None,
        "loop_text": check.describe() if check is not None else None,
        "cache": stats.describe() if stats is not None else None,
        "images": tuple((i.target, i.digest, words.get(i.target)) for i in images),
    }
