"""A job's live state, and cancel.

The stored state is what was recorded; the state to show is computed on every read:
- recorded end (succeeded, failed, cancelled, lost): that;
- the supervisor's flock is held: `running`, or `stalled` when the log has not grown for the
  fleet file's `stall_after_seconds` (from the log's mtime, so it goes back to `running` the
  moment output resumes) — unless bake has ended: then the outcome its supervisor put in the
  job's outcome slot (a full state disk refused the store), or what /proc says of bake
  ("ended; outcome not yet recorded: ...", `outcome.ended_view`), never `running`;
- nobody holds the flock and no outcome was recorded: the outcome slot's outcome when it holds
  one (recorded in the store by this reader), else `lost` (and recorded as such), never
  `running`.

Cancel: SIGTERM to the job's process group (the supervisor's own session and group), SIGKILL to
bake's processes after a grace period, then any straggler in the job's *session* (helpers such
as docker's ssh connection put themselves in a group of their own), each pid checked against
its start time so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs import locks
from rocmtui.core.jobs.evidence import stall_evidence
from rocmtui.core.jobs.outcome import ended_view, read_outcome, with_kept_outcome
from rocmtui.core.jobs.procstat import is_same_process, job_processes, proc_stat
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.refusals import refuse_if_read_only
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_age, fmt_utc_clock

if TYPE_CHECKING:
    from rocmtui.core.verdicts.context import StallJudge

DEFAULT_GRACE = 10.0
EVIDENCE_TTL = 15.0  # seconds stall evidence (a CPU sample, a buildx call) is reused
LOST_MESSAGE = "the supervisor is gone and recorded no outcome"


class StartedElsewhere(Exception):
    """Cancel asked for a build rocmtui did not start: only the client that started it can
    cancel it (BuildKit cancels a build when its client goes). The message says so and names
    that client when BuildKit's record does."""

    def __init__(self, record: JobRecord) -> None:
        assert record.outside is not None
        super().__init__(f"job {record.id}: {record.outside.cancel_refusal()}")
        self.record = record


class JobNotRunning(Exception):
    """Cancel asked for a job that has already ended."""

    def __init__(self, record: JobRecord) -> None:
        super().__init__(f"job {record.id} already ended: {record.state}")
        self.record = record


def silent_seconds(record: JobRecord, now: float | None = None) -> float | None:
    """Seconds since the job's log last changed (None when there is no log)."""
    try:
        mtime = os.stat(record.log_path).st_mtime
    except OSError:
        return None
    return max(0.0, (time.time() if now is None else now) - mtime)


def is_alive(record: JobRecord) -> bool:
    """True while the job's supervisor lives (it holds the job's flock)."""
    return locks.is_locked(record.lock_path)


def live_record(
    store: JobStore,
    record: JobRecord,
    stall_after: float,
    now: float | None = None,
    config: FleetConfig | None = None,
    with_evidence: bool = False,
    judge: StallJudge | None = None,
) -> JobRecord:
    """`record` with `state` as it is now (see the module doc); a job found lost is recorded
    as lost. With `with_evidence`, a stalled job's evidence is gathered and stored. With a
    `judge`, a build silent past `stall_after` is `stalled` only when its verdict says so
    (`rocmtui.core.verdicts`); without one, silence alone decides."""
    now = time.time() if now is None else now
    if record.ended_at is not None:
        return record
    if is_alive(record):
        view = ended_view(record, now)  # bake has ended: never `running`
        if view is not None:
            return view
        silent = silent_seconds(record, now)
        if record.link_down_since is not None:  # its supervisor sees the remote link down
            return replace(record, state=JobState.RUNNING, evidence=link_evidence(record, now))
        if silent is None or silent < stall_after:
            return replace(record, state=JobState.RUNNING, evidence=None)
        gathered_at = record.evidence_at or 0.0
        same_silence = record.evidence is not None and gathered_at >= now - silent
        if with_evidence and not (same_silence and now - gathered_at < EVIDENCE_TTL):
            node = config.node(record.node) if config else None
            # a judge reads the node's CPU from its vitals: no sample of our own then
            evidence = stall_evidence(record.log_path, silent, node, sample_cpu=judge is None)
            try:
                record = store.update(record.id, evidence=evidence, evidence_at=now)
            except JobStoreError:  # a full disk: a reader shows what it found all the same
                record = replace(record, evidence=evidence, evidence_at=now)
        elif same_silence and record.evidence:
            # evidence gathered during this silence: only its age has moved on
            rest = record.evidence.partition(";")[2]
            record = replace(record, evidence=f"silent {fmt_age(silent)};{rest}".rstrip(";"))
        else:
            record = replace(record, evidence=f"silent {fmt_age(silent)}")
        if judge is not None:
            return judged(record, judge, silent, now)
        return replace(record, state=JobState.STALLED)
    # nobody holds the lock: the supervisor may have recorded an outcome just now
    fresh = store.get(record.id)
    if fresh.ended_at is not None:
        return fresh
    kept = read_outcome(fresh.path)
    if kept is not None:  # the supervisor ended with its outcome only in the slot: record it
        try:
            return store.update(fresh.id, only_if_unfinished=True, **kept)
        except JobStoreError:
            return with_kept_outcome(fresh, kept)
    if fresh.outside is not None:
        # a build started elsewhere runs whether or not a follower copies its output: it is
        # never `lost` for want of one (whoever discovers it next starts one); its silence
        # still makes it `stalled`
        silent = silent_seconds(fresh, now)
        stalled = silent is not None and silent >= stall_after
        note = "its output is not being followed on this host yet"
        if stalled and silent is not None:
            note = f"silent {fmt_age(silent)}; {note}"
            if judge is not None:
                return judged(replace(fresh, evidence=note), judge, silent, now)
        return replace(
            fresh, state=JobState.STALLED if stalled else JobState.RUNNING, evidence=note
        )
    try:
        last_sign = max(fresh.started_at, os.stat(fresh.log_path).st_mtime)
    except OSError:
        last_sign = fresh.started_at
    ended = min(now, last_sign)
    try:
        return store.update(
            fresh.id,
            only_if_unfinished=True,
            state=JobState.LOST,
            ended_at=ended,
            message=LOST_MESSAGE,
        )
    except JobStoreError:  # a full disk: said as lost now, recorded by a later reader
        return replace(fresh, state=JobState.LOST, ended_at=ended, message=LOST_MESSAGE)


def judged(record: JobRecord, judge: StallJudge, silent: float, now: float) -> JobRecord:
    """A silent `record` with its verdict: `stalled` or `running` (quiet), the verdict's line
    first in its evidence, then what the evidence added past its "silent ..." (the open step,
    BuildKit's clipping, the builder's status)."""
    verdict = judge.verdict(record, silent, now)
    rest = (record.evidence or "").partition(";")[2].strip()
    return replace(
        record,
        state=JobState.STALLED if verdict.stalled else JobState.RUNNING,
        evidence="; ".join(p for p in (verdict.line, rest) if p),
        verdict=str(verdict.kind),
        verdict_line=verdict.line,
    )


def link_evidence(record: JobRecord, now: float) -> str:
    """`link to NODE down since HH:MM:SS UTC (age)` for a job whose link is down."""
    since = record.link_down_since or now
    return f"link to {record.node} down since {fmt_utc_clock(since)} ({fmt_age(now - since)})"


def _stall_after(config: FleetConfig | None, stall_after: float | None) -> float:
    if stall_after is not None:
        return stall_after
    return config.stall_after_seconds if config is not None else 900.0


def list_jobs(
    config: FleetConfig | None = None,
    store: JobStore | None = None,
    limit: int | None = 100,
    with_evidence: bool = False,
    stall_after: float | None = None,
    env: Mapping[str, str] | None = None,
    judge: StallJudge | None = None,
) -> list[JobRecord]:
    """Jobs newest first, each with its live state (what `rocmtui jobs` shows)."""
    store = store or JobStore.for_config(config, env)
    after = _stall_after(config, stall_after)
    now = time.time()
    return [
        live_record(store, r, after, now, config, with_evidence, judge)
        for r in store.list(limit=limit)
    ]


def get_job(
    ref: str,
    config: FleetConfig | None = None,
    store: JobStore | None = None,
    with_evidence: bool = False,
    env: Mapping[str, str] | None = None,
    judge: StallJudge | None = None,
) -> JobRecord:
    """The job named by an id, unique prefix or suffix, with its live state."""
    store = store or JobStore.for_config(config, env)
    record = store.resolve(ref)
    after = _stall_after(config, None)
    return live_record(store, record, after, None, config, with_evidence, judge)


def stalled_jobs(
    store: JobStore | None,
    config: FleetConfig,
    with_evidence: bool = False,
    judge: StallJudge | None = None,
) -> list[JobRecord]:
    """Running jobs silent for longer than the fleet file's `stall_after_seconds`.

    `rocmtui status` exits 1 while this is non-empty. Cheap without evidence (a lock check and
    a stat per unfinished job).
    """
    store = store or JobStore.for_config(config)
    now = time.time()
    out = []
    for record in store.list(limit=None, unfinished_only=True):
        after = config.stall_after_seconds
        live = live_record(store, record, after, now, config, with_evidence, judge)
        if live.state is JobState.STALLED:
            out.append(live)
    return out


def _wait(condition: object, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if condition():  # type: ignore[operator]
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def _kill_each(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def job_pids(record: JobRecord) -> list[int]:
    """Live processes of the job: its session and group, started no earlier than the
    supervisor (a reused session number from before is never matched)."""
    sid = record.supervisor_pid
    if not sid or record.supervisor_start is None:
        return []
    return job_processes(sid, sid, record.supervisor_start)


def cancel_job(
    config: FleetConfig | None,
    ref: str,
    grace: float = DEFAULT_GRACE,
    store: JobStore | None = None,
    env: Mapping[str, str] | None = None,
) -> JobRecord:
    """Cancel a running job; returns its final record (state `cancelled`).

    SIGTERM to the process group; after `grace` seconds SIGKILL to bake's processes (the
    supervisor then records the outcome); SIGKILL to whatever is left of the session after
    that. Raises `JobNotRunning` for a job that has already ended, `StartedElsewhere` for a
    build rocmtui did not start, `ReadOnlyRefused` when the fleet is read-only.
    """
    refuse_if_read_only(config, "cancelling a build")
    store = store or JobStore.for_config(config, env)
    record = store.resolve(ref)
    if record.ended_at is not None:
        raise JobNotRunning(record)
    kept = read_outcome(record.path)
    if kept is not None:  # ended; its outcome waits in the slot for room in the store
        raise JobNotRunning(with_kept_outcome(record, kept))
    if record.outside is not None:
        raise StartedElsewhere(record)
    # a supervisor that is alive but has not written its pid yet is a few ms from doing so
    if is_alive(record) and not record.supervisor_pid:
        _wait(lambda: store.get(record.id).supervisor_pid, 3.0)
    record = store.update(record.id, cancel_requested_at=time.time())
    sup = record.supervisor_pid
    sup_alive = is_same_process(sup, record.supervisor_start)
    if sup and sup_alive:
        stat = proc_stat(sup)
        if stat is not None and stat.pgid == sup:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(sup, signal.SIGTERM)
    else:
        _kill_each(job_pids(record), signal.SIGTERM)

    def bake_gone() -> bool:
        return not any(p != sup for p in job_pids(record))

    if not _wait(lambda: not is_alive(record) or bake_gone(), grace):
        _kill_each([p for p in job_pids(record) if p != sup], signal.SIGKILL)
    # the supervisor records `cancelled` once bake is gone; give it a moment, then insist
    if not _wait(lambda: not is_alive(record), 5.0):
        _kill_each(job_pids(record), signal.SIGKILL)
        _wait(lambda: not is_alive(record), 5.0)
    leftovers = job_pids(record)
    if leftovers:
        _kill_each(leftovers, signal.SIGKILL)
        _wait(lambda: not job_pids(record), 5.0)
    final = store.update(
        record.id,
        only_if_unfinished=True,
        state=JobState.CANCELLED,
        ended_at=time.time(),
        message="cancelled; the supervisor was killed before it could record it",
    )
    return _remote_check(store, final, config, env)


def _remote_check(
    store: JobStore, record: JobRecord, config: FleetConfig | None, env: Mapping[str, str] | None
) -> JobRecord:
    """For a job on a remote node: ask its engine that the build stopped there too, and add
    the answer to the record's message (`remote.confirm_stopped`)."""
    node = config.node(record.node) if config else None
    if node is None:
        return record
    # on first use: kept off `status`
    from rocmtui.core.jobs import remote

    others = any(
        r.node == record.node and r.id != record.id and is_alive(r)
        for r in store.list(limit=None, unfinished_only=True)
    )
    said = remote.confirm_stopped(node, config, os.environ if env is None else env, others)
    if said is None:
        return record
    message = "; ".join(m for m in (record.message, said) if m)
    return store.update(record.id, message=message)


__all__ = [
    "JobNotRunning",
    "StartedElsewhere",
    "cancel_job",
    "get_job",
    "is_alive",
    "job_pids",
    "list_jobs",
    "live_record",
    "silent_seconds",
    "stalled_jobs",
]
