"""Each target of a bake group one job built, as a span of its own (`build_targets`).

A group bake makes one BuildKit history record per target; the job keeps the steps of one of
them (`buildkit_ref`), so its steps alone cannot say when each target started and ended. Once
the build has ended, the supervisor reads every target's record (bake's metadata names them:
`bakefiles.target_refs_from_metadata`) and keeps, per target, its first step's start and its
last step's end, on the node's BuildKit clock (`run.per_target` reconciles that with this
host's). A few numbers per target, read with the run's builds in one query, so a list of 200
runs never decodes a step. Blocking (SQLite, `buildx history logs`): a supervisor's or a
worker's.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence

from rocmtui.core.history.stepgraph import Step
from rocmtui.core.history.stepstore import (
    REPLAY_TIMEOUT,
    StepsUnavailable,
    load_steps,
    replay,
)
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.runs.run import TargetSpan

#: A group of more targets than this keeps the first ones' spans (a bound on the reads).
MAX_TARGETS = 64


#: A Dockerfile step, as `history.steps` counts them from a log: a position, then the word.
_DOCKERFILE_STEP = re.compile(r"\[[^\]]*\d+/\d+\] (\S+)")


def span_of(target: str, steps: Sequence[Step]) -> TargetSpan | None:
    """A target's span from its record's steps: the first start, the last end (None when a
    step started never ended), failed when a step failed, and its Dockerfile steps cached (no
    FROM, no BuildKit vertex: as `history.steps` counts a log). None when no step has a
    time."""
    starts = [s.started for s in steps if s.started is not None]
    if not starts:
        return None
    ends = [s.completed for s in steps if s.completed is not None]
    unended = any(s.started is not None and s.completed is None for s in steps)
    ended = None if unended or not ends else max(max(ends), min(starts))
    counted = [s for s in steps if (m := _DOCKERFILE_STEP.match(s.name)) and m.group(1) != "FROM"]
    cached = sum(1 for s in counted if s.cached)
    return TargetSpan(target, min(starts), ended, any(s.error for s in steps), len(counted), cached)


def save_spans(store: JobStore, job_id: str, spans: Iterable[TargetSpan]) -> None:
    """Keep (or replace) a job's target spans."""
    rows = [(job_id, s.target, s.started, s.ended, int(s.failed), s.steps, s.cached) for s in spans]
    with store.connect(write=True) as conn:
        conn.execute("DELETE FROM build_targets WHERE job_id = ?", (job_id,))
        conn.executemany(
            "INSERT INTO build_targets (job_id, target, started, ended, failed, steps, cached) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def keep_printed_spans(store: JobStore, job_id: str, printed: Sequence[TargetSpan]) -> None:
    """For a supervisor whose group build ended: the targets' times as bake printed them
    (`livetargets`), kept when no BuildKit record gave spans (a builder without history, or
    records that could not be read). Never raises: a view's help, not the build's."""
    if len(printed) < 2:
        return
    try:
        with store.connect() as conn:
            kept = conn.execute(
                "SELECT 1 FROM build_targets WHERE job_id = ? LIMIT 1", (job_id,)
            ).fetchone()
        if kept is None:
            save_spans(store, job_id, printed[:MAX_TARGETS])
    except Exception:
        return


def load_spans(conn: sqlite3.Connection, job_ids: Sequence[str]) -> dict[str, list[TargetSpan]]:
    """The target spans kept for these jobs (a job with none is absent)."""
    out: dict[str, list[TargetSpan]] = {}
    for start in range(0, len(job_ids), 500):
        chunk = list(job_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        for job_id, target, started, ended, failed, steps, cached in conn.execute(
            "SELECT job_id, target, started, ended, failed, steps, cached FROM build_targets "
            f"WHERE job_id IN ({marks}) ORDER BY started, target",
            chunk,
        ):
            end = None if ended is None else float(ended)
            span = TargetSpan(
                str(target), float(started), end, bool(failed), int(steps), int(cached)
            )
            out.setdefault(str(job_id), []).append(span)
    return out


def group_targets(conn: sqlite3.Connection) -> set[str]:
    """The targets (bake groups) some job built as several targets: a running build of one
    is drawn as one bar until it ends, and its lane says so."""
    return {
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT j.target FROM jobs j WHERE j.id IN "
            "(SELECT DISTINCT job_id FROM build_targets)"
        )
    }


def keep_target_spans(
    store: JobStore,
    job_id: str,
    main_ref: str | None,
    targets: Sequence[tuple[str, str]],
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout: float = REPLAY_TIMEOUT,
) -> str | None:
    """For a supervisor whose group build just ended: read each target's record (`argv` is
    `buildx history logs --progress rawjson` as the build's environment runs it, the ref goes
    last; the main ref's steps are the kept ones), all of them within `timeout`, and keep the
    spans. One line saying what went
    wrong, or None (never raises). A lone target keeps nothing: its job is its bar."""
    if len(targets) < 2:
        return None
    spans, missed = [], []
    deadline = time.monotonic() + timeout
    for target, ref in targets[:MAX_TARGETS]:
        left = deadline - time.monotonic()
        try:
            kept = load_steps(store, job_id) if ref == main_ref else None
            if kept is None and left <= 0:
                raise StepsUnavailable(f"no time left of {timeout:.0f} s for every target")
            if kept is None:
                kept = replay([*argv, ref], env, left, f"job {job_id} target {target}")
        except StepsUnavailable as exc:
            missed.append(f"{target}: {exc}")
            continue
        except Exception as exc:  # the store's or the machine's: said, never raised
            missed.append(f"{target}: {type(exc).__name__}")
            continue
        span = span_of(target, kept.steps)
        if span is None:
            missed.append(f"{target}: its record has no timed step")
        else:
            spans.append(span)
    try:
        if spans:
            save_spans(store, job_id, spans)
    except Exception as exc:
        return f"target spans not kept: {type(exc).__name__}"
    if missed:
        return f"target spans not read for {len(missed)} of {len(targets)}: {missed[0]}"
    return None


__all__ = [
    "MAX_TARGETS",
    "group_targets",
    "keep_printed_spans",
    "keep_target_spans",
    "load_spans",
    "save_spans",
    "span_of",
]
