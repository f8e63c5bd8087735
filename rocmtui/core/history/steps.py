"""How many of a build's Dockerfile steps BuildKit found cached, read from its plain log.

rocmtui's own jobs and the followers of builds started elsewhere write the same plain progress
(`#12 [demo-pytorch 2/3] RUN fake-compile ...`, then `#12 CACHED` or `#12 DONE 3.1s`), so one
reader serves both. A step is a vertex whose name carries a Dockerfile position (`[2/3]`,
`[stage 2/3]`) and is not a `FROM`: BuildKit's own vertices (`[internal] load ...`, `exporting
to image`) are never cached, and a `FROM` of a local image reads `CACHED` or `DONE` by whim of
the engine, so neither says anything about the cache. BuildKit's own counts (`history inspect`)
include those vertices: they are the fallback when there is no log (see `cost.BuildEvidence`).

A PyTorch log runs to hundreds of MB: it is searched in big chunks as bytes by one regular
expression (C speed), never line by line in Python.
"""

from __future__ import annotations

import re
from pathlib import Path

from msgspec import Struct

CHUNK = 8 << 20
_VERTEX = re.compile(
    rb"^#(\d+) (?:(\[[^\]\n]*\d+/\d+\] (\S+))|(CACHED)\r?$)",
    re.MULTILINE,
)


class StepCounts(Struct, frozen=True):
    """Dockerfile steps seen in a log, and how many of them BuildKit found cached."""

    total: int
    cached: int

    @property
    def share(self) -> float | None:
        """Cached steps per step (0..1); None with no step."""
        return self.cached / self.total if self.total else None


class StepScanner:
    """Fed a log's bytes in order (whole lines; a line cut between two chunks is carried);
    `result()` counts the steps."""

    def __init__(self) -> None:
        self._steps: set[bytes] = set()
        self._cached: set[bytes] = set()
        self._carry = b""

    def feed(self, data: bytes) -> None:
        """More of the log."""
        data = self._carry + data
        cut = data.rfind(b"\n") + 1
        whole, self._carry = data[:cut], data[cut:]
        self._scan(whole)

    def _scan(self, data: bytes) -> None:
        for m in _VERTEX.finditer(data):
            vertex = m.group(1)
            if m.group(4) is not None:
                self._cached.add(vertex)
            elif m.group(3) != b"FROM":
                self._steps.add(vertex)

    def result(self) -> StepCounts | None:
        """The counts (None: the log named no Dockerfile step)."""
        if self._carry:
            self._scan(self._carry)
            self._carry = b""
        if not self._steps:
            return None
        return StepCounts(total=len(self._steps), cached=len(self._steps & self._cached))


def scan_steps(path: Path) -> StepCounts | None:
    """The step counts of a whole build log (None: no log, or no Dockerfile step in it)."""
    scanner = StepScanner()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                scanner.feed(chunk)
    except OSError:
        return None
    return scanner.result()
