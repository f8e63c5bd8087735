"""Each cell's verdict, from the plan, the registry's answer and the job store.

A job belongs to a cell when it built the cell's tag: its targets.json lists the tags bake
resolved under the job's own environment (so a job built with other pins, whose tag was
another, is not this cell's). An older job without that file belongs to the cells of the names
it built (a target, a matrix name, or a group's members) for its arch.

The verdict, first match wins:
1. `building`: a job for it runs (or is stalled);
2. `failed`: its newest job failed or was lost, and the registry holds nothing newer;
3. `unknown`: the registry could not say (auth, an error, no answer, an invalid tag, another
   registry): the reason says which;
4. `missing` when a job built it but the registry lacks it; `never built` when none did;
5. `moved`: the newest successful push of the tag recorded another digest (or kind);
6. `stale`: the image's pin labels differ from the pins in effect now;
7. `published`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.jobs.images import job_images, read_cache_stats, read_push_check
from rocmtui.core.matrix.cells import Cell, CellJob, PinDiff, RegistryImage, Row, Verdict
from rocmtui.core.matrix.fill import ELSEWHERE, INVALID, TagAnswer
from rocmtui.core.matrix.plan import PIN_PREFIX, MatrixPlan, PlannedCell
from rocmtui.core.registry.client import Lookup
from rocmtui.core.registry.pushcheck import short

ACTIVE = frozenset({"running", "stalled"})
BROKEN = frozenset({"failed", "lost"})


class SeenJob(Struct, frozen=True):
    """One job of the store as the matrix needs it."""

    id: str
    target: str
    arch: str
    node: str
    state: str
    started_at: float
    ended_at: float | None
    push: bool
    digest: str | None  # the record's (one target's) digest
    images: tuple[Any, ...]  # jobs.images.JobImage
    loop: Any | None = None  # registry.pushcheck.PushCheck
    cache: Mapping[str, Any] | None = None
    started_elsewhere: bool = False  # found in BuildKit's history, not started by rocmtui
    cached_percent: int | None = None  # BuildKit's cached steps of all steps (history)

    def image_for(self, tag: str) -> Any | None:
        """The job's image that has `tag`."""
        return next((i for i in self.images if tag in i.tags), None)


def seen_jobs(records: Iterable[Any]) -> list[SeenJob]:
    """Job records (live state) with their images, loop and cache statistics."""
    out = []
    for record in records:
        stats = read_cache_stats(record.job_dir)
        out.append(
            SeenJob(
                id=record.id,
                target=record.target,
                arch=record.arch,
                node=record.node,
                state=str(record.state),
                started_at=record.started_at,
                ended_at=record.ended_at,
                push=record.push,
                digest=record.digest,
                images=job_images(record.job_dir, record.target, record.arch),
                loop=read_push_check(record.job_dir),
                cache=stats.to_json() if stats is not None else None,
                started_elsewhere=record.outside is not None,
                cached_percent=record.outside.cached_percent if record.outside else None,
            )
        )
    return out


class JobIndex:
    """Jobs by the tags they built (and, for older jobs, by name and arch)."""

    def __init__(self, jobs: Iterable[SeenJob], plan: MatrixPlan) -> None:
        self.plan = plan
        self.by_tag: dict[str, list[SeenJob]] = {}
        self.legacy: list[SeenJob] = []
        for job in jobs:
            tags = {t for image in job.images for t in image.tags}
            for tag in tags:
                self.by_tag.setdefault(tag, []).append(job)
            if not tags:
                self.legacy.append(job)

    def for_cell(self, cell: PlannedCell) -> list[SeenJob]:
        """The cell's jobs, newest first."""
        found = list(self.by_tag.get(cell.tag, []))
        groups = self.plan.groups.get(cell.arch, {})
        names = set(cell.targets)
        for job in self.legacy:
            if job.arch != cell.arch:
                continue
            if job.target in names or names & groups.get(job.target, frozenset()):
                found.append(job)
        return sorted(found, key=lambda j: -j.started_at)


def _pushed(job: SeenJob, tag: str) -> bool:
    """Whether the job pushed the tag (an older job: whether it pushed at all)."""
    image = job.image_for(tag)
    return bool(image.pushes) if image is not None else job.push


def _cell_job(job: SeenJob | None, tag: str) -> CellJob | None:
    if job is None:
        return None
    image = job.image_for(tag)
    loop = None
    if job.loop is not None:
        check = next((i for i in job.loop.images if i.tag == tag), None)
        loop = str(check.state) if check is not None else str(job.loop.state)
    return CellJob(
        id=job.id,
        target=image.target if image is not None else job.target,
        state=job.state,
        node=job.node,
        started_at=job.started_at,
        ended_at=job.ended_at,
        digest=image.digest if image is not None else job.digest,
        push=bool(image.pushes) if image is not None else job.push,
        loop=loop,
        cache=job.cache,
        started_elsewhere=job.started_elsewhere,
        cached_percent=job.cached_percent,
    )


def _created(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pin_diffs(expected: Mapping[str, str], labels: Mapping[str, str]) -> tuple[PinDiff, ...]:
    """The pins whose image label is not the value in effect now (a missing label counts)."""
    return tuple(
        PinDiff(name, labels.get(PIN_PREFIX + name), value)
        for name, value in sorted(expected.items())
        if labels.get(PIN_PREFIX + name) != value
    )


def judge_cell(planned: PlannedCell, answer: TagAnswer, jobs: list[SeenJob]) -> Cell:
    """The cell's verdict and its reason (see the module doc for the order)."""
    tag = planned.tag
    newest = next((j for j in jobs if j.state != "cancelled"), None)
    pushed = next((j for j in jobs if j.state == "succeeded" and _pushed(j, tag)), None)
    facts = answer.facts
    image = None
    if answer.lookup == str(Lookup.FOUND) and answer.digest:
        image = RegistryImage(
            digest=answer.digest,
            media_type=answer.media_type,
            size=facts.size if facts else None,
            created=facts.created if facts else None,
            labels=dict(facts.labels) if facts else {},
            note=facts.note if facts else None,
        )
    notes: list[str] = []
    if image is not None and image.note:
        notes.append(image.note)
    if answer.other_tags:
        notes.append("the repository holds " + ", ".join(answer.other_tags))
    base = Cell(
        arch=planned.arch,
        tag=tag,
        verdict=Verdict.UNKNOWN,
        targets=planned.targets,
        push_target=planned.push_target,
        lookup=answer.lookup,
        image=image,
        job=_cell_job(newest, tag),
        pushed=_cell_job(pushed, tag),
    )

    def done(verdict: Verdict, reason: str | None, pins: tuple[PinDiff, ...] = ()) -> Cell:
        return replace(base, verdict=verdict, reason=reason, pins=pins, notes=tuple(notes))

    active = next((j for j in jobs if j.state in ACTIVE), None)
    if active is not None:
        return done(Verdict.BUILDING, f"job {active.id} {active.state} on {active.node}")
    if newest is not None and newest.state in BROKEN:
        built = _created(image.created) if image is not None else None
        if built is None or built < (newest.ended_at or newest.started_at):
            older = "; the registry holds an older image" if image is not None else ""
            return done(Verdict.FAILED, f"job {newest.id} {newest.state}{older}")
    if answer.lookup in (INVALID, ELSEWHERE) or answer.lookup not in (
        str(Lookup.FOUND),
        str(Lookup.NOT_FOUND),
        str(Lookup.NO_REPOSITORY),
    ):
        return done(
            Verdict.UNKNOWN, f"{answer.lookup}: {answer.reason}" if answer.reason else answer.lookup
        )
    if image is None:
        if newest is not None:
            how = "pushed" if newest.push else "built without a push"
            return done(Verdict.MISSING, f"{answer.reason}; job {newest.id} {how}")
        return done(Verdict.NEVER_BUILT, answer.reason)
    recorded = base.pushed.digest if base.pushed is not None else None
    if pushed is not None and recorded:
        pushed_image = pushed.image_for(tag)
        kind = pushed_image.media_type if pushed_image is not None else None
        other_kind = bool(kind and image.media_type and kind != image.media_type)
        if recorded != image.digest or other_kind:
            return done(
                Verdict.MOVED,
                f"job {pushed.id} pushed {short(recorded)}; the registry has {short(image.digest)}",
            )
    if planned.pins:
        if not any(k.startswith(PIN_PREFIX) for k in image.labels):
            notes.append("the image carries no pin labels: staleness cannot be read from it")
        else:
            diffs = pin_diffs(planned.pins, image.labels)
            if diffs:
                said = ", ".join(f"{d.name} {d.image or 'unlabelled'} → {d.now}" for d in diffs)
                return done(Verdict.STALE, f"built from other pins: {said}", diffs)
    return done(Verdict.PUBLISHED, None)


def judge(
    plan: MatrixPlan, answers: Mapping[str, TagAnswer], jobs: Iterable[SeenJob]
) -> tuple[Row, ...]:
    """Every row's cells, one per arch of the plan (a cell the row lacks says so)."""
    index = JobIndex(jobs, plan)
    rows = []
    for name, targets, planned in plan.rows:
        cells = []
        for arch in plan.arches:
            cell = planned.get(arch)
            if cell is None:
                cells.append(
                    Cell(
                        arch=arch,
                        tag=None,
                        verdict=Verdict.UNKNOWN,
                        reason="no target of this row builds for it",
                    )
                )
                continue
            answer = answers.get(cell.tag) or TagAnswer(
                str(Lookup.TIMEOUT), "not asked before the deadline"
            )
            cells.append(judge_cell(cell, answer, index.for_cell(cell)))
        rows.append(Row(name=name, targets=targets, cells=tuple(cells)))
    return tuple(rows)
