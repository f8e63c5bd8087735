"""A run and its builds, as the run book keeps and reads them."""

from __future__ import annotations

import os
import re
import time

from msgspec import Struct, field
from msgspec.structs import replace

from rocmtui.core.costbook.cost import BuildEvidence, Condition

RUN_ID_RE = re.compile(r"^run-\d{8}-\d{4}-[0-9a-f]{4,8}$")
ORIGIN_ROCMTUI = "rocmtui"
ORIGIN_ELSEWHERE = "elsewhere"


def new_run_id(now: float | None = None) -> str:
    """`run-20261206-1142-ab12`: sortable, and never mistaken for a job id."""
    stamp = time.strftime("%Y%m%d-%H%M", time.gmtime(time.time() if now is None else now))
    return f"run-{stamp}-{os.urandom(2).hex()}"


#: A group's target spans (on its node's BuildKit clock) further than this outside the job's
#: own start and end (this host's clock) are taken for a clock that disagrees.
SKEW_SLACK = 5.0


class TargetSpan(Struct, frozen=True):
    """One target of a bake group built by one job: its BuildKit record's first step's start
    and last step's end, on the node's BuildKit clock (`targetspans` reads them)."""

    target: str
    started: float
    ended: float | None  # None: a step never ended (the build was cut short)
    failed: bool = False  # a step of it failed
    steps: int = 0  # its Dockerfile steps (as `history.steps` counts them: no FROM) ...
    cached: int = 0  # ... and how many of them BuildKit found cached

    def condition(self, job: Condition) -> Condition:
        """Its cache condition: frozen or hot by its own steps; else the job's (which has the
        sccache statistics that tell warm from cold), unless the job's says frozen or hot,
        which its own steps just disproved (unknown then)."""
        own = BuildEvidence(self.steps or None, self.cached).classify()
        if own in (Condition.FROZEN, Condition.HOT):
            return own
        if self.steps and job in (Condition.FROZEN, Condition.HOT):
            return Condition.UNKNOWN
        return job


class RunBuild(Struct, frozen=True):
    """One build of a run: a job, with its live state and (once settled) its cache condition.
    A job that built a bake group carries each target's span (`targets`, once it has ended and
    its records were read), drawn as a bar of its own (`per_target`)."""

    job_id: str
    node: str
    target: str
    arch: str
    started_at: float
    ended_at: float | None  # None while it runs
    state: str  # the job's state word (running, succeeded, failed, stalled, lost ...)
    condition: Condition = Condition.UNKNOWN
    started_elsewhere: bool = False
    targets: tuple[TargetSpan, ...] = ()
    shift: float = 0.0  # seconds its target spans were moved to agree with this host's clock
    group: bool = False  # still running, and its target is a group some earlier job built
    of_group: str | None = None  # one target of this group's build (`per_target`)
    live: bool = False  # its `targets` as bake printed them (`livetargets`): this host's clock

    def duration(self, now: float) -> float:
        """Seconds from start to end (to `now` while it runs)."""
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


def per_target(b: RunBuild) -> list[RunBuild]:
    """A group build as one build per target, each from its own start to its own end; any other
    build as itself. Ended, its spans are its BuildKit records', on the node's BuildKit clock:
    when they fall outside the job's own start and end (this host's clock) by more than
    `SKEW_SLACK`, they are moved together so the first target starts when the job did (`shift`
    says by how much). Running, they are bake's printed times (`live`, this host's clock): a
    target not ended yet runs to now (`ended_at` None), one ended reads succeeded."""
    if len(b.targets) < 2 or (b.ended_at is None and not b.live):
        return [b]
    first = min(t.started for t in b.targets)
    last = max(t.ended if t.ended is not None else t.started for t in b.targets)
    shift = 0.0
    skewed = b.ended_at is not None and (
        first < b.started_at - SKEW_SLACK or last > b.ended_at + SKEW_SLACK
    )
    if skewed and not b.live:
        shift = b.started_at - first
    out = []
    for t in sorted(b.targets, key=lambda t: (t.started, t.target)):
        state = b.state
        if t.failed:
            state = "failed"
        elif t.ended is not None and b.state in ("failed", "running", "stalled"):
            state = "succeeded"  # this target finished; another one failed the bake or runs
        ended = t.ended + shift if t.ended is not None else b.ended_at
        out.append(
            replace(
                b,
                target=t.target,
                started_at=t.started + shift,
                ended_at=ended,
                state=state,
                condition=t.condition(b.condition),
                targets=(),
                shift=shift,
                of_group=b.target,
            )
        )
    return out


class Run(Struct, frozen=True):
    """Builds started together across the fleet (`rocmtui run`, or one bake invocation
    elsewhere found in the nodes' BuildKit history)."""

    id: str
    target: str
    started_at: float
    origin: str  # ORIGIN_ROCMTUI or ORIGIN_ELSEWHERE
    started_by: str
    nodes: tuple[str, ...]  # the nodes it was meant for, in the order asked
    notes: dict[str, str] = field(default_factory=dict)  # node -> why it did not start there
    overrides: dict[str, str] = field(default_factory=dict)  # redacted, for people to read
    builds: tuple[RunBuild, ...] = ()
    missing_jobs: int = 0  # members whose job is no longer in the store

    def bars(self) -> list[RunBuild]:
        """Its builds as drawn: a group build as one per target (`per_target`)."""
        return [one for b in self.builds for one in per_target(b)]

    def running(self) -> bool:
        """A build of it still runs."""
        return any(b.ended_at is None for b in self.builds)

    def state(self) -> str:
        """`running`, `not started` (no build started anywhere), `failed` (a build failed,
        was lost or cancelled, or a node did not start), or `done`."""
        if self.running():
            return "running"
        if not self.builds:
            return "not started"
        bad = any(b.state in ("failed", "lost", "cancelled") for b in self.builds)
        return "failed" if bad or self.notes else "done"


__all__ = [
    "ORIGIN_ELSEWHERE",
    "ORIGIN_ROCMTUI",
    "RUN_ID_RE",
    "SKEW_SLACK",
    "Run",
    "RunBuild",
    "TargetSpan",
    "new_run_id",
    "per_target",
]
