"""The facts placement judges, gathered from the fleet file, a fleet snapshot and the job store.

Blocking (SQLite, a stat per running job): call it from a command or a worker thread. Load and
free disk come from the node's vitals (`NodeSnapshot.vitals`) when its probe gathered them,
else from the host figures the local node's snapshot carries, else they stay unknown.

The builds judged are the cost book's, plus any of this target × arch that ended so recently
that its supervisor has not recorded it yet (its outcome read from the job's own folder, as
`rocmtui jobs` shows it): an operator who saw a build end and asks again at once is answered
with that build counted. A failed build whose steps all finished (the engine lost a layer
unpacking the finished image: `verdicts.failure`'s engine-bug, seen on today's engine with
its containerd image store) counts as a build of its condition: it took a build's time, and
what it built is in the cache; so the next estimate is not left with nothing to go by. The
condition priors (`eta.learn_priors`) are learned from every other target × arch × node
group among the cost book's newest `PRIOR_BUILDS` builds of `PRIOR_DAYS`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.book import CostBook, CostFilter, CostRow, evidence_of, row_of
from rocmtui.core.costbook.cost import Condition, CostPoint
from rocmtui.core.jobs.checks import accepted_arches
from rocmtui.core.jobs.control import live_record
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.placement.changes import other_arch_rebuilds, variable_changes
from rocmtui.core.placement.choose import place
from rocmtui.core.placement.eta import RECENT, Ratio, learn_priors
from rocmtui.core.placement.facts import NodeFacts, Placement, Rebuild
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot
from rocmtui.core.states import JobState
from rocmtui.core.text.sanitize import one_line


def _figures(
    snap: NodeSnapshot | None,
) -> tuple[float | None, int | None, int | None, int | None, str | None]:
    """(load1, cpu count, free bytes, total bytes, where from) for a node's snapshot."""
    if snap is None:
        return None, None, None, None, None
    v = snap.vitals
    if v is not None and (v.load1 is not None or v.data_root_free_bytes is not None):
        return v.load1, v.cpu_count, v.data_root_free_bytes, v.data_root_total_bytes, v.source
    h = snap.host
    if h is not None:
        total = int(h.disk_free * 100 / (100 - h.disk_percent)) if h.disk_percent < 100 else None
        return h.load1, h.cpu_count, h.disk_free, total, "host"
    return None, None, None, None, None


def node_facts(
    config: FleetConfig,
    snapshot: FleetSnapshot | None,
    target: str,
    arch: str,
    points: dict[str, list[CostPoint]],
    running: Sequence[JobRecord],
    listed_arches: Sequence[str],
    declares_arch: bool = True,
    same: Mapping[str, bool] | None = None,
    changed: Mapping[str, frozenset[str]] | None = None,
) -> list[NodeFacts]:
    """Every configured node's facts for a build of `target` × `arch` (fleet file order)."""
    out = []
    for node in config.nodes:
        snap = snapshot.node(node.name) if snapshot is not None else None
        gfx = (snap.gfx if snap is not None else None) or node.gfx
        accepts = (not arch and not declares_arch) or arch in accepted_arches(
            listed_arches, gfx, declares_arch
        )
        here = [j for j in running if j.node == node.name]
        busy = next((j for j in here if j.target == target and j.arch == arch), None)
        load1, cpus, free, total, source = _figures(snap)
        running_now = tuple(one_line(f"{j.target} {j.arch} ({j.id})") for j in here)
        if not running_now and snap is not None and str(snap.state) == "building":
            running_now = ("a build its builder reports (not in the job store)",)
        out.append(
            NodeFacts(
                node=node.name,
                gfx=gfx,
                state=str(snap.state) if snap is not None else "unprobed",
                state_reason=one_line(snap.reason) if snap and snap.reason else None,
                accepts_arch=accepts,
                busy_with=f"job {busy.id}" if busy is not None else None,
                running=running_now,
                load1=load1,
                cpu_count=cpus,
                free_bytes=free,
                total_bytes=total,
                vitals_from=source,
                points=tuple(points.get(node.name, ())),
                same_variables=(same or {}).get(node.name),
                changed=(changed or {}).get(node.name),
            )
        )
    return out


def ran_every_step(record: JobRecord) -> bool:
    """A failed build whose steps all finished: the engine lost a layer unpacking the finished
    image (`verdicts.failure`'s engine-bug; reads its log's tail)."""
    from rocmtui.core.jobs.evidence import failure_of
    from rocmtui.core.verdicts.failure import FailureCause

    why = failure_of(record)
    return why is not None and why.cause is FailureCause.ENGINE_BUG


def _finished(store: JobStore, job_id: str) -> bool:
    from rocmtui.core.jobs.store import JobStoreError

    try:
        return ran_every_step(store.get(job_id))
    except (JobStoreError, KeyError, LookupError, OSError):
        return False


def group_rows(
    store: JobStore, target: str, arch: str, now: float, retention_days: float
) -> list[CostRow]:
    """The cost book's builds of `target` × `arch` (oldest first), the book brought up to
    date."""
    book = CostBook(store, retention_days)
    book.sync(now)
    return book.rows(CostFilter(target=target, arch=arch))


def target_rows(store: JobStore, target: str, now: float, retention_days: float) -> list[CostRow]:
    """The cost book's builds of `target` for every arch (oldest first), within retention."""
    book = CostBook(store, retention_days)
    return book.rows(CostFilter(target=target, since=now - retention_days * 86400.0))


def cost_points(
    store: JobStore,
    target: str,
    arch: str,
    now: float,
    retention_days: float,
    rows: Sequence[CostRow] | None = None,
) -> dict[str, list[CostPoint]]:
    """The cost book's builds of `target` × `arch` per node, the book brought up to date; of
    a node's newest `FINISHED_FAILURES` failed builds, one that ran every step counts as done
    (the newest failures, not the failures among the newest builds: one counted stays counted
    while builds succeed after it)."""
    if rows is None:
        rows = group_rows(store, target, arch, now, retention_days)
    per: dict[str, list[CostRow]] = {}
    for row in rows:
        per.setdefault(row.node, []).append(row)
    by: dict[str, list[CostPoint]] = {}
    for node, mine in per.items():
        failures = [r for r in mine if r.outcome == JobState.FAILED.value]
        recent = {r.job_id for r in failures[-FINISHED_FAILURES:]}
        for r in mine:
            point = r.point()
            if r.job_id in recent and _finished(store, r.job_id):
                point = replace(point, succeeded=True)
            by.setdefault(node, []).append(point)
    return by


#: Of a node's failed builds, the newest this many are read for one that ran every step.
FINISHED_FAILURES = RECENT
#: The condition priors are learned from the newest `PRIOR_BUILDS` builds of the last
#: `PRIOR_DAYS` days (a bound on what every `--node auto` reads, whatever the book holds).
PRIOR_DAYS = 30.0
PRIOR_BUILDS = 500


def live_jobs(store: JobStore, stall_after: float, now: float) -> list[JobRecord]:
    """Jobs the store holds unfinished, with their live state (some ended just now)."""
    return [live_record(store, r, stall_after, now) for r in store.list(None, unfinished_only=True)]


def running_jobs(store: JobStore, stall_after: float, now: float) -> list[JobRecord]:
    """Jobs running (or stalled) now, with their live state."""
    live = live_jobs(store, stall_after, now)
    return [r for r in live if r.state in (JobState.RUNNING, JobState.STALLED)]


def just_ended(
    live: Sequence[JobRecord], target: str, arch: str, points: dict[str, list[CostPoint]]
) -> None:
    """Add to `points` the builds of `target` × `arch` that ended but are not recorded yet."""
    for r in live:
        if r.ended_at is None or r.target != target or r.arch != arch:
            continue
        if r.state in (JobState.RUNNING, JobState.STALLED):
            continue
        point = row_of(r, evidence_of(r)).point()
        if r.state is JobState.FAILED and ran_every_step(r):
            point = replace(point, succeeded=True)
        points.setdefault(r.node, []).append(point)


def condition_priors(
    store: JobStore, target: str, arch: str, now: float, retention_days: float
) -> dict[tuple[Condition, Condition], Ratio]:
    """The condition ratios of every other target × arch × node group (`eta.learn_priors`)."""
    since = now - min(PRIOR_DAYS, retention_days) * 86400.0
    groups = CostBook(store, retention_days).newest_by_group(
        since, RECENT, PRIOR_BUILDS, (target, arch)
    )
    return learn_priors(groups.values())


def placement_for(
    config: FleetConfig,
    snapshot: FleetSnapshot | None,
    target: str,
    arch: str,
    listed_arches: Sequence[str],
    declares_arch: bool = True,
    store: JobStore | None = None,
    original: str | None = None,
    now: float | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Placement:
    """Where a build of `target` × `arch` should go (the module doc says what is read);
    `overrides`: the launch's variables, compared with each node's newest build's."""
    now = time.time() if now is None else now
    store = store or JobStore.for_config(config)
    days = config.history_retention_days
    rows = group_rows(store, target, arch, now, days)
    points = cost_points(store, target, arch, now, days, rows)
    live = live_jobs(store, config.stall_after_seconds, now)
    running = [r for r in live if r.state in (JobState.RUNNING, JobState.STALLED)]
    just_ended(live, target, arch, points)
    priors = condition_priors(store, target, arch, now, days)
    same = changed = None
    rebuilds: list[Rebuild] = []
    if overrides is not None:
        changed, rebuilds = variable_changes(store, rows, overrides, config.variables)
        every_arch = target_rows(store, target, now, days)
        rebuilds += other_arch_rebuilds(store, every_arch, arch, config.variables)
        same = {node: not names for node, names in changed.items()}
    facts = node_facts(
        config, snapshot, target, arch, points, running, listed_arches, declares_arch, same,
        changed,
    )  # fmt: skip
    return place(target, arch, facts, now, original, priors, rebuilds)


__all__ = [
    "FINISHED_FAILURES",
    "PRIOR_BUILDS",
    "PRIOR_DAYS",
    "condition_priors",
    "cost_points",
    "group_rows",
    "just_ended",
    "live_jobs",
    "node_facts",
    "placement_for",
    "ran_every_step",
    "running_jobs",
]
