"""A build's steps on its own time axis: each step's wait before it started and its run, the
cached ones, the critical path summed. What `rocmtui history show` prints and the console's
timeline draws (one computation, two readers).

Times are seconds from the build's first step start; steps are listed by start. A step's
*wait* runs from the moment it could start (its inputs' last completion; for a step BuildKit
gives no inputs, the step before it on the critical path, else none) to its start; its
*run* from its start to its completion. Clocks that disagree (a step ending before it
starts, starting before its inputs ended) give no negative bar: the run reads unknown and the
wait 0, and the step is flagged `skewed`.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from rocmtui.core.history.stepgraph import CriticalPath, Step, critical_path

#: What a step BuildKit named nothing (or with no string) is called: said, never a blank.
NO_NAME = "(no name reported)"


def shown_name(name: str) -> str:
    """A step's name as printed or drawn (already sanitised by the collector)."""
    return name or NO_NAME


class StepTime(Struct, frozen=True):
    """One step placed on the build's axis (seconds from the build's start)."""

    index: int  # order first reported (steps are listed by start, then this)
    digest: str
    name: str  # sanitised
    start: float | None  # None: never started (cached without a time, or waiting)
    wait: float
    run: float | None  # None: unknown (skewed clock); an open step runs until now
    cached: bool
    error: str | None
    critical: bool
    open: bool  # started, not completed: still running
    skewed: bool

    @property
    def end(self) -> float | None:
        """Where its bar ends."""
        if self.start is None:
            return None
        return self.start + (self.run or 0.0)


class StepReport(Struct, frozen=True):
    """Every step of one build, and its critical path."""

    started_at: float | None  # epoch of the first step start
    span: float  # seconds from the first start to the last completion (or now)
    steps: tuple[StepTime, ...]
    path: CriticalPath
    running: bool
    dropped: int = 0  # steps past the bound, not kept

    @classmethod
    def build(
        cls,
        steps: Sequence[Step],
        now: float | None = None,
        running: bool = False,
        dropped: int = 0,
    ) -> StepReport:
        """Place `steps` (a running build's open steps run until `now`)."""
        live_now = now if running else None
        starts = [s.started for s in steps if s.started is not None]
        origin = min(starts) if starts else None
        path = critical_path(steps, live_now)
        on_path = set(path.digests)
        by = {s.digest: s for s in steps}
        prev_on_path = {
            d: by[p].completed for p, d in zip(path.digests, path.digests[1:], strict=False)
        }
        out: list[StepTime] = []
        last = origin or 0.0
        for i, s in enumerate(steps):
            start = None if s.started is None or origin is None else s.started - origin
            is_open = s.started is not None and s.completed is None
            run = s.run
            if is_open and live_now is not None and s.started is not None:
                run = max(live_now - s.started, 0.0)
            # the moment it could start: its inputs' last completion; for a step BuildKit
            # gives no input, the step before it on the critical path, else its own start
            ready = prev_on_path.get(s.digest, s.started) if not s.inputs else None
            for d in s.inputs:
                parent = by.get(d)
                if parent is not None and parent.completed is not None:
                    ready = parent.completed if ready is None else max(ready, parent.completed)
            wait = 0.0
            skewed = s.skewed
            if s.started is not None and ready is not None:
                wait = s.started - ready
                if wait < 0:
                    skewed = skewed or wait < -0.5
                    wait = 0.0
            if s.completed is not None:
                last = max(last, s.completed)
            elif s.started is not None:
                last = max(last, live_now if live_now is not None else s.started)
            out.append(
                StepTime(
                    index=i,
                    digest=s.digest,
                    name=s.name,
                    start=start,
                    wait=wait,
                    run=run,
                    cached=s.cached,
                    error=s.error,
                    critical=s.digest in on_path,
                    open=is_open,
                    skewed=skewed,
                )
            )
        span = max(last - origin, 0.0) if origin is not None else 0.0
        out.sort(key=lambda t: (t.start is None, t.start or 0.0, t.index))
        return cls(origin, span, tuple(out), path, running, dropped)

    @property
    def critical_steps(self) -> list[StepTime]:
        """The critical path's steps, first first."""
        by = {s.digest: s for s in self.steps}
        return [by[d] for d in self.path.digests if d in by]


__all__ = ["NO_NAME", "StepReport", "StepTime", "shown_name"]
