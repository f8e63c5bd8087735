"""Adapters from the core's records to the console's frozen views (blocking; called by workers).

The core is written in parallel with the console; this module is where the console meets its
exact names, read defensively (`getattr` with defaults) so a renamed field degrades one column
instead of crashing a panel.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rocmtui.app.model import (
    BakePlan,
    BakeView,
    JobView,
    ProgressView,
    StepView,
    VariableView,
)
from rocmtui.core.config import FleetConfig

MAX_PROGRESS_READ = 4 << 20  # bytes of new log read per job per round; the rest next round


def _get(obj: Any, name: str, default: Any = None) -> Any:
    value = getattr(obj, name, default) if not isinstance(obj, Mapping) else obj.get(name)
    return default if value is None else value


def _str(value: Any) -> str:
    return "" if value is None else str(value)


# ---------------------------------------------------------------------------- bake file


def bake_view(path: Path, bake: Any, variables: Iterable[Any]) -> BakeView:
    """The bake file as the console shows it."""
    targets = _get(bake, "targets", {})
    names = tuple(targets) if not isinstance(targets, str) else ()
    pushing = frozenset(_get(bake, "pushing_targets", ()) or ())
    arches = tuple(_get(bake, "arches", ()) or ())
    views = tuple(
        VariableView(
            name=_str(_get(v, "name")),
            value=_str(_get(v, "value", "")),
            default=_str(_get(v, "default", "")),
            source=_str(_get(v, "source", "default")),
            secret=bool(_get(v, "secret", False)),
        )
        for v in variables
    )
    return BakeView(
        path=path, targets=names, pushing_targets=pushing, arches=arches, variables=views
    )


def plan(
    config: FleetConfig,
    bake: Any,
    target: str,
    arch: str,
    node: str,
    push: bool,
    env: Mapping[str, str],
) -> BakePlan:
    """Resolve a plan: the exact command line and `bake --print` with and without the arch."""
    from rocmtui.core import bakeprint

    command: tuple[str, ...] = ()
    try:
        from rocmtui.core.jobs import build_command

        command = tuple(build_command(config, target=target, arch=arch, node_name=node, push=push))
    except ImportError:
        command = (
            "docker",
            "buildx",
            "bake",
            "--file",
            str(config.bake_file),
            *(["--push"] if push else []),
            "--",
            target,
        )
    overrides = {"GFX_ARCH": arch}
    launch_env = bakeprint.bake_environment(env, overrides)
    default_env = bakeprint.bake_environment(env, {})
    timeout = 20.0
    resolved = _print_lines(bakeprint.bake_print(config.bake_file, [target], launch_env, timeout))
    baseline = _print_lines(bakeprint.bake_print(config.bake_file, [target], default_env, timeout))
    base = set(baseline)
    changed = frozenset(i for i, line in enumerate(resolved) if line not in base)
    return BakePlan(
        target=target,
        arch=arch,
        node=node,
        push=push,
        command=command,
        resolved=tuple(resolved),
        changed=changed,
    )


def _print_lines(printed: Any) -> list[str]:
    """`bake --print` output (text, dict or a result object) as JSON lines."""
    import json

    for name in ("text", "stdout", "output"):
        inner = getattr(printed, name, None)
        if isinstance(inner, str):
            printed = inner
            break
    else:
        data = getattr(printed, "data", None) or getattr(printed, "json", None)
        if data is not None and not callable(data):
            printed = data
    if isinstance(printed, bytes):
        printed = printed.decode("utf-8", "replace")
    if not isinstance(printed, str):
        printed = json.dumps(printed, indent=2, sort_keys=True, default=str)
    lines: list[str] = printed.splitlines()
    return lines


# ---------------------------------------------------------------------------- jobs


class ProgressCache:
    """Per-job progress trackers fed incrementally from each log's new bytes."""

    def __init__(self) -> None:
        self._trackers: dict[str, tuple[Any, int]] = {}

    def progress(self, job_id: str, log_path: Path | None) -> ProgressView | None:
        """Feed the job's new log bytes to its tracker and return the current progress."""
        if log_path is None:
            return None
        try:
            from rocmtui.core.progress import ProgressTracker
        except ImportError:
            return None
        tracker, offset = self._trackers.get(job_id, (None, 0))
        if tracker is None:
            tracker = ProgressTracker()
        try:
            size = os.stat(log_path).st_size
            if size < offset:  # truncated or replaced: start over
                tracker, offset = ProgressTracker(), 0
            if size > offset:
                with open(log_path, "rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(MAX_PROGRESS_READ)
                cut = chunk.rfind(b"\n") + 1  # feed whole lines only
                if cut:
                    _feed(tracker, chunk[:cut])
                    offset += cut
        except OSError:
            pass
        self._trackers[job_id] = (tracker, offset)
        return progress_view(_snapshot(tracker))

    def forget_except(self, keep: Iterable[str]) -> None:
        """Drop trackers of jobs no longer listed (memory stays bounded)."""
        wanted = set(keep)
        for job_id in list(self._trackers):
            if job_id not in wanted:
                del self._trackers[job_id]


def _feed(tracker: Any, data: bytes) -> None:
    for name in ("feed_bytes", "feed"):
        method = getattr(tracker, name, None)
        if method is not None:
            try:
                method(data)
            except TypeError:
                for line in data.decode("utf-8", "replace").splitlines():
                    method(line)
            return


def _snapshot(tracker: Any) -> Any:
    for name in ("snapshot", "progress", "result"):
        attr = getattr(tracker, name, None)
        if attr is not None:
            return attr() if callable(attr) else attr
    return tracker


def progress_view(progress: Any) -> ProgressView | None:
    """The core's JobProgress as a ProgressView."""
    if progress is None:
        return None
    ninja = _get(progress, "ninja")
    steps = tuple(
        StepView(
            number=_str(_get(s, "number", _get(s, "id", ""))),
            name=_str(_get(s, "name", "")),
            status=_str(_get(s, "status", "")),
            duration=_get(s, "duration"),
            first_line=_get(s, "first_line"),
        )
        for s in (_get(progress, "steps", ()) or ())
    )
    current = _get(progress, "current_step")
    return ProgressView(
        step=_str(_get(current, "name", current)) if current is not None else None,
        steps_done=int(_get(progress, "steps_done", _get(progress, "done", 0))),
        steps_total=int(_get(progress, "steps_total", _get(progress, "total", 0))),
        cached=int(_get(progress, "cached", 0)),
        ninja_done=_get(ninja, "done", _get(progress, "ninja_done")),
        ninja_total=_get(ninja, "total", _get(progress, "ninja_total")),
        rate=_get(ninja, "rate", _get(progress, "rate")),
        eta=_get(ninja, "eta", _get(progress, "eta")),
        last_output_at=_get(progress, "last_output_at", _get(progress, "last_output")),
        error_step=_get(progress, "error_step"),
        steps=steps,
    )


def job_view(record: Any, progress: ProgressView | None) -> JobView:
    """The core's JobRecord as a JobView."""
    log = _get(record, "log_path")
    return JobView(
        id=_str(_get(record, "id", _get(record, "job_id", ""))),
        target=_str(_get(record, "target", "")),
        arch=_get(record, "arch"),
        node=_str(_get(record, "node", _get(record, "node_name", ""))),
        state=_str(_get(record, "state", "lost")),
        started_at=float(_get(record, "started_at", 0.0)),
        user=_str(_get(record, "user", "")),
        ended_at=_get(record, "ended_at"),
        log_path=Path(log) if log else None,
        exit_code=_get(record, "exit_code"),
        digest=_get(record, "digest"),
        push=bool(_get(record, "push", False)),
        evidence=_get(record, "evidence"),
        progress=progress,
    )


def list_jobs(config: FleetConfig, cache: ProgressCache, now: float) -> tuple[JobView, ...]:
    """Every job in the store (newest first) with progress for the active ones."""
    from rocmtui.core.jobs import JobStore

    store = JobStore(config)
    records = list(store.list())
    views = []
    active_ids = []
    for record in records[:100]:
        view = job_view(record, None)
        if view.active or view.state == "failed":
            active_ids.append(view.id)
            view = job_view(record, cache.progress(view.id, view.log_path))
        views.append(view)
    cache.forget_except(active_ids)
    return tuple(views)


def launch(config: FleetConfig, bake: Any, plan: BakePlan, env: Mapping[str, str]) -> JobView:
    """Start a plan through the core; the core refuses what it must (locks, names, login)."""
    from rocmtui.core.jobs import launch_job

    record = launch_job(
        config,
        bake,
        target=plan.target,
        arch=plan.arch,
        node_name=plan.node,
        push=plan.push,
        yes=True,  # the dialog already asked twice for a pushing target
        env=dict(env),
        overrides={},
    )
    return job_view(record, None)


def cancel(config: FleetConfig, job_id: str) -> None:
    """Cancel a job through the core."""
    from rocmtui.core.jobs import cancel as cancel_job

    cancel_job(config, job_id)
