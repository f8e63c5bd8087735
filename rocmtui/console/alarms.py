"""Builds that need the operator: a stall or a failure rings the bell and raises a notification.

`BuildAlarms` is held by the fleet screen and fed every job list. A build that goes stalled
rings once and says how long it has been silent against the threshold; that notification is
taken back when the build prints again (or ends). A build that fails, or is lost, while the
console watches is as loud: the bell, where it failed, why in a few words and what to do next
(the log pane's header says why whole). Jobs that had already ended when the console started
are not news, even when found later.

Textual's `notify()` returns nothing to take back later; the same `Notify` message is posted
with a `Notification` kept here, and withdrawn through Textual's own removal, which is private
(`textual_private.withdraw`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from textual.app import App
from textual.notifications import Notification, Notify

from rocmtui.console import textual_private
from rocmtui.console.backend.views import JobView
from rocmtui.console.outside_text import clean
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_age

NOTICE_SECONDS = 30  # a stall or a failure stays on screen this long (or until it clears)


class BuildAlarms:
    """The bell and notifications for stalls and failures (see the module doc)."""

    def __init__(self, app: App[Any], stall_after: float, clock: Callable[[], float]) -> None:
        self.app = app
        self.stall_after = stall_after
        self.clock = clock
        self.stalled: set[str] = set()
        self.ended: set[str] | None = None  # failed or lost: None until the first list is in
        # a build that ended before the console began is not news, though found later (a
        # build started elsewhere is listed once BuildKit's history is read)
        self.began = clock()
        self._notices: dict[str, Notification] = {}  # job id -> its stall notification

    def update(self, jobs: Iterable[JobView]) -> None:
        """A new job list: ring for what just stalled or failed; withdraw what recovered."""
        jobs = tuple(jobs)
        self._stalls(jobs)
        self._failures(jobs)

    def _stalls(self, jobs: tuple[JobView, ...]) -> None:
        stalled = {j.record.id: j for j in jobs if j.record.state == JobState.STALLED}
        for job_id in stalled.keys() - self.stalled:
            job = stalled[job_id]
            self.app.bell()
            last = job.progress.last_output_at if job.progress else None
            # the silence the core measured (the log's age): never less than the threshold
            silent = max(self.stall_after, self.clock() - (last or job.record.started_at))
            said = f"{_where(job)} has printed nothing for {fmt_age(silent)}"
            if job.record.verdict_line:  # its node's evidence says why a person is needed
                said += f": {clean(job.record.verdict_line, 160)}"
            else:
                said += f" (stalled after {fmt_age(self.stall_after)})"
            self._notices[job_id] = self._post(said, "Build stalled")
        for job_id in self.stalled - stalled.keys():  # it prints again, or it ended
            notice = self._notices.pop(job_id, None)
            if notice is not None:
                with contextlib.suppress(KeyError):  # timed out, or dismissed, already
                    textual_private.withdraw(self.app, notice)
        self.stalled = set(stalled)

    def _failures(self, jobs: tuple[JobView, ...]) -> None:
        ended = {j.record.id: j for j in jobs if j.record.state in (JobState.FAILED, JobState.LOST)}
        if self.ended is None:
            self.ended = set(ended)
            return
        for job_id in sorted(ended.keys() - self.ended):
            job = ended[job_id]
            if job.record.ended_at is not None and job.record.ended_at < self.began:
                continue
            self.app.bell()
            step = job.record.error_step or (job.progress.error_step if job.progress else None)
            why = f" at {clean(step, 80)}" if step else ""
            if job.record.exit_code is not None and job.record.state == JobState.FAILED:
                why = f" (exit {job.record.exit_code}){why}"
            title = "Build failed" if job.record.state == JobState.FAILED else "Build lost"
            said = f"{_where(job)} {job.record.state}{why}: job {clean(job.record.id)}"
            if job.failure is not None:  # why in a few words, and what next: a notice short
                # enough to leave the jobs panel readable at 80x24 (the log pane says it whole)
                said += f"\n{job.failure.short}; next: {clean(job.failure.next, 90)}"
            self._post(said, title)
        self.ended |= ended.keys()

    def _post(self, message: str, title: str) -> Notification:
        notice = Notification(message, title, "error", NOTICE_SECONDS, markup=False)
        self.app.post_message(Notify(notice))
        return notice


def _where(job: JobView) -> str:
    return f"{clean(job.record.target)} {clean(job.record.arch or '')} on {clean(job.record.node)}"
