"""`rocmtui run --json`, `rocmtui runs --json` and `rocmtui runs show ID --json` as Structs:
msgspec encodes them in field order (kw_only lets them stand as printed), so the shapes are
written down once, as types. Each view's `of` adds what is computed for the reader (rounded
seconds, a bar's offset, a change's line). Nothing reads this JSON back.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from rocmtui.core.costbook.cost import Condition
from rocmtui.core.runs.chart import Bar, Change, Chart
from rocmtui.core.runs.launch import NodeStart
from rocmtui.core.runs.run import Run


class BuildView(Struct, frozen=True, kw_only=True):
    """One bar: a build of the run, or one target of a bake group's build (`of_group`)."""

    job_id: str
    node: str
    target: str
    arch: str
    started_at: float
    ended_at: float | None
    duration: float
    state: str
    condition: Condition
    started_elsewhere: bool
    offset: float  # seconds from the run's first build's start
    clamped: bool  # its times disagreed with this host's clock and were clamped to draw it
    of_group: str | None  # the bake group whose build this target was (a bar per target)

    @classmethod
    def of(cls, bar: Bar, now: float) -> BuildView:
        """The printed form of `bar`."""
        b = bar.build
        return cls(
            job_id=b.job_id, node=b.node, target=b.target, arch=b.arch,
            started_at=b.started_at, ended_at=b.ended_at, duration=round(b.duration(now), 1),
            state=b.state, condition=b.condition, started_elsewhere=b.started_elsewhere,
            offset=round(bar.start, 1), clamped=bar.clamped, of_group=b.of_group,
        )  # fmt: skip


class LaneView(Struct, frozen=True, kw_only=True):
    """One node's lane."""

    node: str
    busy_seconds: float
    idle_seconds: float
    note: str | None
    builds: list[BuildView]


class ChangeView(Struct, frozen=True, kw_only=True):
    """One build against its match in the run compared with."""

    node: str
    target: str
    arch: str
    before: float | None
    after: float | None
    delta: float | None
    slower: bool
    line: str

    @classmethod
    def of(cls, c: Change) -> ChangeView:
        """The printed form of `c`."""
        return cls(
            node=c.node, target=c.target, arch=c.arch, before=c.before, after=c.after,
            delta=c.delta, slower=c.slower, line=c.line(),
        )  # fmt: skip


class RunView(Struct, frozen=True, kw_only=True):
    """`rocmtui runs show ID --json`: the run drawn, and what changed against the one before."""

    id: str
    target: str
    started_at: float
    origin: str
    started_by: str
    state: str
    running: bool
    wall_seconds: float
    chain: list[str]
    notes: list[str]
    overrides: dict[str, str]
    lanes: list[LaneView]
    compared_with: str | None
    changes: list[ChangeView]

    @classmethod
    def of(
        cls, drawn: Chart, now: float, previous: Run | None, changes: Sequence[Change]
    ) -> RunView:
        """The printed form of `drawn` (`changes`: against `previous`)."""
        r = drawn.run
        lanes = [
            LaneView(
                node=lane.node,
                busy_seconds=round(lane.busy, 1),
                idle_seconds=round(lane.idle, 1),
                note=lane.note,
                builds=[BuildView.of(bar, now) for bar in lane.bars],
            )
            for lane in drawn.lanes
        ]
        return cls(
            id=r.id, target=r.target, started_at=r.started_at, origin=r.origin,
            started_by=r.started_by, state=r.state(), running=drawn.running,
            wall_seconds=round(drawn.wall, 1), chain=list(drawn.chain), notes=list(drawn.notes),
            overrides=dict(r.overrides), lanes=lanes,
            compared_with=previous.id if previous is not None else None,
            changes=[ChangeView.of(c) for c in changes],
        )  # fmt: skip


class RunSummaryView(Struct, frozen=True, kw_only=True):
    """One run as `rocmtui runs --json` lists it."""

    id: str
    target: str
    started_at: float
    origin: str
    started_by: str
    nodes: list[str]
    builds: int
    running: bool
    state: str
    failed: int
    wall_seconds: float
    notes: list[str]

    @classmethod
    def of(cls, drawn: Chart) -> RunSummaryView:
        """The printed form of `drawn`'s run."""
        r = drawn.run
        failed = sum(1 for b in r.builds if b.state in ("failed", "lost", "cancelled"))
        notes = [*drawn.notes, *(f"{ln.node}: {ln.note}" for ln in drawn.lanes if ln.note)]
        return cls(
            id=r.id, target=r.target, started_at=r.started_at, origin=r.origin,
            started_by=r.started_by, nodes=list(r.nodes), builds=len(r.builds),
            running=drawn.running, state=r.state(), failed=failed,
            wall_seconds=round(drawn.wall, 1), notes=notes,
        )  # fmt: skip


class NodeStartView(Struct, frozen=True, kw_only=True):
    """What a run did on one node."""

    node: str
    arch: str
    started: bool
    job_id: str | None
    why_not: str | None


class RunStartView(Struct, frozen=True, kw_only=True):
    """`rocmtui run --json`: the run's id and each node's start."""

    run_id: str
    target: str
    nodes: list[NodeStartView]

    @classmethod
    def of(cls, run: Run, starts: Sequence[NodeStart]) -> RunStartView:
        """The printed form of a launch."""
        return cls(
            run_id=run.id,
            target=run.target,
            nodes=[
                NodeStartView(
                    node=s.node,
                    arch=s.arch,
                    started=s.job is not None,
                    job_id=s.job.id if s.job else None,
                    why_not=s.why_not,
                )
                for s in starts
            ],
        )


__all__ = [
    "BuildView",
    "ChangeView",
    "LaneView",
    "NodeStartView",
    "RunStartView",
    "RunSummaryView",
    "RunView",
]
