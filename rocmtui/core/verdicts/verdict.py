"""What a stall verdict reads and what it says.

The verdict keeps the project's state words: a silent build is either still `building` (the job
state `running`, marked quiet with its reason) or `stalled` (a person is needed: the bell,
`status` exit 1, the alert). The kind says which evidence decided, so the console can offer what
fits (a prune for a full disk) and scripts can count kinds without parsing the line.
"""

from __future__ import annotations

import enum

from msgspec import Struct

from rocmtui.core.vitals.nodevitals import NodeVitals


class VerdictKind(enum.StrEnum):
    """Which evidence decided a silent build's verdict."""

    BUSY = "busy"  # its engine tree keeps using CPU: quiet, not stalled
    IDLE = "idle"  # near 0% CPU through the silence
    IO = "io"  # CPU idle, io pressure high: waiting on a disk or a mount
    MEMORY = "memory"  # an OOM kill during the build, or swap thrashing
    DISK = "disk"  # the engine's data root is full
    LINK = "link"  # the node unreachable since the silence began
    NO_EVIDENCE = "no-evidence"  # the node gives no CPU figure: silence alone decides
    BUSY_TOO_LONG = "busy-too-long"  # busy, but silent past the busy threshold or its usual time

    @property
    def stalls(self) -> bool:
        """True for every kind but `busy`: a person is needed."""
        return self is not VerdictKind.BUSY


class Thresholds(Struct, frozen=True):
    """The fleet file's two stall thresholds (seconds of silence)."""

    stall_after: float = 900.0
    stall_busy_after: float = 3600.0


class Usual(Struct, frozen=True):
    """How long earlier builds of the same target x arch took (the cost book): the p90 of the
    succeeded ones, and how many there were."""

    p90_seconds: float
    builds: int


class Reading(Struct, frozen=True):
    """One probe round's word on a node: its vitals, or that it could not be reached.

    `vitals` is None when the round had none (the node down, or no source answered);
    `unreachable` is the round's reason when the node itself did not answer.
    """

    taken_at: float
    vitals: NodeVitals | None = None
    unreachable: str | None = None


class SilentBuild(Struct, frozen=True):
    """One running build's own facts for a verdict."""

    node: str
    silent_seconds: float
    clipped_at: str | None = None  # BuildKit's step log limit ("2MiB") when it clipped output
    oom_kills_at_start: int | None = None  # the node's OOM count when the build began
    usual: Usual | None = None
    link_down_since: float | None = None  # its supervisor's word on a remote link


class Verdict(Struct, frozen=True):
    """A silent build's verdict: `stalled` or not, the kind, and one line saying why."""

    stalled: bool
    kind: VerdictKind
    line: str


__all__ = ["Reading", "SilentBuild", "Thresholds", "Usual", "Verdict", "VerdictKind"]
