"""The frozen progress model that `ProgressTracker` (tracker.py) publishes."""

from __future__ import annotations

from enum import StrEnum

from msgspec import Struct

from rocmtui.core.progress.ninja import NinjaProgress


class StepStatus(StrEnum):
    """Where a BuildKit step stands, as the log tells it."""

    PENDING = "pending"  # announced (rawjson) but not started
    RUNNING = "running"
    DONE = "done"
    CACHED = "cached"
    ERROR = "error"
    CANCELED = "canceled"


FINISHED = frozenset({StepStatus.DONE, StepStatus.CACHED, StepStatus.ERROR, StepStatus.CANCELED})


class Step(Struct, frozen=True):
    """One BuildKit vertex. `number` is `#N` (plain) or the order of first appearance (rawjson,
    where `id` is the digest). `first_line`/`last_line` are 0-based line numbers in the fed
    stream (a step's lines interleave with others'; `line_count` says how many are its own).
    `started`/`ended` are tracker-clock times; `duration` is BuildKit's own when it gave one."""

    number: int
    id: str
    name: str
    title: str
    target: str | None
    stage: str | None
    index: int | None
    total: int | None
    internal: bool
    status: StepStatus
    started: float | None
    ended: float | None
    duration: float | None
    first_line: int | None
    last_line: int | None
    line_count: int
    output_lines: int
    error: str | None
    first_error_line: str | None
    error_tail: tuple[str, ...]
    ninja: NinjaProgress | None
    targets: tuple[str, ...]


class TargetProgress(Struct, frozen=True):
    """One bake target's stream. `steps_done`/`steps_total` come from the `[target i/n]`
    prefixes: per stage, the highest finished `i` of `n` (stages run in order, and a vertex
    shared by two targets is printed under one name only)."""

    name: str | None
    steps_done: int
    steps_total: int
    cached: int
    running: tuple[int, ...]
    current: int | None
    error_step: int | None


class JobProgress(Struct, frozen=True):
    """Everything the log says about a job's progress, frozen at one moment."""

    format: str  # "plain", "rawjson" or "unknown"
    steps: tuple[Step, ...]
    targets: tuple[TargetProgress, ...]
    current: Step | None
    steps_done: int
    steps_total: int
    steps_cached: int
    ninja: NinjaProgress | None
    lines: int
    line_rate: float | None
    last_output: float | None
    error_step: Step | None
    error_line: str | None
    final_error: str | None
    builder: str | None

    def step(self, number: int) -> Step | None:
        """The step with this number, if any."""
        for step in self.steps:
            if step.number == number:
                return step
        return None


def target_progress(steps: list[Step], seen: dict[int, float]) -> tuple[TargetProgress, ...]:
    """Per-target counts; stages are counted by their highest finished index. `seen` maps a
    step number to the time of its latest line (to pick each target's current step)."""
    groups: dict[tuple[str | None, str | None], list[int]] = {}
    names: dict[str | None, None] = {}
    for step in steps:
        names.setdefault(step.target, None)
        if step.index is not None and step.total:
            group = groups.setdefault((step.target, step.stage), [0, 0])
            group[0] = max(group[0], step.total)
            if step.status in (StepStatus.DONE, StepStatus.CACHED):
                group[1] = max(group[1], min(step.index, step.total))
    out = []
    if len(names) > 1 and not any(t is None for t, _ in groups):
        names.pop(None, None)  # only bake's own `[internal]` steps: not a target stream
    for name in names:
        own = [s for s in steps if s.target == name]
        running = [s.number for s in own if s.status is StepStatus.RUNNING]
        errors = [s.number for s in own if s.status is StepStatus.ERROR]
        out.append(
            TargetProgress(
                name=name,
                steps_done=sum(g[1] for (t, _), g in groups.items() if t == name),
                steps_total=sum(g[0] for (t, _), g in groups.items() if t == name),
                cached=sum(1 for s in own if s.status is StepStatus.CACHED),
                running=tuple(running),
                current=max(running, key=lambda n: seen[n]) if running else None,
                error_step=errors[0] if errors else None,
            )
        )
    return tuple(out)
