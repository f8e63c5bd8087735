"""A build's progress from `--progress=rawjson` objects, written into the steps' book.

BuildKit's rawjson stream names a vertex by its digest, sends its output as base64 chunks
that may end mid-line, and marks start, end, cache and error as timestamps and fields; this
reader turns those into the same per-step counters the plain-line reader keeps (steps.py).
"""

from __future__ import annotations

from typing import Any

from rocmtui.core.progress.buildkit import decode_log_data, iso_seconds, items
from rocmtui.core.progress.jobprogress import StepStatus
from rocmtui.core.progress.steps import StepBook, StepState

_MAX_PARTIAL = 65536  # bytes kept of a vertex's unfinished last line


class RawJsonReader:
    """Writes each rawjson object's vertices, logs and statuses into a `StepBook`."""

    def __init__(self, book: StepBook) -> None:
        self.book = book
        self._partials: dict[str, bytes] = {}
        #: Objects of a known shape with unusable content (ignored).
        self.malformed = 0

    def feed(self, obj: dict[str, Any], now: float, lineno: int) -> None:
        """One decoded rawjson object, assembled from the log up to line `lineno`."""
        for vertex in items(obj, "vertexes"):
            self._on_vertex(vertex, now, lineno)
        for log in items(obj, "logs"):
            self._on_log(log, now, lineno)
        for status in items(obj, "statuses"):
            step = self.book.by_digest.get(str(status.get("vertex")))
            if step is not None:
                self.book.touch(step, lineno, now)

    def _vertex_step(self, digest: str, name: str, now: float) -> StepState:
        step = self.book.by_digest.get(digest)
        if step is None:
            step = self.book.new_step(len(self.book.by_digest) + 1, digest, name, now)
            step.status = StepStatus.PENDING
            step.started = None
            self.book.by_digest[digest] = step
        return step

    def _on_vertex(self, vertex: dict[str, Any], now: float, lineno: int) -> None:
        digest = vertex.get("digest")
        if not isinstance(digest, str):
            self.malformed += 1
            return
        name = vertex.get("name")
        step = self._vertex_step(digest, name if isinstance(name, str) else digest[:19], now)
        self.book.touch(step, lineno, now)
        started = iso_seconds(vertex.get("started"))
        completed = iso_seconds(vertex.get("completed"))
        duration = completed - started if started is not None and completed is not None else None
        error = vertex.get("error")
        if started is not None and step.started is None:
            step.started = now
        if completed is not None:
            self._flush_partial(digest, step, now)
        if vertex.get("cached"):
            self.book.finish(step, StepStatus.CACHED, now, duration)
        elif isinstance(error, str) and error:
            canceled = "context canceled" in error or error.strip() == "canceled"
            status = StepStatus.CANCELED if canceled else StepStatus.ERROR
            self.book.finish(step, status, now, duration, error)
        elif completed is not None:
            self.book.finish(step, StepStatus.DONE, now, duration)
        elif started is not None:
            step.status = StepStatus.RUNNING  # also a vertex that runs again
            step.ended = None

    def _on_log(self, log: dict[str, Any], now: float, lineno: int) -> None:
        digest = str(log.get("vertex"))
        step = self._vertex_step(digest, digest[:19], now)
        self.book.touch(step, lineno, now)
        ts = iso_seconds(log.get("timestamp"))
        if ts is None:
            t = now
        else:
            if step.anchor is None:
                step.anchor = now - ts
            t = step.anchor + ts
        data = self._partials.pop(digest, b"") + decode_log_data(log.get("data"))
        parts = data.split(b"\n")
        rest = parts.pop()
        if rest:
            self._partials[digest] = rest[:_MAX_PARTIAL]
        for raw in parts:
            self.book.output(step, raw.decode("utf-8", "replace").removesuffix("\r"), t, now)

    def _flush_partial(self, digest: str, step: StepState, now: float) -> None:
        rest = self._partials.pop(digest, b"")
        if rest:
            self.book.output(step, rest.decode("utf-8", "replace"), now, now)
