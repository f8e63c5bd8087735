"""A run as a chart, pure: one lane per node, one bar per build from its start to its end
(to now while it runs; a bake group's build one bar per target: `Run.bars`, from bake's printed
vertex names while it runs and from its targets' BuildKit records once ended),
the run's wall time, each node's busy and idle time, and the chain of builds that set the
run's length; and `compare`, which build on which node got slower.

Times are the job records': a build rocmtui started carries this host's clock (its supervisor
writes it); a build started elsewhere carries its node's, which may disagree. A bar that ends
before it starts, or starts after `now` (a node's clock ahead), is drawn clamped, and its lane
says so in one line, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from rocmtui.core.runs.run import Run, RunBuild
from rocmtui.core.text.units import fmt_age

#: A later build on a lane starting within this of the previous one's end continues a chain.
CHAIN_GAP = 60.0
#: A build is slower in a comparison when it took this much longer (seconds and share).
SLOWER_MIN_SECONDS = 2.0
SLOWER_MIN_SHARE = 0.10


class Bar(Struct, frozen=True):
    """One build as drawn: offsets in seconds from the run's start."""

    build: RunBuild
    start: float
    end: float
    running: bool
    clamped: bool = False  # its times disagreed (clock skew) and were clamped to draw it

    @property
    def length(self) -> float:
        """Seconds drawn."""
        return max(0.0, self.end - self.start)


class Lane(Struct, frozen=True):
    """One node's row: its bars, busy and idle time, and a note (why nothing started there,
    the node gone from the fleet file, a clock that disagrees)."""

    node: str
    bars: tuple[Bar, ...]
    busy: float
    idle: float
    note: str | None = None


class Chart(Struct, frozen=True):
    """A run ready to draw."""

    run: Run
    lanes: tuple[Lane, ...]
    wall: float  # seconds from the first build's start to the last end (now while running)
    chain: tuple[str, ...]  # job ids of the builds that set the run's length, in order
    running: bool
    notes: tuple[str, ...] = ()  # run-wide lines: builds lost from the store ...
    links: tuple[RunBuild, ...] = ()  # the chain's bars (a group's: its targets), in order


def _union(spans: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by the spans."""
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def _origin(run: Run, now: float) -> float:
    """The chart's zero: the first build's start (the run's own start with none yet)."""
    starts = [b.started_at for b in run.bars() if b.started_at <= now]
    return min(starts) if starts else run.started_at


def _offsets(b: RunBuild, origin: float, now: float) -> tuple[float, float]:
    """A build's bar (start, end) in seconds from `origin`, clamped to [0, now]."""
    end_at = b.ended_at if b.ended_at is not None else now
    start = min(max(0.0, b.started_at - origin), max(0.0, now - origin))
    return start, max(start, min(end_at, now) - origin)


def wall_of(run: Run, now: float) -> float:
    """The chart's wall time without drawing it (a list of many runs needs only this)."""
    origin = _origin(run, now)
    return max((_offsets(b, origin, now)[1] for b in run.bars()), default=0.0)


def chart(run: Run, now: float, fleet_nodes: Sequence[str] | None = None) -> Chart:
    """Draw `run` as of `now`; `fleet_nodes` (the fleet file's, when known) marks lanes of
    nodes removed since."""
    origin = _origin(run, now)
    bars_by: dict[str, list[Bar]] = {}
    skewed: set[str] = set()
    shifted: dict[str, float] = {}
    grouped: set[str] = set()
    printed: set[str] = set()
    for b in sorted(run.bars(), key=lambda b: (b.started_at, b.job_id, b.target)):
        if b.shift:
            shifted[b.node] = b.shift
        if b.group and b.ended_at is None and b.of_group is None:
            grouped.add(b.node)
        if b.live and b.of_group is not None:
            printed.add(b.node)
        end_at = b.ended_at if b.ended_at is not None else now
        clamped = b.started_at > now or end_at < b.started_at
        start, end = _offsets(b, origin, now)
        if clamped:
            skewed.add(b.node)
        bars_by.setdefault(b.node, []).append(
            Bar(b, start, end, running=b.ended_at is None, clamped=clamped)
        )
    ends = [bar.end for bars in bars_by.values() for bar in bars]
    wall = max(ends, default=0.0)
    order = list(dict.fromkeys([*run.nodes, *bars_by]))
    lanes = []
    for node in order:
        bars = tuple(bars_by.get(node, ()))
        busy = _union([(bar.start, bar.end) for bar in bars])
        said = []
        if node in run.notes:
            said.append(f"did not start: {run.notes[node]}")
        elif not bars:
            said.append("no build recorded")
        if fleet_nodes is not None and node not in fleet_nodes:
            said.append("no longer in the fleet file")
        if node in skewed:
            said.append("its clock disagrees with this host's: times clamped")
        if node in grouped:
            said.append("a group still running: one bar until it ends, then one per target")
        if node in printed:
            said.append("a group's target times as bake printed them")
        if node in shifted:
            said.append(
                f"its BuildKit clock is about {fmt_age(abs(shifted[node]))} "
                f"{'behind' if shifted[node] > 0 else 'ahead of'} this host's: "
                "a group's target bars start with its build"
            )
        lanes.append(Lane(node, bars, busy, max(0.0, wall - busy), "; ".join(said) or None))
    notes = []
    if run.missing_jobs:
        n = run.missing_jobs
        notes.append(f"{n} build{'s' * (n > 1)} of this run no longer in the job store")
    links = _chain(lanes, wall)
    chain = tuple(b.job_id for b in links)
    return Chart(run, tuple(lanes), wall, chain, run.running(), tuple(notes), links)


def _chain(lanes: Sequence[Lane], wall: float) -> tuple[RunBuild, ...]:
    """The bars that set the run's length: on the lane whose last bar ends last, that bar and
    the bars before it it followed without a gap (a lane of back-to-back builds; a group's
    targets are bars of their own)."""
    best: list[Bar] = []
    for lane in lanes:
        if lane.bars and abs(max(b.end for b in lane.bars) - wall) < 1e-9:
            bars = sorted(lane.bars, key=lambda b: b.end)
            chain = [bars[-1]]
            for bar in reversed(bars[:-1]):
                if chain[-1].start - bar.end <= CHAIN_GAP and bar.end <= chain[-1].start + 1e-9:
                    chain.append(bar)
            if sum(b.length for b in chain) > sum(b.length for b in best):
                best = chain
    return tuple(b.build for b in reversed(best))


class Change(Struct, frozen=True):
    """One build's duration in two runs (matched by node, target and arch)."""

    node: str
    target: str
    arch: str
    before: float | None  # seconds in the earlier run (None: not in it)
    after: float | None

    @property
    def delta(self) -> float | None:
        """Seconds slower (negative: faster)."""
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def slower(self) -> bool:
        """It got noticeably slower."""
        d = self.delta
        return (
            d is not None
            and self.before is not None
            and d >= SLOWER_MIN_SECONDS
            and d >= self.before * SLOWER_MIN_SHARE
        )

    @property
    def faster(self) -> bool:
        """It got noticeably faster."""
        d = self.delta
        return (
            d is not None
            and self.before is not None
            and -d >= SLOWER_MIN_SECONDS
            and -d >= self.before * SLOWER_MIN_SHARE
        )

    def line(self) -> str:
        """`demo-vllm gfx1201 on snoc-think: 1m10s -> 2m05s (+55s, slower)`."""
        what = f"{self.target} {self.arch} on {self.node}".replace("  ", " ")
        if self.before is None:
            return f"{what}: only in the newer run ({fmt_age(self.after)})"
        if self.after is None:
            return f"{what}: only in the earlier run ({fmt_age(self.before)})"
        d = self.delta or 0.0
        sign = "+" if d >= 0 else "-"
        tail = ", slower" if self.slower else ""
        span = f"{fmt_age(self.before)} -> {fmt_age(self.after)}"
        return f"{what}: {span} ({sign}{fmt_age(abs(d))}{tail})"


def compare(before: Run, after: Run, now: float) -> list[Change]:
    """Each build of either run against its match in the other, the most slowed first."""

    def by_key(run: Run) -> dict[tuple[str, str, str], float]:
        out: dict[tuple[str, str, str], float] = {}
        for b in run.bars():
            out[(b.node, b.target, b.arch)] = b.duration(now)
        return out

    a, b = by_key(before), by_key(after)
    changes = [Change(k[0], k[1], k[2], a.get(k), b.get(k)) for k in dict.fromkeys([*a, *b])]
    return sorted(changes, key=lambda c: -(c.delta if c.delta is not None else float("-inf")))


def compare_line(changes: Sequence[Change]) -> str:
    """One line: the build made slowest, or that none got slower."""
    slower = [c for c in changes if c.slower]
    if not slower:
        return "no build got slower"
    more = f" (and {len(slower) - 1} more)" if len(slower) > 1 else ""
    return f"slower: {slower[0].line()}{more}"


__all__ = ["Bar", "Change", "Chart", "Lane", "chart", "compare", "compare_line", "wall_of"]
