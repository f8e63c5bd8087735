"""Bake jobs that outlive the console: launch, record, follow, cancel, and catch a stall.

The public API (the console and the CLI call only these):

- `launch_job(config, bake, target, arch, node_name, push, yes, env, overrides) -> JobRecord`
- `list_jobs(config) -> list[JobRecord]` (live state, newest first), `get_job(ref, config)`
- `cancel_job(config, ref, grace)` (alias `cancel`), `stalled_jobs(store, config)`
- `follow_job(store, record, follow=True) -> Iterator[bytes]`, `LogFollower`
- `NodeJobOverlay(config)`: the monitor's `node_overlay` (`building` / `stalled` nodes)
- `JobStore` (the index), `JobRecord`, `build_command(...)` for display

Names are imported lazily: the supervisor (`python -m rocmtui.core.jobs.supervisor`) imports
this package first, and every millisecond it spends importing is launch latency.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmtui.core.jobs.control import (
        JobNotRunning,
        cancel_job,
        get_job,
        is_alive,
        job_pids,
        list_jobs,
        live_record,
        silent_seconds,
        stalled_jobs,
    )
    from rocmtui.core.jobs.follow import LogFollower, follow_job
    from rocmtui.core.jobs.launch import AlreadyRunning, launch_job
    from rocmtui.core.jobs.overlay import NodeJobOverlay
    from rocmtui.core.jobs.plan import (
        LaunchError,
        LaunchRefused,
        ReadOnlyRefused,
        build_command,
        known_arches,
        parse_overrides,
    )
    from rocmtui.core.jobs.store import AmbiguousJob, JobNotFound, JobRecord, JobStore

    cancel = cancel_job

_WHERE = {
    "JobNotRunning": "control",
    "cancel_job": "control",
    "cancel": "control",
    "get_job": "control",
    "is_alive": "control",
    "job_pids": "control",
    "list_jobs": "control",
    "live_record": "control",
    "silent_seconds": "control",
    "stalled_jobs": "control",
    "LogFollower": "follow",
    "NodeJobOverlay": "overlay",
    "follow_job": "follow",
    "AlreadyRunning": "launch",
    "LaunchError": "plan",
    "LaunchRefused": "plan",
    "ReadOnlyRefused": "plan",
    "build_command": "plan",
    "known_arches": "plan",
    "launch_job": "launch",
    "parse_overrides": "plan",
    "AmbiguousJob": "store",
    "JobNotFound": "store",
    "JobRecord": "store",
    "JobStore": "store",
}

__all__ = [
    "AlreadyRunning",
    "AmbiguousJob",
    "JobNotFound",
    "JobNotRunning",
    "JobRecord",
    "JobStore",
    "LaunchError",
    "LaunchRefused",
    "LogFollower",
    "NodeJobOverlay",
    "ReadOnlyRefused",
    "build_command",
    "cancel",
    "cancel_job",
    "follow_job",
    "get_job",
    "is_alive",
    "job_pids",
    "known_arches",
    "launch_job",
    "list_jobs",
    "live_record",
    "parse_overrides",
    "silent_seconds",
    "stalled_jobs",
]


def __getattr__(name: str) -> Any:
    """Import the public name's module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    attr = "cancel_job" if name == "cancel" else name
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value
