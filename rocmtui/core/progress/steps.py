"""A build's steps as its log tells them, in either format: the counters both readers write.

The plain-line reader (tracker.py) and the rawjson reader (rawjson.py) see the same BuildKit
vertices in two shapes; both keep their per-step counters here, in one `StepBook`, and a
snapshot freezes each into a `Step`. Only counters are kept, never the lines themselves, so
memory does not grow with the log.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rocmtui.core.progress.buildkit import StepName, parse_step_name
from rocmtui.core.progress.jobprogress import Step, StepStatus
from rocmtui.core.progress.ninja import ERROR_LINE, NINJA_STATUS, NinjaCounter
from rocmtui.core.text.sanitize import sanitize_line

MAX_TEXT = 1024  # characters kept of a line from the log (an error, a tail line)


class StepState:
    """Mutable per-step counters behind a frozen `Step`."""

    __slots__ = (
        "anchor", "duration", "ended", "error", "first_error", "first_line", "id", "last_line",
        "last_seen", "line_count", "name", "ninja", "number", "output_lines", "parsed", "started",
        "status", "tail", "targets",
    )  # fmt: skip

    def __init__(self, number: int, ident: str, name: str, parsed: StepName, now: float) -> None:
        self.number = number
        self.id = ident
        self.name = name
        self.parsed = parsed
        self.status = StepStatus.RUNNING
        self.started: float | None = now
        self.ended: float | None = None
        self.duration: float | None = None
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.line_count = 0
        self.output_lines = 0
        self.error: str | None = None
        self.first_error: str | None = None
        self.tail: deque[str] | None = None
        self.ninja: NinjaCounter | None = None
        self.anchor: float | None = None
        self.last_seen = now
        self.targets: list[str] = [parsed.target] if parsed.target else []


class StepBook:
    """Every step seen so far, by number (and by digest for rawjson), and the ones that matter
    to a snapshot: the step last written to, the last ninja counter, the first failed step."""

    def __init__(self, known_targets: Iterable[str], window: float, tail_lines: int) -> None:
        """`window` seconds for a ninja counter's rates; `tail_lines` of output kept per step."""
        self.known_targets: set[str] = set(known_targets)
        self.window = window
        self.tail_lines = tail_lines
        self.steps: dict[int, StepState] = {}
        self.by_digest: dict[str, StepState] = {}
        self.current: StepState | None = None
        self.ninja: NinjaCounter | None = None
        self.error_step: StepState | None = None

    def new_step(self, number: int, ident: str, name: str, now: float) -> StepState:
        """A step first seen now (its name sanitised and parsed for target and stage)."""
        clean = sanitize_line(name, 512)
        step = StepState(number, ident, clean, parse_step_name(clean, self.known_targets), now)
        if self.tail_lines:
            step.tail = deque(maxlen=self.tail_lines)
        self.steps[number] = step
        return step

    def rename(self, step: StepState, name: str) -> None:
        """A vertex printed under another name: bake merged identical vertices of targets."""
        if name == step.name:
            return
        parsed = parse_step_name(sanitize_line(name, 512), self.known_targets)
        if parsed.target and parsed.target not in step.targets:
            step.targets.append(parsed.target)

    def touch(self, step: StepState, lineno: int, now: float) -> None:
        """Line `lineno` is the step's: its line span, and it is the current step."""
        if step.first_line is None:
            step.first_line = lineno
        step.last_line = lineno
        step.line_count += 1
        step.last_seen = now
        self.current = step

    def output(self, step: StepState, text: str, t: float, now: float) -> None:
        """A line of the step's own output at build time `t`: its tail, its first error
        line, its ninja counter."""
        step.output_lines += 1
        if step.tail is not None:
            step.tail.append(text)
        if (
            step.first_error is None
            and ("rror" in text or "FAILED" in text)
            and ERROR_LINE.search(text)
        ):
            step.first_error = sanitize_line(text, MAX_TEXT)
        if text[:1] == "[" and (nm := NINJA_STATUS.match(text)):
            counter = step.ninja
            if counter is None:
                counter = step.ninja = NinjaCounter(step.number, self.window)
            counter.update(int(nm.group(1)), int(nm.group(2)), t, now)
            self.ninja = counter

    def finish(
        self,
        step: StepState,
        status: StepStatus,
        now: float,
        duration: float | None = None,
        error: str | None = None,
    ) -> None:
        """The step ended as `status` (BuildKit's `duration` when it gave one)."""
        step.status = status
        step.ended = now
        if duration is not None:
            step.duration = duration
        elif step.started is not None:
            step.duration = max(0.0, now - step.started)
        if error:
            step.error = sanitize_line(error, MAX_TEXT)
        if status is StepStatus.ERROR:
            if self.error_step is None:
                self.error_step = step
        else:
            step.tail = None  # only a failed step's last lines are worth keeping


def freeze(s: StepState, clock: float | None) -> Step:
    """The frozen `Step` a snapshot publishes (its tail only while running or failed)."""
    p = s.parsed
    tail: tuple[str, ...] = ()
    if s.tail and s.status in (StepStatus.ERROR, StepStatus.RUNNING):
        tail = tuple(sanitize_line(line, MAX_TEXT) for line in s.tail)
    return Step(
        number=s.number, id=s.id, name=s.name, title=p.title, target=p.target, stage=p.stage,
        index=p.index, total=p.total, internal=p.internal, status=s.status, started=s.started,
        ended=s.ended, duration=s.duration, first_line=s.first_line, last_line=s.last_line,
        line_count=s.line_count, output_lines=s.output_lines, error=s.error,
        first_error_line=s.first_error, error_tail=tail,
        ninja=s.ninja.snapshot(clock) if s.ninja else None, targets=tuple(s.targets),
    )  # fmt: skip
