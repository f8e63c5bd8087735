"""`rocmtui matrix --json`: `matrix_json` prints a matrix, `read_matrix` reads it back.

The shape is Structs: msgspec encodes and validates them, in field order (kw_only
lets them stand as printed); the records of `rocmtui.core.matrix.cells` convert to and from them
where they differ (a job's duration, a cell's registry answer nested, the counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, ValidationError, convert, field, json

from rocmtui.core.matrix.cells import (
    Cell,
    CellJob,
    Matrix,
    PinDiff,
    RegistryImage,
    Row,
    Verdict,
)


class JobView(Struct, frozen=True, kw_only=True):
    """A cell's job as printed (where it was started and its cached steps are not)."""

    id: str
    target: str
    state: str
    node: str
    started_at: float
    ended_at: float | None = None
    duration: float | None = None
    digest: str | None = None
    push: bool = False
    loop: str | None = None
    cache: dict[str, Any] | None = None

    @classmethod
    def of(cls, job: CellJob | None) -> JobView | None:
        """The printed form of `job`."""
        if job is None:
            return None
        return cls(
            id=job.id,
            target=job.target,
            state=job.state,
            node=job.node,
            started_at=job.started_at,
            ended_at=job.ended_at,
            duration=job.duration,
            digest=job.digest,
            push=job.push,
            loop=job.loop,
            cache=dict(job.cache) if job.cache is not None else None,
        )

    def job(self) -> CellJob:
        """The record read back."""
        return CellJob(
            id=self.id,
            target=self.target,
            state=self.state,
            node=self.node,
            started_at=self.started_at,
            ended_at=self.ended_at,
            digest=self.digest,
            push=self.push,
            loop=self.loop,
            cache=self.cache,
        )


class RegistryView(Struct, frozen=True, kw_only=True):
    """A cell's registry answer and image as printed."""

    lookup: str | None = None
    digest: str | None = None
    media_type: str | None = None
    size: int | None = None
    created: str | None = None
    labels: dict[str, str] | None = None
    note: str | None = None

    def image(self) -> RegistryImage | None:
        """The image read back (None without a digest)."""
        if not self.digest:
            return None
        return RegistryImage(
            digest=self.digest,
            media_type=self.media_type,
            size=self.size,
            created=self.created,
            labels=self.labels or {},
            note=self.note,
        )


class PinView(Struct, frozen=True, kw_only=True):
    """A pin the image differs in, as printed."""

    name: str
    image: str | None = None
    now: str


class CellView(Struct, frozen=True, kw_only=True):
    """One cell as printed."""

    arch: str
    tag: str | None = None
    verdict: Verdict
    reason: str | None = None
    targets: tuple[str, ...] = ()
    push_target: str | None = None
    registry: RegistryView = field(default_factory=RegistryView)
    job: JobView | None = None
    pushed: JobView | None = None
    pins: tuple[PinView, ...] = ()
    notes: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()

    @classmethod
    def of(cls, cell: Cell) -> CellView:
        """The printed form of `cell`."""
        image = cell.image
        registry = RegistryView(
            lookup=cell.lookup,
            digest=image.digest if image else None,
            media_type=image.media_type if image else None,
            size=image.size if image else None,
            created=image.created if image else None,
            labels=dict(image.labels) if image else None,
            note=image.note if image else None,
        )
        return cls(
            arch=cell.arch,
            tag=cell.tag,
            verdict=cell.verdict,
            reason=cell.reason,
            targets=cell.targets,
            push_target=cell.push_target,
            registry=registry,
            job=JobView.of(cell.job),
            pushed=JobView.of(cell.pushed),
            pins=tuple(PinView(name=p.name, image=p.image, now=p.now) for p in cell.pins),
            notes=cell.notes,
            regressions=cell.regressions,
        )

    def cell(self) -> Cell:
        """The record read back."""
        return Cell(
            arch=self.arch,
            tag=self.tag,
            verdict=self.verdict,
            reason=self.reason,
            targets=self.targets,
            push_target=self.push_target,
            lookup=self.registry.lookup,
            image=self.registry.image(),
            job=self.job.job() if self.job else None,
            pushed=self.pushed.job() if self.pushed else None,
            pins=tuple(PinDiff(p.name, p.image, p.now) for p in self.pins),
            notes=self.notes,
            regressions=self.regressions,
        )


class RowView(Struct, frozen=True):
    """One row as printed."""

    name: str
    targets: tuple[str, ...]
    cells: tuple[CellView, ...]


class MatrixView(Struct, frozen=True, kw_only=True):
    """`rocmtui matrix --json`."""

    bake_file: str
    registry: str
    arches: tuple[str, ...]
    taken_at: float
    seconds: float = 0.0
    requests: int = 0
    errors: tuple[str, ...] = ()
    store: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=dict)  # printed; computed when read
    rows: tuple[RowView, ...]

    @classmethod
    def of(cls, matrix: Matrix) -> MatrixView:
        """The printed form of `matrix`."""
        return cls(
            bake_file=matrix.bake_file,
            registry=matrix.registry,
            arches=matrix.arches,
            taken_at=matrix.taken_at,
            seconds=round(matrix.seconds, 3),
            requests=matrix.requests,
            errors=matrix.errors,
            store=dict(matrix.store) if matrix.store is not None else None,
            counts=matrix.counts(),
            rows=tuple(
                RowView(r.name, r.targets, tuple(CellView.of(c) for c in r.cells))
                for r in matrix.rows
            ),
        )

    def matrix(self) -> Matrix:
        """The record read back."""
        return Matrix(
            bake_file=self.bake_file,
            registry=self.registry,
            arches=self.arches,
            rows=tuple(
                Row(name=r.name, targets=r.targets, cells=tuple(c.cell() for c in r.cells))
                for r in self.rows
            ),
            taken_at=self.taken_at,
            seconds=self.seconds,
            requests=self.requests,
            errors=self.errors,
            store=self.store,
        )


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    """What `rocmtui matrix --json` prints (plain dicts and lists)."""
    data: dict[str, Any] = json.decode(json.encode(MatrixView.of(matrix)))
    return data


def read_matrix(data: Mapping[str, Any]) -> Matrix:
    """Read back `matrix_json` (ValueError on anything else)."""
    try:
        view = convert(data, MatrixView, strict=False)
    except (ValidationError, TypeError) as exc:
        raise ValueError(f"not a matrix: {exc}") from None
    return view.matrix()
