"""The supervisor's eye on a remote build's link: down since when, back, or given up.

A build on a remote node is `docker buildx bake` here talking to the engine there over ssh or
TLS. When that link is black-holed (an interface down, the mesh node asleep) nothing resets:
bake just stops hearing from the engine, and may wait for many minutes before its connection
gives up (TCP retries, ssh reconnecting with a 30 s connect timeout), or forever. So every few
seconds the supervisor asks the kernel about the job's own TCP connections (`tcpstate`: data
sent and retransmitted, unacknowledged; a connect stuck in SYN_SENT), which costs a read of
/proc and sends nothing to the node:

* the link stops answering: the job's record says `link_down_since` (the console and
  `rocmtui jobs` show "link to NODE down since ..."), and a line goes into the job's log;
* it answers again before the timeout (a blip the connection survives): the mark is cleared,
  the log says how long it was down, and the build goes on;
* it stays down for `timeout` seconds (the fleet file's `link_timeout_seconds`): the supervisor
  ends bake (SIGTERM, SIGKILL after a grace period) and the job is recorded `failed` with that
  evidence. Never `running` forever. The remote engine cancels the build itself once its end of
  the connection closes (when the link returns, or its own TCP gives up).

While the job has no TCP connection at all (between two of bake's connections) nothing
changes: a link already down stays down, and its clock keeps running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from rocmtui.core import tcpstate
from rocmtui.core.jobs.procstat import descendants
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.text.units import fmt_age, fmt_utc_clock

CHECK_PERIOD = 2.0  # seconds between two looks at the kernel's TCP table
MIN_RETRANSMITS = 2  # retransmissions in a row before a connection counts as not answering


class LinkEvent(Enum):
    """What changed at a check."""

    DOWN = "down"
    BACK = "back"
    GIVE_UP = "give up"


@dataclass
class LinkWatch:
    """The link state of one job's connections to node `node`."""

    node: str
    timeout: float
    down_since: float | None = None  # wall clock
    gave_up: bool = False

    def check(self, pids: list[int], now: float | None = None) -> LinkEvent | None:
        """Look at the connections of `pids`; the event, if the state changed."""
        now = time.time() if now is None else now
        if self.gave_up:  # decided: the evidence stays as it was when the build was given up
            return None
        view = tcpstate.link_view(pids, min_retransmits=MIN_RETRANSMITS)
        if view is not None and view.down:
            if self.down_since is None:
                self.down_since = now
                return LinkEvent.DOWN
        elif view is not None and self.down_since is not None:
            self.down_since = None
            return LinkEvent.BACK
        down = self.down_since
        if down is not None and not self.gave_up and now - down >= self.timeout:
            self.gave_up = True
            return LinkEvent.GIVE_UP
        return None

    def evidence(self, now: float | None = None) -> str:
        """`link to NODE down since HH:MM:SS UTC (Ns)` (to the moment it was given up)."""
        if self.down_since is None:
            return f"link to {self.node} up"
        now = time.time() if now is None else now
        if self.gave_up:
            now = min(now, self.down_since + self.timeout)
        since = self.down_since
        return f"link to {self.node} down since {fmt_utc_clock(since)} ({fmt_age(now - since)})"


# seconds bake gets after SIGTERM before SIGKILL once the link is given up: buildx spends them
# trying to cancel the solve over the dead link
KILL_GRACE = 5.0


class LinkGuard:
    """Runs a `LinkWatch` for the supervisor: records what it sees, ends bake when told to.

    `tick()` is called every `CHECK_PERIOD` seconds while bake runs; `message()` is the
    evidence to record when the job ends (None when the link had nothing to do with it).
    """

    def __init__(self, store: JobStore, job_id: str, node: str, timeout: float) -> None:
        self.store = store
        self.job_id = job_id
        self.watch = LinkWatch(node, timeout)
        self.term_at: float | None = None  # monotonic time bake was sent SIGTERM
        self.period = CHECK_PERIOD

    def _pids(self) -> list[int]:
        """bake and every process under it: docker starts its ssh in a session of its own,
        so the job's session alone would miss the very connection that matters."""
        return descendants(os.getpid())

    def tick(self, log: Callable[[str], object]) -> None:
        """Look at the link; record, log and act on what changed."""
        pids = self._pids()
        was_down = self.watch.down_since
        event = self.watch.check(pids)
        if event is LinkEvent.DOWN:
            self._mark(self.watch.down_since, log)
            log(self.watch.evidence() + ": the build waits for it")
        elif event is LinkEvent.BACK and was_down is not None:
            self._mark(None, log)
            log(f"link to {self.watch.node} back after {fmt_age(time.time() - was_down)}")
        elif event is LinkEvent.GIVE_UP:
            log(self.watch.evidence() + ": given up, ending bake")
            self.term_at = time.monotonic()
            _signal_all(pids, signal.SIGTERM)
        if self.term_at is not None and time.monotonic() - self.term_at > KILL_GRACE:
            _signal_all(pids, signal.SIGKILL)

    def _mark(self, since: float | None, log: Callable[[str], object]) -> None:
        """Record `link_down_since`; a store that cannot be written (a full disk) is said in
        the log and never ends the supervisor: the outcome matters more than the mark."""
        try:
            self.store.update(self.job_id, link_down_since=since)
        except (JobStoreError, OSError) as exc:
            log(f"could not record the link's state: {exc}")

    def message(self) -> str | None:
        """The evidence for the job's record: given up, or down when bake ended."""
        if self.watch.gave_up:
            return (
                f"{self.watch.evidence()}: given up "
                "(the remote engine cancels the build when its connection closes)"
            )
        if self.watch.down_since is not None:
            return f"{self.watch.evidence()} when bake ended"
        return None


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
