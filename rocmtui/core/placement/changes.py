"""Which variables a launch changes, and what rebuilds that changed the same ones met.

A rebuild's cache condition follows from what it changes: a version only the last stage reads
leaves the stages before it cached (`hot`), a variable every stage reads rebuilds them all
(`warm` or `cold`, as sccache answers). The history says which is which without reading the
Dockerfile: each quick rebuild (started within `HOT_WITHIN` of a succeeded build before it on
the same node) is kept with the names of the variables it set otherwise than that build, and
the condition it met. `choose.predict` looks there for the launch's own change, in the
target's builds for this arch first, then for its other arches (`other_arch_rebuilds`).

Blocking (the job store: one read of at most `READ_PER_NODE` records per node).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from msgspec.structs import replace

from rocmtui.core.costbook.book import CostRow
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


def _variables(store: JobStore, job_ids: Sequence[str]) -> dict[str, dict[str, str] | None]:
    """Each job's variables (None: redacted), in one read; a job gone from the store is left
    out."""
    from rocmtui.core.jobs.schema import row_to_record

    if not job_ids:
        return {}
    marks = ", ".join("?" for _ in job_ids)
    with store.connect() as conn:
        found = conn.execute(f"SELECT * FROM jobs WHERE id IN ({marks})", tuple(job_ids))
        records = [row_to_record(r) for r in found.fetchall()]
    out: dict[str, dict[str, str] | None] = {}
    for record in records:
        had = dict(record.overrides)
        out[record.id] = None if any(REDACTED in v for v in had.values()) else had
    return out


def variable_changes(
    store: JobStore,
    rows: Sequence[CostRow],
    overrides: Mapping[str, str],
    fleet_set: Mapping[str, str] | None = None,
) -> tuple[dict[str, frozenset[str]], list[Rebuild]]:
    """Per node, the names the launch (`overrides`) changes against its newest build among
    `rows` (the cost book's builds of one target × arch, oldest first; an empty set: the
    same variables; a node whose newest record is redacted or gone is left out: not known);
    and every quick rebuild among each node's newest builds. A record carries the fleet
    file's variables too (`fleet_set`, the registry, the sccache store): those the launch
    does not set are the fleet's, the same for every build, and left out of the launch's
    comparison."""
    by: dict[str, list[CostRow]] = {}
    for row in rows:
        by.setdefault(row.node, []).append(row)
    launch: dict[str, frozenset[str]] = {}
    rebuilds: list[Rebuild] = []
    ok = JobState.SUCCEEDED.value
    newest = {node: rows[-READ_PER_NODE:] for node, rows in by.items()}
    variables = _variables(store, [r.job_id for rows in newest.values() for r in rows])
    for node, rows in newest.items():
        seen = [(r, variables.get(r.job_id)) for r in rows]
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


def other_arch_rebuilds(
    store: JobStore, rows: Sequence[CostRow], arch: str, fleet_set: Mapping[str, str] | None
) -> list[Rebuild]:
    """The quick rebuilds of the same target for the other arches among `rows` (the target's
    builds, every arch, oldest first), each marked with its arch: what a change leaves cached
    is the Dockerfile's doing, the same for every arch, so a fleet that rebuilt pytorch for
    gfx1201 after a version change knows what the same change will meet for gfx950."""
    by_arch: dict[str, list[CostRow]] = {}
    for row in rows:
        if row.arch != arch:
            by_arch.setdefault(row.arch, []).append(row)
    out: list[Rebuild] = []
    for other, of_arch in sorted(by_arch.items()):
        _, rebuilds = variable_changes(store, of_arch, {}, fleet_set)
        out += [replace(r, arch=other) for r in rebuilds]
    return out


__all__ = ["READ_PER_NODE", "changed_names", "other_arch_rebuilds", "variable_changes"]
