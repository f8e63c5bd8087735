"""Adapters from the core's records to the console's frozen views (blocking; called by workers).

This is where the console meets the core's exact names: a job record, a build's progress, the
operator's variables as bake overrides. The calls into the core that bring the records are the
door's (`access.py`, `calls.py`); here they only become views, so that the widgets never
depend on the exact shape of the core's records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.console.backend.views import (
    JobView,
    ProgressView,
    StepView,
)

if TYPE_CHECKING:  # imported when first used, not at start-up (the console's first frame
    # needs none of them: the bake file and the progress parser are read by the workers)
    from rocmtui.core.bake.file import BakeFile
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.progress.tracker import JobProgress, ProgressTracker, Step

MAX_PROGRESS_READ = 4 << 20  # bytes of new log read per job per round; the rest next round


def env_overrides(
    bake: BakeFile, env: Mapping[str, str], fleet: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The operator's variables named like bake variables, over the fleet file's `[variables]`
    (GFX_ARCH is chosen per build)."""
    # on first use: kept off the console's start
    from rocmtui.core.bake.effective import fleet_variables, shell_overrides
    from rocmtui.core.bake.file import ARCH_VARIABLE

    found = fleet_variables(fleet or {}, bake) | shell_overrides(bake, env)
    found.pop(ARCH_VARIABLE, None)
    return found


def print_lines(printed: object) -> list[str]:
    """`bake --print`'s JSON as stable, indented lines (keys sorted so diffs line up); only the
    target definitions, since the group bake adds for the command line says nothing new."""
    if isinstance(printed, dict) and "target" in printed:
        printed = {"target": printed["target"]}
    text = json.dumps(printed, indent=2, sort_keys=True, default=str)
    lines: list[str] = text.splitlines()
    return lines


# ---------------------------------------------------------------------------- jobs


class ProgressCache:
    """Per-job progress trackers, fed incrementally with each log's new lines.

    The tracker keeps counters, not lines, and each round reads only what was appended (at
    most MAX_PROGRESS_READ bytes), so following a long build costs little and memory is flat.
    """

    def __init__(self) -> None:
        self._trackers: dict[str, tuple[ProgressTracker | None, int]] = {}

    def progress(
        self,
        job_id: str,
        target: str,
        log_path: Path | None,
        now: float,
        succeeded: bool | None = None,
    ) -> ProgressView | None:
        """Feed the job's new log lines to its tracker and return the current progress
        (`succeeded`: how the build ended, None while it runs; an ended build runs no step)."""
        # on first use: kept off the console's start
        from rocmtui.core.progress.tracker import ProgressTracker

        if log_path is None:
            return None
        tracker, offset = self._trackers.get(job_id, (None, 0))
        try:
            info = os.stat(log_path)
        except OSError:
            return None
        if tracker is None or info.st_size < offset:  # new, or truncated/replaced: start over
            tracker, offset = ProgressTracker(targets=(target,)), 0
        if info.st_size > offset:
            try:
                with open(log_path, "rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(MAX_PROGRESS_READ)
            except OSError:
                chunk = b""
            cut = chunk.rfind(b"\n") + 1  # whole lines only; split on \n alone (a bare \r
            if cut:  # may sit inside a BuildKit line)
                tracker.feed(chunk[:cut].decode("utf-8", "replace").split("\n")[:-1], now)
                offset += cut
        self._trackers[job_id] = (tracker, offset)
        # the silence is the log's age, as the core's stall check reads it: every panel and
        # every console shows the same silence, rate and ETA for one log
        silence = max(0.0, now - info.st_mtime)
        snapshot = tracker.snapshot(now, silence=silence, succeeded=succeeded)
        return progress_view(snapshot, info.st_mtime)

    def forget_except(self, keep: Iterable[str]) -> None:
        """Drop trackers of jobs no longer followed (memory stays bounded)."""
        wanted = set(keep)
        for job_id in list(self._trackers):
            if job_id not in wanted:
                del self._trackers[job_id]


def _step_label(step: Step) -> str:
    return f"#{step.number} {step.title or step.name}"


def progress_view(progress: JobProgress, log_mtime: float | None = None) -> ProgressView:
    """The core's JobProgress as a ProgressView. The last output is the log's mtime (what the
    stall check reads), not when this console happened to read the lines."""
    steps = tuple(
        StepView(
            number=f"#{s.number}",
            name=str(s.title or s.name),
            status=str(s.status),
            duration=s.duration
            if s.duration is not None
            else (s.ended - s.started if s.ended is not None and s.started is not None else None),
            first_line=s.first_line,
        )
        for s in progress.steps
        if not s.internal or s.status == "error"
    )
    ninja = progress.ninja
    last = log_mtime if log_mtime is not None else progress.last_output
    return ProgressView(
        step=_step_label(progress.current) if progress.current is not None else None,
        steps_done=int(progress.steps_done),
        steps_total=int(progress.steps_total),
        cached=int(progress.steps_cached),
        ninja_done=ninja.done if ninja else None,
        ninja_total=ninja.total if ninja else None,
        rate=ninja.rate if ninja else None,
        eta=ninja.eta_seconds if ninja else None,
        last_output_at=last,
        error_step=_step_label(progress.error_step) if progress.error_step is not None else None,
        steps=steps,
    )


def job_view(
    record: JobRecord, progress: ProgressView | None, bake: BakeFile | None = None
) -> JobView:
    """The core's JobRecord as a JobView. A build started elsewhere carries in its record
    what `r` relaunches for it (the core's `rebuild_request`: its build args that differ from
    the bake file's defaults; none until the bake file is read)."""
    if record.outside is not None:
        # on first use: kept off the console's start
        from rocmtui.core.history.rebuild import rebuild_request

        again = rebuild_request(record, bake)
        record = replace(
            record,
            # not inspected yet: its record id is no target
            target=again.target if record.outside.target else "?",
            arch=again.arch or "",
            push=again.push,
            overrides=dict(again.overrides) if bake is not None else {},
        )
    return JobView(record=record, progress=progress)
