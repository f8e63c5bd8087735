"""A build's steps (BuildKit vertices) from its rawjson progress, and the graph they make.

Every BuildKit solve status names vertices by `digest`, with `name`, `started`, `completed`,
`cached`, `error` and `inputs` (the digests a vertex waits on); a vertex is sent again as it
moves, so the collector merges by digest: the last word on a name, inputs or error wins; a
vertex solved twice (`[internal] load build definition`) keeps its first start and its last
completion. buildx 0.13 pretty-prints each object over several lines; 0.29 writes one object per
status, not always one per line: the collector decodes objects wherever they start and end
(`json.JSONDecoder.raw_decode`), and skips text between them (buildx's own `ERROR:` lines).

Outside data, bounded and never trusted: a name or an error is sanitised once here
(`sanitize_line`, so no escape sequence or markup character reaches a terminal raw; readers
never parse it as markup), at most `MAX_STEPS` vertices are kept (steps, not log lines: a
10,000-step build is fine) and `MAX_INPUTS` inputs each; an object bigger than
`MAX_OBJECT` is skipped and counted. The graph's faults (a cycle, an input never seen, a step
that ends before it starts: clocks that disagree) are counted and said, never fatal.
"""

from __future__ import annotations

import bisect
import codecs
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import Struct

from rocmtui.core.progress.buildkit import iso_seconds
from rocmtui.core.text.sanitize import one_line, sanitize_line

MAX_STEPS = 20_000
MAX_INPUTS = 256
MAX_OBJECT = 8 << 20
NAME_MAX = 300
#: Seconds a step may seem to start before the step it follows ended (clocks, rounding).
TIME_SLACK = 0.05
_DIGEST = re.compile(r"\A[A-Za-z0-9:._+-]{1,160}\Z")


class Step(Struct, frozen=True, array_like=True):
    """One vertex as last reported (times are epoch seconds; None: not reported)."""

    digest: str
    name: str
    started: float | None = None
    completed: float | None = None
    cached: bool = False
    error: str | None = None
    inputs: tuple[str, ...] = ()

    @property
    def run(self) -> float | None:
        """Seconds it ran (None: it has not ended, or its clock says it ended before it
        started)."""
        if self.started is None or self.completed is None or self.completed < self.started:
            return None
        return self.completed - self.started

    @property
    def skewed(self) -> bool:
        """It ends before it starts: clocks that disagree."""
        return (
            self.started is not None
            and self.completed is not None
            and self.completed < self.started
        )


def _first(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _last(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _digest(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if _DIGEST.match(value) else sanitize_line(value, 160)


class StepCollector:
    """Fed rawjson bytes in order (`feed`); `steps()` gives the vertices merged by digest, in
    the order first seen."""

    def __init__(self) -> None:
        self._steps: dict[str, Step] = {}
        self._buffer = ""
        self._decoder = json.JSONDecoder()
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self.dropped_steps = 0  # vertices past MAX_STEPS
        self.dropped_objects = 0  # malformed or oversized objects
        self.objects = 0

    def feed(self, data: bytes | str) -> None:
        """More of the stream (any cut: an object split between two calls is carried)."""
        text = self._utf8.decode(data) if isinstance(data, bytes) else data
        buf = self._buffer + text
        pos = 0
        while True:
            start = buf.find("{", pos)
            if start < 0:
                pos = len(buf)
                break
            try:
                obj, stop = self._decoder.raw_decode(buf, start)
            except json.JSONDecodeError as exc:
                # cut short (the rest is still to come) when nothing after the fault has
                # ended a line: text that is not JSON is followed by more lines
                if "\n" not in buf[exc.pos :] and len(buf) - start <= MAX_OBJECT:
                    pos = start  # the rest of this object is still to come
                    break
                self.dropped_objects += 1
                pos = start + 1
                continue
            except RecursionError:
                self.dropped_objects += 1
                pos = start + 1
                continue
            pos = stop
            if isinstance(obj, dict):
                self.objects += 1
                self.take(obj)
        self._buffer = buf[pos:]

    def take(self, obj: dict[str, Any]) -> None:
        """One decoded status object."""
        vertexes = obj.get("vertexes")
        if not isinstance(vertexes, list):
            return
        for v in vertexes:
            if isinstance(v, dict):
                self._vertex(v)

    def _vertex(self, v: dict[str, Any]) -> None:
        digest = _digest(v.get("digest"))
        if digest is None:
            return
        old = self._steps.get(digest)
        if old is None and len(self._steps) >= MAX_STEPS:
            self.dropped_steps += 1
            return
        name = v.get("name")
        raw_inputs = v.get("inputs")
        inputs: tuple[str, ...] | None = None
        if isinstance(raw_inputs, list):
            found = (_digest(i) for i in raw_inputs[:MAX_INPUTS])
            inputs = tuple(i for i in found if i is not None and i != digest)
        error = v.get("error")
        started = iso_seconds(v.get("started"))
        completed = iso_seconds(v.get("completed"))
        self._steps[digest] = Step(
            digest=digest,
            name=sanitize_line(name, NAME_MAX)
            if isinstance(name, str)
            else (old.name if old else ""),
            started=_first(started, old.started if old else None),
            completed=_last(completed, old.completed if old else None),
            cached=bool(v.get("cached")) or (old.cached if old else False),
            error=one_line(error, NAME_MAX)
            if isinstance(error, str) and error
            else (old.error if old else None),
            inputs=inputs if inputs is not None else (old.inputs if old else ()),
        )

    def steps(self) -> list[Step]:
        """Every vertex kept, first seen first."""
        return list(self._steps.values())


def collect(chunks: Iterable[bytes | str]) -> StepCollector:
    """A collector fed every chunk."""
    collector = StepCollector()
    for chunk in chunks:
        collector.feed(chunk)
    return collector


class CriticalPath(Struct, frozen=True):
    """The chain of dependent steps that set the build's length, first step first."""

    digests: tuple[str, ...]
    run: float  # the chain's steps' run times summed
    note: str | None = None  # a fault met on the way (a cycle, a missing input)


def critical_path(steps: Sequence[Step], now: float | None = None) -> CriticalPath:
    """The longest path by completion time through `inputs`: from the step that completed
    last (an open one counts as completing `now`), back through the input that completed
    last. BuildKit reports some vertices with neither inputs nor dependents though they wait
    for others (the exporter waits for the whole solve): from such a step the walk goes on to
    the step that completed last before it started (`TIME_SLACK` allowed for clocks); a
    source (no inputs, but some step's input: a FROM, a context) ends the walk.
    Bounded by the step count; a cycle or an input never seen is named in `note`."""
    by = {s.digest: s for s in steps}
    needed = {i for s in steps for i in s.inputs}

    def done(s: Step) -> float | None:
        if s.completed is not None:
            return s.completed
        return now if s.started is not None and now is not None else None

    ended = sorted(((t, i, s) for i, s in enumerate(steps) if (t := done(s)) is not None))
    if not ended:  # said truthfully: a step that started and never said it ended is no path
        begun = any(s.started is not None for s in steps)
        return CriticalPath((), 0.0, "no step reported its end" if begun else "no step has started")
    ends = [t for t, _, _ in ended]
    current = ended[-1][2]
    chain = [current]
    seen = {current.digest}
    notes: list[str] = []
    missing = 0
    while True:
        known = []
        for digest in current.inputs:
            parent = by.get(digest)
            if parent is None:
                missing += 1
            elif done(parent) is not None:
                known.append(parent)
        if known:
            parent = max(known, key=lambda p: done(p) or 0.0)
        elif current.inputs or current.started is None or current.digest in needed:
            break
        else:  # a root by BuildKit's word: what finished last before it started
            k = bisect.bisect_right(ends, current.started + TIME_SLACK) - 1
            while k >= 0 and ended[k][2].digest in seen:
                k -= 1
            if k < 0:
                break
            parent = ended[k][2]
        if parent.digest in seen:
            notes.append("the step graph has a cycle; the path stops there")
            break
        seen.add(parent.digest)
        chain.append(parent)
        current = parent
    if missing:
        notes.append(f"{missing} input(s) of the path were never reported")
    chain.reverse()
    run = 0.0
    for s in chain:
        took = s.run
        if took is None and s.started is not None and s.completed is None and now is not None:
            took = max(now - s.started, 0.0)
        run += took or 0.0
    return CriticalPath(tuple(s.digest for s in chain), run, "; ".join(notes) or None)


__all__ = ["MAX_STEPS", "CriticalPath", "Step", "StepCollector", "collect", "critical_path"]
