"""The target × arch matrix as values: what each cell holds, its verdict and why.

One row per image a target of the bake file builds (a target, its `-push` variant and the matrix
names that build the same tags are one row), one column per arch, and in each cell: the tag bake
resolves, what the registry holds under it, the last job that built it, and a verdict word:

    published    the registry holds the tag, built from the pins in effect now
    stale        the registry's image records other pins (its labels) than those in effect now
    moved        the tag names another manifest than the last successful push of it recorded
    missing      the registry lacks the tag, though a job built it
    failed       the last job for it failed
    building     a job for it runs now
    never built  no job built it and the registry lacks it
    unknown      the registry could not be asked (auth, an error, no answer, a tag it cannot
                 hold, another registry than the fleet's): the reason says which

Everything here is plain data with `to_json`/`from_json`, so the console reads what
`rocmtui matrix --json` prints.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from msgspec import Struct, field


class Verdict(StrEnum):
    """A cell's word."""

    PUBLISHED = "published"
    STALE = "stale"
    MOVED = "moved"
    MISSING = "missing"
    FAILED = "failed"
    BUILDING = "building"
    NEVER_BUILT = "never built"
    UNKNOWN = "unknown"


VERDICT_SYMBOLS: dict[str, str] = {
    "published": "✓",
    "stale": "◐",
    "moved": "≠",
    "missing": "○",
    "failed": "✗",
    "building": "▶",
    "never built": "·",
    "unknown": "?",
}
#: Verdicts that need an operator (the CLI's exit status, the screen's summary).
NEEDS_WORK = frozenset({"stale", "moved", "missing", "failed", "never built", "unknown"})


class RegistryImage(Struct, frozen=True):
    """What the registry holds under a cell's tag."""

    digest: str
    media_type: str | None
    size: int | None = None  # config plus layers of the platform's image, as pushed
    created: str | None = None  # the image config's creation time (RFC 3339)
    labels: Mapping[str, str] = field(default_factory=dict)
    note: str | None = None  # e.g. "OCI index: linux/amd64 image read"


class CellJob(Struct, frozen=True):
    """A job as a cell shows it."""

    id: str
    target: str
    state: str
    node: str
    started_at: float
    ended_at: float | None = None
    digest: str | None = None  # this cell's image's digest, as bake recorded it
    push: bool = False
    loop: str | None = None  # the closed loop's word for it (`in registry`, `moved` ...)
    cache: Mapping[str, Any] | None = None  # sccache statistics (CacheStats.to_json())
    # a build found in BuildKit's history (make, cron, another host), not started by rocmtui
    started_elsewhere: bool = False
    cached_percent: int | None = None  # percent of BuildKit steps cached, from its history

    @property
    def duration(self) -> float | None:
        """Seconds it took (None while it runs)."""
        return None if self.ended_at is None else max(0.0, self.ended_at - self.started_at)

    def last_built(self, now: float | None = None) -> str:
        """`last built 2h ago on snoc-think, 41m, 87% of steps cached, succeeded` (with
        `, started elsewhere` for a build found in BuildKit's history); while it runs,
        `building on NODE for 5m`."""
        from rocmtui.core.text.units import fmt_age

        now = time.time() if now is None else now
        if self.ended_at is None:
            return f"building on {self.node} for {fmt_age(now - self.started_at)}"
        parts = [f"last built {fmt_age(now - self.ended_at)} ago on {self.node}"]
        if self.duration is not None:
            parts.append(fmt_age(self.duration))
        if self.cached_percent is not None:
            parts.append(f"{self.cached_percent}% of steps cached")
        parts.append(self.state)
        if self.started_elsewhere:
            parts.append("started elsewhere")
        return ", ".join(parts)


class PinDiff(Struct, frozen=True):
    """One pin whose image label is not the value in effect now."""

    name: str  # the variable, e.g. PYTORCH_VERSION
    image: str | None  # None: the image has no label for it
    now: str


class Cell(Struct, frozen=True):
    """One target for one arch."""

    arch: str
    tag: str | None  # None: no target of the row builds for this arch
    verdict: Verdict
    reason: str | None = None
    targets: tuple[str, ...] = ()  # every name that builds this tag
    push_target: str | None = None  # the name a rebuild launches to publish it
    lookup: str | None = None  # the registry's answer: found, not found, auth, ...
    image: RegistryImage | None = None
    job: CellJob | None = None  # the newest job for it
    pushed: CellJob | None = None  # the newest successful push of it
    pins: tuple[PinDiff, ...] = ()
    notes: tuple[str, ...] = ()
    # what builds of it cost lately: a regression per node (`snoc-think: warm took 4h18m,
    # usually 2h06m`), from the job store's history (history.costreport)
    regressions: tuple[str, ...] = ()

    @property
    def applies(self) -> bool:
        """Whether the row builds anything for this arch."""
        return self.tag is not None


class Row(Struct, frozen=True):
    """One image a target builds, across the arches."""

    name: str
    targets: tuple[str, ...]
    cells: tuple[Cell, ...]

    def cell(self, arch: str) -> Cell | None:
        """The cell of `arch`."""
        return next((c for c in self.cells if c.arch == arch), None)


class Matrix(Struct, frozen=True):
    """The whole matrix at one moment."""

    bake_file: str
    registry: str
    arches: tuple[str, ...]
    rows: tuple[Row, ...]
    taken_at: float
    seconds: float = 0.0  # how long the fill took
    requests: int = 0  # registry requests it sent
    errors: tuple[str, ...] = ()  # what could not be planned (an arch bake refused ...)
    store: Mapping[str, Any] | None = None  # the WebDAV store's local sample, if configured

    def cells(self) -> list[tuple[Row, Cell]]:
        """Every applicable cell with its row."""
        return [(row, cell) for row in self.rows for cell in row.cells if cell.applies]

    def counts(self) -> dict[str, int]:
        """How many cells have each verdict."""
        out: dict[str, int] = {}
        for _, cell in self.cells():
            out[str(cell.verdict)] = out.get(str(cell.verdict), 0) + 1
        return out

    @property
    def healthy(self) -> bool:
        """Every cell published (or being built), and nothing failed to plan."""
        return not self.errors and all(c.verdict not in NEEDS_WORK for _, c in self.cells())

    # ---------------------------------------------------------------- JSON

    def to_json(self) -> dict[str, Any]:
        """What `rocmtui matrix --json` prints."""
        return {
            "bake_file": self.bake_file,
            "registry": self.registry,
            "arches": list(self.arches),
            "taken_at": self.taken_at,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "errors": list(self.errors),
            "store": dict(self.store) if self.store is not None else None,
            "counts": self.counts(),
            "rows": [
                {
                    "name": row.name,
                    "targets": list(row.targets),
                    "cells": [_cell_json(c) for c in row.cells],
                }
                for row in self.rows
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Matrix:
        """Read back `to_json` (ValueError on anything else)."""
        try:
            rows = tuple(
                Row(
                    name=str(r["name"]),
                    targets=tuple(str(t) for t in r["targets"]),
                    cells=tuple(_cell_from(c) for c in r["cells"]),
                )
                for r in data["rows"]
            )
            return cls(
                bake_file=str(data["bake_file"]),
                registry=str(data["registry"]),
                arches=tuple(str(a) for a in data["arches"]),
                rows=rows,
                taken_at=float(data["taken_at"]),
                seconds=float(data.get("seconds", 0.0)),
                requests=int(data.get("requests", 0)),
                errors=tuple(str(e) for e in data.get("errors", ())),
                store=data.get("store") if isinstance(data.get("store"), dict) else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a matrix: {type(exc).__name__}: {exc}") from None


def _job_json(job: CellJob | None) -> dict[str, Any] | None:
    if job is None:
        return None
    return {
        "id": job.id,
        "target": job.target,
        "state": job.state,
        "node": job.node,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "duration": job.duration,
        "digest": job.digest,
        "push": job.push,
        "loop": job.loop,
        "cache": dict(job.cache) if job.cache is not None else None,
    }


def _job_from(data: Any) -> CellJob | None:
    if not isinstance(data, dict):
        return None
    return CellJob(
        id=str(data["id"]),
        target=str(data["target"]),
        state=str(data["state"]),
        node=str(data["node"]),
        started_at=float(data["started_at"]),
        ended_at=float(data["ended_at"]) if data.get("ended_at") is not None else None,
        digest=data.get("digest"),
        push=bool(data.get("push")),
        loop=data.get("loop"),
        cache=data.get("cache") if isinstance(data.get("cache"), dict) else None,
    )


def _cell_json(cell: Cell) -> dict[str, Any]:
    image = cell.image
    return {
        "arch": cell.arch,
        "tag": cell.tag,
        "verdict": str(cell.verdict),
        "reason": cell.reason,
        "targets": list(cell.targets),
        "push_target": cell.push_target,
        "registry": {
            "lookup": cell.lookup,
            "digest": image.digest if image else None,
            "media_type": image.media_type if image else None,
            "size": image.size if image else None,
            "created": image.created if image else None,
            "labels": dict(image.labels) if image else None,
            "note": image.note if image else None,
        },
        "job": _job_json(cell.job),
        "pushed": _job_json(cell.pushed),
        "pins": [{"name": p.name, "image": p.image, "now": p.now} for p in cell.pins],
        "notes": list(cell.notes),
        "regressions": list(cell.regressions),
    }


def _cell_from(data: Mapping[str, Any]) -> Cell:
    reg = data.get("registry") or {}
    image = None
    if isinstance(reg, dict) and reg.get("digest"):
        image = RegistryImage(
            digest=str(reg["digest"]),
            media_type=reg.get("media_type"),
            size=reg.get("size"),
            created=reg.get("created"),
            labels=reg.get("labels") or {},
            note=reg.get("note"),
        )
    return Cell(
        arch=str(data["arch"]),
        tag=data.get("tag"),
        verdict=Verdict(data["verdict"]),
        reason=data.get("reason"),
        targets=tuple(str(t) for t in data.get("targets", ())),
        push_target=data.get("push_target"),
        lookup=reg.get("lookup") if isinstance(reg, dict) else None,
        image=image,
        job=_job_from(data.get("job")),
        pushed=_job_from(data.get("pushed")),
        pins=tuple(
            PinDiff(str(p["name"]), p.get("image"), str(p["now"])) for p in data.get("pins", ())
        ),
        notes=tuple(str(n) for n in data.get("notes", ())),
        regressions=tuple(str(n) for n in data.get("regressions", ())),
    )
