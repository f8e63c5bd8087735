"""What the supervisor writes into the job's record while and after bake runs, on any disk.

* The log stopped holding lines (a full state disk): the record says so at once — "log
  stopped: state disk full at ...; the build goes on" — from the room the log gave back (its
  `Reserve`), tried again every few seconds if even that failed.
* bake ended: the outcome goes first into the job's `OutcomeSlot` (its room was taken at the
  start: readers show the true outcome at once, even on a disk still full), then into the job
  store, retried while the store cannot be written, for up to `RECORD_RETRY_FOR`.
* A SIGTERM or SIGINT while the outcome waits for the store (bake has ended: there is no build
  to cancel) stops the waiting after one last try: the supervisor may end, the outcome stays in
  its slot, and the next reader that can write the store records it.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable
from typing import Any

from rocmtui.core.jobs.logwriter import RETRY_SECONDS, LogWriter
from rocmtui.core.jobs.outcome import OutcomeSlot
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.retry import backoff

RECORD_RETRY_FOR = 7 * 86400.0  # seconds an unwritable outcome is retried
RECORD_RETRY_FIRST = 0.5  # seconds before the second try
RECORD_RETRY_MAX = 30.0  # seconds between tries, at most


class Stopped(Exception):
    """A signal ended the wait for room in the job store; the outcome is in its slot (when
    the slot was held)."""


class JobRecorder:
    """Writes the log-stopped line and the outcome of one job (see the module doc)."""

    def __init__(
        self,
        store: JobStore,
        job_id: str,
        log: LogWriter,
        slot: OutcomeSlot,
        signal_count: Callable[[], int],
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.log = log
        self.slot = slot
        self.signal_count = signal_count
        self.wake_fd: int | None = None  # readable when a signal arrives (set_wakeup_fd)
        self._said_stop: str | None = None  # the stopped line the record holds
        self._next_try = 0.0

    # -- while bake runs -------------------------------------------------------------------

    def after_write(self) -> None:
        """Once the log has stopped holding lines, say so in the record (once per stop; a
        failed write is tried again after RETRY_SECONDS); once it holds lines again, say that
        it is incomplete instead. Cheap while the log holds."""
        line = self.log.stopped_line
        if line is None and self._said_stop is not None:
            line = self.log.incomplete  # resumed: no longer stopped, but some is missing
        if line is None or line == self._said_stop or time.monotonic() < self._next_try:
            return
        try:
            self.store.update(self.job_id, only_if_unfinished=True, message=line)
            self._said_stop = line
        except (JobStoreError, OSError):
            self._next_try = time.monotonic() + RETRY_SECONDS

    # -- once bake has ended ---------------------------------------------------------------

    def record(
        self, fields: dict[str, Any], signals: int = 0, retry_for: float = RECORD_RETRY_FOR
    ) -> JobRecord:
        """The outcome into its slot, then into the store (unless another process, e.g.
        cancel, already recorded one), retried while the store cannot be written; the first
        failure is said in the log (if the log has room). Raises `Stopped` when more than
        `signals` signals have come (those that came while bake ran), the store's error once
        `retry_for` has passed."""
        kept = self.slot.write(fields)
        deadline = time.monotonic() + retry_for
        failures = 0
        while True:
            try:
                return self.store.update(self.job_id, only_if_unfinished=True, **fields)
            except (JobStoreError, OSError) as exc:
                failures += 1
                if self.signal_count() > signals:
                    raise Stopped(self._where(kept)) from exc
                delay = backoff(RECORD_RETRY_FIRST, failures, RECORD_RETRY_MAX)
                if time.monotonic() + delay > deadline:
                    raise
                if failures == 1:
                    self.log.note(f"cannot record the outcome yet ({exc}); {self._where(kept)}")
                self._pause(delay)

    def _where(self, kept: bool) -> str:
        if kept:
            return f"it is kept in {self.slot.path} until the job store has room"
        return "it is held by the supervisor until the job store has room"

    def _pause(self, seconds: float) -> None:
        """Wait `seconds`, or less when a signal arrives (its wake-up byte is consumed)."""
        if self.wake_fd is None:
            time.sleep(seconds)
            return
        ready, _, _ = select.select([self.wake_fd], [], [], seconds)
        if ready:
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(self.wake_fd, 4096)


__all__ = ["RECORD_RETRY_FOR", "JobRecorder", "Stopped"]
