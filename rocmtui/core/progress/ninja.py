"""What compile output says: ninja's `[i/N]` counter and error lines; sliding-window rates for
progress counters (that counter and the plain count of log lines). Bounded: a window keeps at
most `max_samples` points whatever the rate."""

from __future__ import annotations

import re
from collections import deque

from msgspec import Struct

#: ninja's default status prefix (`NINJA_STATUS="[%f/%t] "`) at the start of an output line.
NINJA_STATUS = re.compile(r"\[(\d{1,9})/(\d{1,9})\] ")

#: An error line as compilers, ninja, BuildKit and Python print it, in a raw log line (after a
#: BuildKit `#10 1.090 ` prefix) or in a step's own text: `foo.hip:3:1: error: ...`,
#: `error[E0425]:`, `fatal error`, `FAILED: ...`, `#10 ERROR: ...`, `RuntimeError: ...`.
#: Never a warning that mentions failing: clang's `[-Wpass-failed=transform-warning]` is on
#: every other line of a HIP build, and a flag such as `-Wno-error=...` is not an error either.
ERROR_LINE = re.compile(
    r"(?:^|\s)(?:error|Error|ERROR)(?:\[[^\]]{0,20}\])?:|(?:^|\s)FAILED: |fatal error"
    r"|\b[A-Z][A-Za-z]*Error: ",
    re.MULTILINE,
)


class NinjaProgress(Struct, frozen=True):
    """One ninja counter: `done` of `total` edges, `rate` in edges per second over the window
    (None until two samples exist), `eta_seconds` at that rate, `step` the BuildKit step that
    printed it, `updated` the tracker clock of the last counter line."""

    done: int
    total: int
    rate: float | None
    eta_seconds: float | None
    step: int
    updated: float

    @property
    def fraction(self) -> float:
        """done / total, 0.0 when the total is unknown."""
        return self.done / self.total if self.total else 0.0


class WindowRate:
    """Rate of a growing count over the last `window` seconds, from at most `max_samples`
    points: a sample is committed only every window/max_samples seconds, so `add` is two
    stores and a comparison on the hot path; the newest value is kept aside."""

    __slots__ = ("_committed", "_latest", "_latest_t", "_samples", "_spacing", "window")

    def __init__(self, window: float = 60.0, max_samples: int = 64) -> None:
        """`window` seconds of history are kept."""
        self.window = window
        self._spacing = window / max_samples
        self._samples: deque[tuple[float, int]] = deque()
        self._committed = float("-inf")
        self._latest_t = 0.0
        self._latest = 0

    @property
    def latest_time(self) -> float:
        """The time of the newest sample (the clock of `add`)."""
        return self._latest_t

    def reset(self) -> None:
        """Forget every sample (a counter that went backwards started over)."""
        self._samples.clear()
        self._committed = float("-inf")

    def add(self, t: float, count: int) -> None:
        """Record that the count was `count` at time `t`."""
        self._latest_t = t
        self._latest = count
        if t - self._committed < self._spacing:
            return
        self._committed = t
        samples = self._samples
        samples.append((t, count))
        horizon = t - self.window
        while len(samples) > 2 and samples[1][0] <= horizon:
            samples.popleft()

    def rate(self, now: float | None = None) -> float | None:
        """Count per second across the window. Given `now` later than the last sample, the
        silence since counts too, so a stalled counter's rate falls instead of freezing."""
        samples = self._samples
        if not samples:
            return None
        t0, c0 = samples[0]
        t1, c1 = self._latest_t, self._latest
        if now is not None and now > t1 + self._spacing:
            t1 = now
            horizon = now - self.window
            inside = [sample for sample in samples if sample[0] >= horizon]
            if not inside:
                return 0.0  # nothing moved for a whole window
            t0, c0 = inside[0]
        if t1 - t0 <= 0:
            return None
        return (c1 - c0) / (t1 - t0)


class NinjaCounter:
    """The state of one ninja invocation inside one step."""

    __slots__ = ("done", "rate", "step", "total", "updated")

    def __init__(self, step: int, window: float = 60.0) -> None:
        """A counter for BuildKit step `step`."""
        self.step = step
        self.done = 0
        self.total = 0
        self.updated = 0.0
        self.rate = WindowRate(window)

    def update(self, done: int, total: int, t: float, now: float) -> None:
        """A `[done/total]` line printed at build time `t` (tracker clock), seen at `now`."""
        if done < self.done or total < self.total // 2:
            self.rate.reset()  # a new ninja run (or a re-plan) started counting again
        self.done = done
        self.total = total
        self.updated = now
        self.rate.add(t, done)

    def snapshot(self, now: float | None) -> NinjaProgress:
        """Frozen view with rate and ETA."""
        return self._frozen(self.rate.rate(now))

    def snapshot_after(self, silence: float) -> NinjaProgress:
        """Frozen view with the rate over the build's own times (the `#N 12.345` seconds
        BuildKit prints), the last `silence` seconds of no output counted in. Whoever reads the
        log, whenever, gets the same answer for the same bytes and the same silence."""
        return self._frozen(self.rate.rate(self.rate.latest_time + max(0.0, silence)))

    def _frozen(self, rate: float | None) -> NinjaProgress:
        eta = None
        if rate and rate > 0 and self.total >= self.done:
            eta = (self.total - self.done) / rate
        return NinjaProgress(self.done, self.total, rate, eta, self.step, self.updated)
