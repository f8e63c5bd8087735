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

Everything here is plain data; `rocmtui.core.matrix.views` prints it as `rocmtui matrix --json`
and reads that back (msgspec encodes and validates its view Structs), so the console reads what
the command prints.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from msgspec import Struct, field

from rocmtui.core.text.units import fmt_age


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
    # usually 2h06m`), from the job store's history (costbook.report)
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
