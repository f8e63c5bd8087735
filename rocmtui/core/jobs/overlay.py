"""Jobs seen from the fleet: a node is `building` while a job runs on it, `stalled` while one
of its jobs is stalled. `NodeJobOverlay` is the `node_overlay` hook of `core.probes.round`.

The monitor calls the hook on its event loop for every node of every round, so the job states
are read at most once per `max_age` seconds (one SQLite query, then a lock check and a stat per
unfinished job: a few milliseconds) and served from memory in between.
"""

from __future__ import annotations

import threading
import time

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.usual import UsualTimes
from rocmtui.core.jobs.control import live_record
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.snapshots import NodeSnapshot
from rocmtui.core.states import JobState, NodeState
from rocmtui.core.verdicts.context import StallJudge


def state_with_jobs(state: NodeState, building: bool, stalled: bool) -> NodeState:
    """The overlay's rule: only an `ok` node becomes `stalled` (one of its jobs is) or
    `building` (one runs there); down and unknown stay what the engine said."""
    if state is not NodeState.OK:
        return state
    if stalled:
        return NodeState.STALLED
    return NodeState.BUILDING if building else state


class NodeJobOverlay:
    """`node_overlay` for `FleetMonitor` / `probe_fleet` (and so `rocmtui status` exits 1 while
    a job is stalled: `stalled` is not a healthy node state). A node that is down or unknown
    stays so; only an `ok` node becomes `building` or `stalled`."""

    def __init__(
        self,
        config: FleetConfig,
        store: JobStore | None = None,
        max_age: float = 1.0,
        judge: StallJudge | None = None,
    ) -> None:
        """`max_age`: seconds the job states read from the store are reused. `judge` gives
        silent builds their verdict from the vitals of the snapshots this overlay sees (one is
        made when not given)."""
        self.config = config
        self.store = store or JobStore.for_config(config)
        self.max_age = max_age
        self.judge = judge or StallJudge(config, UsualTimes(self.store).of)
        self._lock = threading.Lock()
        self._read_at = 0.0
        self._active: dict[str, list[JobRecord]] = {}
        self._stored: dict[str, list[JobRecord]] = {}  # the same jobs as stored, by node
        self.error: str | None = None  # why the last read of the store failed, if it did

    def active_jobs(self, node: str) -> list[JobRecord]:
        """Running or stalled jobs on `node`, with live state (re-read when stale)."""
        return list(self._current().get(node, ()))

    def invalidate(self) -> None:
        """Read the store again on the next call (new jobs were just made)."""
        with self._lock:
            self._read_at = 0.0

    def all_active(self) -> dict[str, list[JobRecord]]:
        """Running or stalled jobs (rocmtui's own and builds started elsewhere) by node."""
        return {node: list(jobs) for node, jobs in self._current().items()}

    def stalled_jobs(self) -> list[JobRecord]:
        """Every stalled job, on any node (configured or not), from the same read as the
        node states."""
        jobs = [j for node_jobs in self._current().values() for j in node_jobs]
        return [j for j in jobs if j.state is JobState.STALLED]

    def _current(self) -> dict[str, list[JobRecord]]:
        """Active jobs by node, re-read from the store when older than `max_age`."""
        with self._lock:
            return self._current_locked()

    def _current_locked(self) -> dict[str, list[JobRecord]]:
        if time.monotonic() - self._read_at >= self.max_age:
            self._refresh()
        return self._active

    def _live(self, record: JobRecord, now: float) -> JobRecord:
        after = self.config.stall_after_seconds
        return live_record(self.store, record, after, now, self.config, judge=self.judge)

    def _refresh(self) -> None:
        active: dict[str, list[JobRecord]] = {}
        stored: dict[str, list[JobRecord]] = {}
        now = time.time()
        try:
            records = self.store.list(limit=None, unfinished_only=True)
            self.error = None
        except Exception as exc:  # an unreadable store must not take the fleet view down
            records = []
            self.error = str(exc) or type(exc).__name__
        for record in records:
            live = self._live(record, now)
            if live.state in (JobState.RUNNING, JobState.STALLED):
                active.setdefault(live.node, []).append(live)
                stored.setdefault(live.node, []).append(record)
        self._active = active
        self._stored = stored
        self._read_at = time.monotonic()
        self.judge.forget_except({r.id for rs in stored.values() for r in rs})

    def _rejudge(self, node: str) -> list[JobRecord]:
        """The node's jobs judged again with the reading just kept (the store was read at the
        round's first node, before this node's vitals came in)."""
        with self._lock:
            self._current_locked()
            jobs = self._active.get(node, [])
            if not any(j.verdict is not None for j in jobs):
                return list(jobs)
            now = time.time()
            fresh = [self._live(r, now) for r in self._stored.get(node, [])]
            self._active[node] = [
                j for j in fresh if j.state in (JobState.RUNNING, JobState.STALLED)
            ]
            return list(self._active[node])

    def again(self, snapshot: NodeSnapshot) -> NodeSnapshot:
        """Lay the overlay anew on a snapshot it already went over (new vitals came in): a
        `building` or `stalled` state is its own, laid over `ok`."""
        if snapshot.state in (NodeState.BUILDING, NodeState.STALLED):
            snapshot = replace(snapshot, state=NodeState.OK, reason=None)
        return self(snapshot)

    def silent_nodes(self) -> set[str]:
        """Nodes with a build silent past the stall threshold (judged), from the last read."""
        return {node for node, jobs in self._current().items() if any(j.verdict for j in jobs)}

    def __call__(self, snapshot: NodeSnapshot) -> NodeSnapshot:
        """The node's snapshot with `building` / `stalled` laid over `ok` (its vitals kept
        for the verdicts first, whatever its state)."""
        self.judge.observe(snapshot)
        if snapshot.state is not NodeState.OK:
            return snapshot
        jobs = self._rejudge(snapshot.name)
        stalled = next((j for j in jobs if j.state is JobState.STALLED), None)
        state = state_with_jobs(snapshot.state, bool(jobs), stalled is not None)
        if stalled is not None:
            reason = f"job {stalled.id} ({stalled.target}) stalled: {stalled.evidence or ''}"
            return replace(snapshot, state=state, reason=reason.strip())
        return snapshot if state is snapshot.state else replace(snapshot, state=state)
