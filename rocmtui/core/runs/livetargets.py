"""Each target of a bake group while it builds, from bake's own output as it arrives.

A group's target spans from BuildKit's records (`targetspans`) exist only once the build has
ended, and never on a builder without history (buildx 0.13, dockerd 20.10). While bake runs, its
plain progress already says which target each vertex is for: with more than one target, buildx
puts the target first in every vertex's name (`#12 [demo-vllm base 2/4] RUN ...`,
`#20 [demo-pytorch] exporting to image`). `LiveTargets` reads those lines from the chunks the
supervisor drains and keeps, per target, when its first vertex was seen, when its last one
ended, whether one failed, and whether it is done (its export vertex ended and none of its
vertices still runs). Times are this host's clock, taken when the chunk arrived.

What was measured on real group bakes (buildx 0.29 and 0.13, today's engine and 20.10): a
vertex two targets share is printed once, under the first target's name, and may be printed
again under another's (`#15 [demo-pytorch] exporting to image` after `#15 [demo-base] ...`):
a vertex's `DONE` then ends it for every target that named it. Lines of a step's output start
`#N 0.123 `, so nothing a build prints is read as a vertex's name or end.

Only the targets bake resolved (`targets.json`, written at launch) are counted: a stage named
like no target is not one. `LiveFile` writes the snapshot into the job's folder (`LIVE_FILE`)
by atomic replace, at most once every `WRITE_EVERY` seconds and only when it changed; a write
that fails stops the writing for good (a full disk is the build's and the log's room, never
this file's). `read_live` reads it back for the run chart. No Textual, no SQLite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from rocmtui.core.runs.run import TargetSpan

LIVE_FILE = "live-targets.json"
WRITE_EVERY = 1.0
#: A group of more targets than this follows the first ones (as `targetspans.MAX_TARGETS`).
MAX_TARGETS = 64
#: Vertices followed at most: a bound on memory whatever a log holds.
MAX_VERTICES = 100_000
#: Of a line that has not ended in a chunk, this much is kept for the next: a vertex's name
#: and target are at its start.
CARRY = 512

# A vertex's line at a line's start: its name (`[target ...] rest`, the export's `exporting to`
# looked for just after the bracket) or its end. A step's output (`#N 0.123 ...`) matches
# neither. The leading newline lets the search skip to candidates at C speed.
_LINE = re.compile(
    rb"\n#(\d{1,9}) (?:\[([^\]\n]{1,400})\]( exporting to)?|(DONE|CACHED|ERROR|CANCELED)\b)"
)


class _Target:
    """What the log said of one target so far."""

    __slots__ = ("ended", "exported", "failed", "running", "started")

    def __init__(self) -> None:
        self.started: float | None = None
        self.ended: float | None = None  # the last time one of its vertices ended
        self.failed = False
        self.exported = False
        self.running: set[int] = set()

    def done(self) -> bool:
        """It has ended: exported (or failed) and nothing of it runs."""
        return (self.exported or self.failed) and not self.running


class LiveTargets:
    """Follows a group bake's targets through its plain progress (see the module doc)."""

    def __init__(self, targets: Iterable[str]) -> None:
        names = list(dict.fromkeys(targets))[:MAX_TARGETS]
        self._by_name = {n.encode(): n for n in names}
        self._targets = {n: _Target() for n in names}
        self._vertices: dict[int, set[str]] = {}
        self._exports: set[tuple[int, str]] = set()
        self._carry = b"\n"
        self.changed = False

    def feed(self, data: bytes, now: float | None = None) -> None:
        """Read one chunk of bake's output (any size, cut anywhere)."""
        if not data or not self._targets:
            return
        buf = self._carry + data
        end = buf.rfind(b"\n")
        if end <= 0:  # still the same unfinished line: keep its start
            self._carry = buf[:CARRY]
            return
        self._carry = buf[end : end + CARRY]
        at = time.time() if now is None else now
        for m in _LINE.finditer(buf, 0, end):
            vertex = int(m.group(1))
            name = m.group(2)
            if name is not None:
                self._named(vertex, name, m.group(3) is not None, at)
            else:
                self._ended(vertex, m.group(4), at)

    def _named(self, vertex: int, name: bytes, export: bool, at: float) -> None:
        target = self._by_name.get(name.split(b" ", 1)[0])
        if target is None:
            return
        named = self._vertices.get(vertex)
        if named is None:
            if len(self._vertices) >= MAX_VERTICES:
                return
            named = self._vertices[vertex] = set()
        named.add(target)
        t = self._targets[target]
        if vertex not in t.running:
            t.running.add(vertex)
            self.changed = True
        if t.started is None:
            t.started = at
        if export:
            self._exports.add((vertex, target))

    def _ended(self, vertex: int, word: bytes, at: float) -> None:
        for target in self._vertices.get(vertex, ()):
            t = self._targets[target]
            if vertex not in t.running:
                continue
            t.running.discard(vertex)
            t.ended = at
            if word == b"ERROR":
                t.failed = True
            elif word != b"CANCELED" and (vertex, target) in self._exports:
                t.exported = True
            self.changed = True

    def spans(self) -> list[TargetSpan]:
        """Each target whose first vertex was seen: from then to its end (None while it is
        not done), failed when a vertex of it failed. A target with no vertex yet is left out."""
        out = []
        for name, t in self._targets.items():
            if t.started is None:
                continue
            ended = t.ended if t.done() else None
            out.append(TargetSpan(name, t.started, ended, t.failed))
        return out

    def snapshot(self, now: float) -> dict[str, object]:
        """The live file's content."""
        return {
            "written_at": now,
            "targets": [
                {"target": s.target, "started": s.started, "ended": s.ended, "failed": s.failed}
                for s in self.spans()
            ],
        }


class LiveFile:
    """Writes a `LiveTargets` into the job's folder (see the module doc). `say` puts one line
    into the job's log when the writing stops."""

    def __init__(self, job_dir: Path, live: LiveTargets, say: Callable[[str], object]) -> None:
        self.path = job_dir / LIVE_FILE
        self.live = live
        self.say = say
        self.stopped = False
        self._next = 0.0

    def feed(self, data: bytes, may_write: bool = True) -> None:
        """One chunk of output; the file is written when due (`may_write` False: the disk is
        full for the log, and so for this file too). Never raises: the build and its log
        come first, and a parse that failed once stops for good."""
        if self.stopped:
            return
        try:
            self.live.feed(data)
        except Exception as exc:  # a bug here must not touch the build: said once, stopped
            self.stopped = True
            self.live = LiveTargets(())  # what it held may be half-updated: nothing kept
            self.say(f"live target times no longer followed: {type(exc).__name__}")
            return
        if may_write and self.live.changed and time.monotonic() >= self._next:
            self.write()

    def spans(self) -> list[TargetSpan]:
        """The targets as followed so far (none once following failed)."""
        try:
            return self.live.spans()
        except Exception:
            return []

    def write(self) -> None:
        """Write it now (at the build's end: its last word), unless stopped."""
        if self.stopped:
            return
        self._next = time.monotonic() + WRITE_EVERY
        self.live.changed = False
        tmp = self.path.with_name(f".{LIVE_FILE}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.live.snapshot(time.time()), fh)
            os.replace(tmp, self.path)
        except Exception as exc:  # a full disk above all: the log's and the outcome's room
            self.stopped = True
            with contextlib.suppress(OSError):
                tmp.unlink()
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.say(f"live target times no longer written: {why}")


def live_file_for(job_dir: Path, say: Callable[[str], object]) -> LiveFile | None:
    """For a supervisor: the live file of a job whose launch resolved two or more targets
    (`targets.json`); None otherwise (one target is its job's bar; bake names no target)."""
    try:
        data = json.loads((job_dir / "targets.json").read_text(encoding="utf-8"))
        names = [str(n) for n in data["targets"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if len(names) < 2:
        return None
    return LiveFile(job_dir, LiveTargets(names), say)


def read_live(job_dir: Path | str) -> list[TargetSpan]:
    """The live file's targets (none when it is missing or damaged: the build is one bar)."""
    try:
        data = json.loads((Path(job_dir) / LIVE_FILE).read_text(encoding="utf-8"))
        rows = data["targets"][:MAX_TARGETS]
        out = []
        for row in rows:
            ended = row.get("ended")
            out.append(
                TargetSpan(
                    str(row["target"]),
                    float(row["started"]),
                    None if ended is None else float(ended),
                    bool(row.get("failed")),
                )
            )
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


__all__ = [
    "LIVE_FILE",
    "MAX_TARGETS",
    "WRITE_EVERY",
    "LiveFile",
    "LiveTargets",
    "live_file_for",
    "read_live",
]
