"""A build's progress from its log: BuildKit steps and ninja counters, fed line by line.

`ProgressTracker` reads `docker buildx bake` output in either `--progress=plain` or
`--progress=rawjson` form (detected per line; formats in buildkit.py). It reads plain lines
itself and hands rawjson objects to `RawJsonReader` (rawjson.py); both keep per-step counters
in one `StepBook` (steps.py), never the lines themselves, so memory does not grow with the
log. `snapshot()` returns a frozen `JobProgress` for the screen and the CLI.

The tracker only *describes*: whether a job succeeded or failed comes from its exit code and
metadata (HAZARDS.md), never from text in the log -- a `RUN echo "#9 DONE"` is output of the
step that ran it. What it can add is the name of the step that failed and its first error line.

Lines must be split on `\\n` only (open files with `newline="\\n"`): BuildKit output may carry
a bare `\\r` inside a line. Times are the caller's clock (`now`); build output times (seconds
since the step started, or rawjson timestamps) are mapped onto that clock per step, so a
replayed log still gives the build's real compile rate. Strings in the model that came from
the log (names, errors) are already sanitised.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from msgspec.structs import replace

from rocmtui.core.progress.buildkit import (
    BUILDER_LINE,
    PLAIN_DONE,
    PLAIN_LINE,
    JsonObjectAssembler,
)
from rocmtui.core.progress.jobprogress import (
    FINISHED,
    JobProgress,
    Step,
    StepStatus,
    TargetProgress,
    target_progress,
)
from rocmtui.core.progress.ninja import NinjaProgress, WindowRate
from rocmtui.core.progress.rawjson import RawJsonReader
from rocmtui.core.progress.steps import MAX_TEXT, StepBook, freeze
from rocmtui.core.text.sanitize import sanitize_line

__all__ = [
    "FINISHED",
    "JobProgress",
    "NinjaProgress",
    "ProgressTracker",
    "Step",
    "StepStatus",
    "TargetProgress",
    "parse_log_file",
]


class ProgressTracker:
    """Incremental parser of one build log into a `JobProgress` (see the module doc).

    `targets` seeds the names bake will prefix steps with, which settles whether `[x 2/4]`
    names a target or a Dockerfile stage before `[x internal]` has been seen. Malformed input
    never raises: unusable content is counted in `malformed`, and a parser bug is caught and
    counted in `internal_errors` rather than taking a screen down.
    """

    def __init__(
        self, targets: Iterable[str] = (), *, window: float = 60.0, tail_lines: int = 5
    ) -> None:
        """`window` seconds for rates; `tail_lines` of output kept per running step."""
        self._book = StepBook(targets, window, tail_lines)
        self._rawjson = RawJsonReader(self._book)
        self._json = JsonObjectAssembler()
        self._format = "unknown"
        self._prev_blank = True
        self._final_error: str | None = None
        self._builder: str | None = None
        self._line_rate = WindowRate(window)
        self._last_now: float | None = None
        self.lines = 0
        #: Lines that raised inside the parser (a bug; counted instead of raised).
        self.internal_errors = 0

    @property
    def malformed(self) -> int:
        """Lines or objects of a known shape with unusable content (ignored)."""
        return self._rawjson.malformed

    # -- feeding -------------------------------------------------------------------------------

    def feed(self, lines: Iterable[str], now: float) -> None:
        """Feed many lines seen at the same moment."""
        for line in lines:
            self.feed_line(line, now)

    def feed_line(self, line: str, now: float) -> None:
        """Feed one line (its trailing newline optional) seen at tracker time `now`."""
        lineno = self.lines
        self.lines = lineno + 1
        self._last_now = now
        self._line_rate.add(now, lineno + 1)
        line = line.rstrip("\r\n")  # also a log captured through a pty (CR LF endings)
        try:
            self._feed(line, now, lineno)
        except Exception:  # a progress display must never take the console down
            self.internal_errors += 1

    def _feed(self, line: str, now: float, lineno: int) -> None:
        if not line:
            self._prev_blank = True
            return
        if line[0] == "{" or self._json.inside:
            obj = self._json.feed(line)
            if obj is not None:
                if isinstance(obj, dict):
                    self._format = "rawjson"
                    self._rawjson.feed(obj, now, lineno)
                return
        m = PLAIN_LINE.match(line)
        blank_before = self._prev_blank
        self._prev_blank = False
        if m is None:
            if line.startswith("ERROR: "):
                self._final_error = sanitize_line(line[7:], MAX_TEXT)
            return
        number = int(m.group(1))
        rest = line[m.end() :]
        if number == 0:
            if bm := BUILDER_LINE.search(rest):
                self._builder = sanitize_line(bm.group(1), 200)
            return
        if self._format == "unknown":
            self._format = "plain"
        step = self._book.steps.get(number)
        seconds = m.group(2)
        if seconds is not None:  # build output: text of this step, whatever it says
            if step is None:  # the log was cut above this step's header
                step = self._book.new_step(number, str(number), f"#{number}", now)
            self._book.touch(step, lineno, now)
            rel = float(seconds)
            if step.anchor is None:
                step.anchor = now - rel
            self._book.output(step, rest, step.anchor + rel, now)
            return
        keyword = rest in ("CACHED", "CANCELED", "...") or rest.startswith(("DONE ", "ERROR:"))
        if step is None:
            step = self._book.new_step(number, str(number), f"#{number}" if keyword else rest, now)
        self._book.touch(step, lineno, now)
        if rest == "CACHED":
            self._book.finish(step, StepStatus.CACHED, now)
        elif rest == "CANCELED":
            self._book.finish(step, StepStatus.CANCELED, now)
        elif rest.startswith("DONE "):
            dm = PLAIN_DONE.match(rest)
            self._book.finish(step, StepStatus.DONE, now, float(dm.group(1)) if dm else None)
        elif rest.startswith("ERROR:"):
            self._book.finish(step, StepStatus.ERROR, now, error=rest[6:].strip())
        elif blank_before and rest != "...":
            self._book.rename(step, rest)  # the header again, as a paused step resumes

    # -- rawjson -------------------------------------------------------------------------------

    # -- snapshot ------------------------------------------------------------------------------

    def snapshot(
        self,
        now: float | None = None,
        *,
        silence: float | None = None,
        succeeded: bool | None = None,
    ) -> JobProgress:
        """The progress so far. With `now`, rates include the silence since the last line fed;
        with `silence` (the log's age, as the stall check reads it) the compile rate is over the
        build's own times, so every reader of one log gets one rate and ETA.

        `succeeded` is the build's end when it has ended (None while it runs). An ended build
        runs no step, whatever lines the log lacks: BuildKit may leave a vertex's `DONE` out
        (a progress writer closed first, a log cut short), and an outline must never show a
        finished build still working. Such a step reads as done after a success, and as
        cancelled after a failure or a cancel (it was cut off, it did not fail)."""
        clock = now if now is not None else self._last_now
        counter, ninja = self._book.ninja, None
        if counter is not None:
            ninja = counter.snapshot(clock) if silence is None else counter.snapshot_after(silence)
        states = sorted(self._book.steps.values(), key=lambda s: s.number)
        steps = {s.number: freeze(s, clock) for s in states}
        if succeeded is not None:
            settled = StepStatus.DONE if succeeded else StepStatus.CANCELED
            for number, step in steps.items():
                if step.status in (StepStatus.RUNNING, StepStatus.PENDING):
                    steps[number] = replace(step, status=settled, error_tail=())
        targets = target_progress(list(steps.values()), {s.number: s.last_seen for s in states})
        current = self._book.current
        if succeeded is not None:
            current = None
        elif current is None or current.status is not StepStatus.RUNNING:
            running = [s for s in states if s.status is StepStatus.RUNNING]
            current = max(running, key=lambda s: s.last_seen) if running else None
        error_step = steps[self._book.error_step.number] if self._book.error_step else None
        error_line = None
        if error_step is not None:
            error_line = error_step.first_error_line or error_step.error
        return JobProgress(
            format=self._format,
            steps=tuple(steps.values()),
            targets=targets,
            current=steps[current.number] if current else None,
            steps_done=sum(t.steps_done for t in targets),
            steps_total=sum(t.steps_total for t in targets),
            steps_cached=sum(1 for s in states if s.status is StepStatus.CACHED),
            ninja=ninja,
            lines=self.lines,
            line_rate=self._line_rate.rate(clock),
            last_output=self._last_now,
            error_step=error_step,
            error_line=error_line,
            final_error=self._final_error,
            builder=self._builder,
        )


def parse_log_file(path: str | Path, targets: Iterable[str] = (), now: float = 0.0) -> JobProgress:
    """Progress of a whole log file (a finished build, or a test); lines split on `\\n` only."""
    tracker = ProgressTracker(targets)
    with open(path, encoding="utf-8", errors="replace", newline="\n") as fh:
        for line in fh:
            tracker.feed_line(line, now)
    return tracker.snapshot()
