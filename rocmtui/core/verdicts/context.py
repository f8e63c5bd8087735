"""`StallJudge`: a silent build's verdict, from what this process has seen of its node.

One judge lives per reading process (the monitor, the console, a one-shot command): the probe
round hands it every node snapshot (`observe`), whose vitals go into a bounded window per node;
the job readers (`jobs.control.live_record`) ask it for the verdict of each build silent past
`stall_after_seconds`. It adds the build's own facts: BuildKit's clipping from the log's tail
(read again only when the log changed, and a silent log does not), the node's OOM count when
the build began (kept per job from the first window that reached back to it), and the build's
usual time from the cost book (re-read at most once a minute). The OOM count at the start
comes first from the job's folder, where the supervisor of rocmtui's own builds kept it
(`atstart.py`): a one-shot command has no window reaching back to the start. Blocking (a tail
read, SQLite): call it where the jobs are read, never on an event loop.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocmtui.core.jobs.evidence import clipped_limit, read_tail
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot
from rocmtui.core.states import NodeState
from rocmtui.core.verdicts.judge import judge
from rocmtui.core.verdicts.verdict import Reading, SilentBuild, Thresholds, Usual, Verdict
from rocmtui.core.verdicts.window import VitalsWindow, spacing_for

if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.jobs.record import JobRecord

TAIL_BYTES = 256 * 1024

#: the usual time of a target x arch at a moment (`costbook.usual.UsualTimes.of`)
UsualLookup = Callable[[str, str, float], Usual | None]


class StallJudge:
    """Verdicts for one fleet's silent builds (thread-safe; see the module docstring)."""

    def __init__(
        self,
        config: FleetConfig,
        usual: UsualLookup | None = None,
        window: VitalsWindow | None = None,
    ) -> None:
        """`usual`: the cost book's usual times (`costbook.usual.UsualTimes(store).of`); None:
        only the busy threshold ends a busy silence."""
        self.thresholds = Thresholds(config.stall_after_seconds, config.stall_busy_after_seconds)
        self.window = window or VitalsWindow(spacing_for(config.stall_after_seconds))
        self.usual = usual
        self._tails: dict[str, tuple[float, int, str | None]] = {}
        self._oom_at_start: dict[str, int] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- what the rounds saw

    def observe(self, snapshot: NodeSnapshot) -> None:
        """Keep a node snapshot's word: its vitals, or that the node did not answer."""
        unreachable = None
        if snapshot.state is NodeState.DOWN:
            unreachable = snapshot.reason or "down"
        vitals = snapshot.vitals
        taken_at = vitals.taken_at if vitals is not None else snapshot.probed_at
        self.window.add(snapshot.name, Reading(taken_at, vitals, unreachable))

    def observe_fleet(self, fleet: FleetSnapshot) -> None:
        """Keep every node's word from one round (interim rounds too: each node's own time
        orders them, and an older one is ignored)."""
        for node in fleet.nodes:
            self.observe(node)

    # ---------------------------------------------------------------- the verdict

    def verdict(self, record: JobRecord, silent: float, now: float | None = None) -> Verdict:
        """The verdict on `record`, silent for `silent` seconds (past `stall_after`)."""
        now = time.time() if now is None else now
        build = SilentBuild(
            node=record.node,
            silent_seconds=silent,
            clipped_at=self._clipped(record),
            oom_kills_at_start=self._oom_at(record),
            usual=self.usual(record.target, record.arch, now) if self.usual else None,
            link_down_since=record.link_down_since,
        )
        return judge(build, self.window.readings(record.node), self.thresholds, now)

    def _clipped(self, record: JobRecord) -> str | None:
        """BuildKit's limit when it clipped the open step, from the log's tail; read again
        only when the log's size or mtime moved."""
        try:
            st = os.stat(record.log_path)
        except OSError:
            return None
        with self._lock:
            kept = self._tails.get(record.id)
        if kept is not None and kept[0] == st.st_mtime and kept[1] == st.st_size:
            return kept[2]
        lines, _ = read_tail(record.log_path, TAIL_BYTES)
        limit = clipped_limit(lines)
        with self._lock:
            self._tails[record.id] = (st.st_mtime, st.st_size, limit)
        return limit

    def _oom_at(self, record: JobRecord) -> int | None:
        """The node's OOM count when the build began, kept from the first answer: the one its
        supervisor read into the job's folder (our own builds), else the window's."""
        # on first use: kept off `status`
        from rocmtui.core.verdicts.atstart import oom_at_start

        with self._lock:
            kept = self._oom_at_start.get(record.id)
        if kept is not None:
            return kept
        count = oom_at_start(record.path) if record.job_dir else None
        if count is None:
            count = self.window.oom_kills_at(record.node, record.started_at)
        if count is not None:
            with self._lock:
                self._oom_at_start[record.id] = count
        return count

    def forget_except(self, job_ids: set[str]) -> None:
        """Drop what is kept for jobs no longer running."""
        with self._lock:
            for key in set(self._tails) - job_ids:
                del self._tails[key]
            for key in set(self._oom_at_start) - job_ids:
                del self._oom_at_start[key]


__all__ = ["StallJudge", "UsualLookup"]
