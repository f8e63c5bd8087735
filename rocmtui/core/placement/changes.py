"""Which variables a launch changes, and what rebuilds that changed the same ones met.

A rebuild's cache condition follows from what it changes: a version only the last stage reads
leaves the stages before it cached (`hot`), a variable every stage reads rebuilds them all
(`warm` or `cold`, as sccache answers). The history says which is which without reading the
Dockerfile: each quick rebuild (started within `HOT_WITHIN` of a succeeded build before it on
the same node) is kept with the names of the variables it set otherwise than that build, and
the condition it met. `choose.predict` looks there for the launch's own change.

Blocking (the job store: one record per build read, at most `READ_PER_NODE` per node).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from rocmtui.core.costbook.book import CostBook, CostFilter, CostRow
from rocmtui.core.costbook.cost import Condition
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.placement.choose import HOT_WITHIN
from rocmtui.core.placement.facts import Rebuild
from rocmtui.core.states import JobState

#: A node's newest this many builds of the target × arch are read for their variables.
READ_PER_NODE = 12
REDACTED = "<redacted:"  # a secret's value is not kept: its changes cannot be told


def changed_names(before: Mapping[str, str], after: Mapping[str, str]) -> frozenset[str]:
    """The variables set in either with different values (or set in one only)."""
    return frozenset(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _variables(store: JobStore, job_id: str) -> dict[str, str] | None:
    from rocmtui.core.jobs.store import JobStoreError

    try:
        had = dict(store.get(job_id).overrides)
    except (JobStoreError, KeyError, LookupError, OSError):
        return None
    return None if any(REDACTED in v for v in had.values()) else had


def variable_changes(
    store: JobStore,
    target: str,
    arch: str,
    overrides: Mapping[str, str],
    retention_days: float,
    fleet_set: Mapping[str, str] | None = None,
) -> tuple[dict[str, frozenset[str]], list[Rebuild]]:
    """Per node, the names the launch (`overrides`) changes against its newest build of
    `target` × `arch`; and every quick rebuild among each node's newest builds. A record
    carries the fleet file's variables too (`fleet_set`): those the launch does not set are
    the fleet's, the same for every build, and left out of the launch's comparison."""
    by: dict[str, list[CostRow]] = {}
    for row in CostBook(store, retention_days).rows(CostFilter(target=target, arch=arch)):
        by.setdefault(row.node, []).append(row)
    launch: dict[str, frozenset[str]] = {}
    rebuilds: list[Rebuild] = []
    ok = JobState.SUCCEEDED.value
    for node, rows in by.items():
        newest = rows[-READ_PER_NODE:]
        seen = [(r, _variables(store, r.job_id)) for r in newest]
        last = seen[-1][1]
        if last is not None:
            mine = {k: v for k, v in last.items() if k in overrides or k not in (fleet_set or {})}
            launch[node] = changed_names(mine, overrides)
        for (before, had), (after, has) in itertools.pairwise(seen):
            if had is None or has is None or after.condition is Condition.UNKNOWN:
                continue
            quick = after.started_at - before.started_at <= HOT_WITHIN
            if quick and before.outcome == ok and after.outcome == ok:
                rebuilds.append(
                    Rebuild(node, after.started_at, changed_names(had, has), after.condition)
                )
    return launch, rebuilds


__all__ = ["READ_PER_NODE", "changed_names", "variable_changes"]
