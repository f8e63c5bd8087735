"""What a build costs: its cache condition, from evidence, and the time such builds take.

rocm-bake's own reports track build time under four cache conditions. rocmtui classifies each
finished build from two pieces of evidence, never from its duration:

- the share of its Dockerfile steps BuildKit found cached (`steps.StepCounts`, from its log;
  BuildKit's own counts from `history inspect` when there is no log);
- sccache's hit rate over the compiles it looked up (`core.progress.sccache.CacheStats`).

In this order, the first that holds:

- `frozen`: every step cached (nothing rebuilt);
- `hot`: at least `HOT_MIN_CACHED_SHARE` of the steps cached: the compile steps were found in
  BuildKit's local cache, only later layers ran;
- `warm`: layers rebuilt, and sccache answered at least `WARM_MIN_HIT_RATE` of the compiles;
- `cold`: layers rebuilt and sccache answered fewer;
- `unknown`: the evidence to decide is missing (no step counts; or layers rebuilt and no
  sccache statistics, so nobody can say whether the compile cache helped). Never guessed.

Durations are compared per target × arch × node and condition, over builds that succeeded.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from msgspec import Struct

from rocmtui.core.text.units import fmt_age

#: A build with at least this share of its steps cached (but not all) is `hot`.
HOT_MIN_CACHED_SHARE = 0.5
#: Layers rebuilt and sccache answered at least this share of compile lookups: `warm`.
WARM_MIN_HIT_RATE = 0.6
#: A duration is a regression when the last build under a condition took this many times the
#: median of the previous `REGRESSION_WINDOW` builds under the same condition ...
REGRESSION_FACTOR = 1.5
#: ... and at least this many seconds longer (a 10 s build taking 16 s is noise) ...
REGRESSION_MIN_SECONDS = 60.0
#: ... with at least this many earlier builds to compare with.
REGRESSION_MIN_PREVIOUS = 3
REGRESSION_WINDOW = 5
#: sccache hit rate under which a build's compile cache is said to have fallen (when the
#: previous builds' median was at or above it).
LOW_HIT_RATE = 0.5
#: A running build is far past its usual time after p90 × this (of the slowest condition seen).
OVERTIME_FACTOR = 1.5


class Condition(enum.StrEnum):
    """A build's cache condition."""

    FROZEN = "frozen"
    HOT = "hot"
    WARM = "warm"
    COLD = "cold"
    UNKNOWN = "unknown"

    @property
    def letter(self) -> str:
        """One letter for plots and NO_COLOR: F, H, W, C, ?."""
        return "?" if self is Condition.UNKNOWN else self.value[0].upper()


#: Fastest first: the order columns and legends use.
CONDITIONS = (Condition.FROZEN, Condition.HOT, Condition.WARM, Condition.COLD, Condition.UNKNOWN)


class BuildEvidence(Struct, frozen=True):
    """What a build's log and history say about its caches (None: not known)."""

    steps_total: int | None = None
    steps_cached: int | None = None
    sccache_hits: int | None = None
    sccache_misses: int | None = None
    steps_from: str | None = None  # "log" or "buildkit": where the step counts came from

    @property
    def cached_share(self) -> float | None:
        """Cached steps per step (0..1)."""
        if not self.steps_total or self.steps_cached is None:
            return None
        return self.steps_cached / self.steps_total

    @property
    def hit_rate(self) -> float | None:
        """sccache hits per looked-up compile (0..1); None with no lookup."""
        if self.sccache_hits is None or self.sccache_misses is None:
            return None
        lookups = self.sccache_hits + self.sccache_misses
        return self.sccache_hits / lookups if lookups else None

    def classify(self) -> Condition:
        """The condition this evidence proves (see the module doc)."""
        share = self.cached_share
        if share is None:
            return Condition.UNKNOWN
        if share >= 1.0:
            return Condition.FROZEN
        if share >= HOT_MIN_CACHED_SHARE:
            return Condition.HOT
        rate = self.hit_rate
        if rate is None:
            return Condition.UNKNOWN
        return Condition.WARM if rate >= WARM_MIN_HIT_RATE else Condition.COLD

    def describe(self) -> str:
        """`warm: 0/31 steps cached, sccache 92% hits` (the condition with its evidence)."""
        parts = []
        if self.steps_total:
            parts.append(f"{self.steps_cached or 0}/{self.steps_total} steps cached")
        else:
            parts.append("no step counts")
        rate = self.hit_rate
        if rate is not None:
            parts.append(f"sccache {rate * 100:.0f}% hits")
        elif self.sccache_hits is not None:
            parts.append("sccache looked nothing up")
        else:
            parts.append("no sccache statistics")
        return f"{self.classify()}: " + ", ".join(parts)


class CostPoint(Struct, frozen=True):
    """One finished build as the statistics see it."""

    started_at: float
    duration: float
    condition: Condition
    succeeded: bool
    hit_rate: float | None = None


class ConditionStats(Struct, frozen=True):
    """Durations (seconds) of the succeeded builds of one group under one condition."""

    count: int
    median: float
    p90: float
    last: float


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..1) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Iterable[float]) -> float:
    """The median (`statistics` is not imported: the fleet file's reader imports this module)."""
    return percentile(list(values), 0.5)


def condition_stats(points: Iterable[CostPoint]) -> dict[Condition, ConditionStats]:
    """Median, p90 and last duration per condition over succeeded builds (oldest first in)."""
    by: dict[Condition, list[float]] = {}
    for p in sorted(points, key=lambda p: p.started_at):
        if p.succeeded:
            by.setdefault(p.condition, []).append(p.duration)
    return {
        c: ConditionStats(count=len(d), median=median(d), p90=percentile(d, 0.9), last=d[-1])
        for c, d in by.items()
    }


class Regression(Struct, frozen=True):
    """A group's last build under a condition took much longer, or its hit rate fell."""

    kind: str  # "duration" or "hit-rate"
    condition: Condition
    last: float  # seconds, or the hit rate (0..1)
    median: float  # of the previous builds (same unit)
    started_at: float  # the last build's start

    def describe(self) -> str:
        """`warm took 3h10m, usually 2h05m` / `sccache hits fell to 12% (usually 91%)`."""
        if self.kind == "duration":
            return f"{self.condition} took {fmt_age(self.last)}, usually {fmt_age(self.median)}"
        return f"sccache hits fell to {self.last * 100:.0f}% (usually {self.median * 100:.0f}%)"


def regressions(points: Iterable[CostPoint]) -> list[Regression]:
    """The group's regressions: per condition, the last succeeded build against the median of
    the `REGRESSION_WINDOW` before it; and the last build with sccache lookups whose hit rate
    fell under `LOW_HIT_RATE` while the previous ones' median was at or above it."""
    ordered = sorted(points, key=lambda p: p.started_at)
    found: list[Regression] = []
    by: dict[Condition, list[CostPoint]] = {}
    for p in ordered:
        if p.succeeded and p.condition is not Condition.UNKNOWN:
            by.setdefault(p.condition, []).append(p)
    for condition in CONDITIONS:
        runs = by.get(condition, [])
        if len(runs) < REGRESSION_MIN_PREVIOUS + 1:
            continue
        last, before = runs[-1], runs[-1 - REGRESSION_WINDOW : -1]
        usual = median(p.duration for p in before)
        if last.duration > usual * REGRESSION_FACTOR and (
            last.duration - usual >= REGRESSION_MIN_SECONDS
        ):
            found.append(Regression("duration", condition, last.duration, usual, last.started_at))
    rated = [p for p in ordered if p.hit_rate is not None]
    if len(rated) >= REGRESSION_MIN_PREVIOUS + 1:
        last, before = rated[-1], rated[-1 - REGRESSION_WINDOW : -1]
        usual = median(p.hit_rate for p in before if p.hit_rate is not None)
        assert last.hit_rate is not None
        if last.hit_rate < LOW_HIT_RATE <= usual:
            found.append(
                Regression("hit-rate", last.condition, last.hit_rate, usual, last.started_at)
            )
    return found


class Estimate(Struct, frozen=True):
    """What a build of a group is expected to take: a condition's median, and its p90."""

    seconds: float
    condition: Condition
    p90: float
    count: int
    assumed: bool  # the condition is the last build's (the build's own is not known yet)

    def describe(self) -> str:
        """`≈ 2h10m, warm` (`..., warm as last time` when assumed)."""
        tail = " as last time" if self.assumed else ""
        return f"{self.short()}{tail}"

    def short(self) -> str:
        """`≈ 2h10m, warm`."""
        return f"≈ {fmt_age(self.seconds)}, {self.condition}"


def estimate(points: Sequence[CostPoint], condition: Condition | None = None) -> Estimate | None:
    """What such a build takes under `condition` (None or unknown: the condition of the last
    succeeded build, said to be assumed); None without a succeeded build to go by."""
    stats = condition_stats(points)
    assumed = condition is None or condition is Condition.UNKNOWN
    if assumed:
        done = sorted((p for p in points if p.succeeded), key=lambda p: p.started_at)
        if not done:
            return None
        condition = done[-1].condition
    assert condition is not None
    found = stats.get(condition)
    if found is None:
        return None
    return Estimate(found.median, condition, found.p90, found.count, assumed)


def overtime_limit(points: Sequence[CostPoint]) -> float | None:
    """Seconds after which a running build of the group is far past its usual time: p90 ×
    `OVERTIME_FACTOR` of the slowest condition seen (a running build's own condition is known
    only at its end, so the limit never flags a cold build by a frozen one's time)."""
    stats = condition_stats(points)
    if not stats:
        return None
    return max(s.p90 for s in stats.values()) * OVERTIME_FACTOR


def overtime_note(elapsed: float, points: Sequence[CostPoint]) -> str | None:
    """`running far past usual: 3h20m, usually at most 2h10m` (None: within its usual time)."""
    limit = overtime_limit(points)
    if limit is None or elapsed <= limit:
        return None
    usual = limit / OVERTIME_FACTOR
    return f"running far past usual: {fmt_age(elapsed)}, usually at most {fmt_age(usual)}"


def thresholds() -> dict[str, float | int]:
    """The named constants, as `rocmtui history --json` reports them."""
    return {
        "hot_min_cached_share": HOT_MIN_CACHED_SHARE,
        "warm_min_hit_rate": WARM_MIN_HIT_RATE,
        "regression_factor": REGRESSION_FACTOR,
        "regression_min_seconds": REGRESSION_MIN_SECONDS,
        "regression_min_previous": REGRESSION_MIN_PREVIOUS,
        "regression_window": REGRESSION_WINDOW,
        "low_hit_rate": LOW_HIT_RATE,
        "overtime_factor": OVERTIME_FACTOR,
    }
