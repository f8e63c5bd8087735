"""What the console renders: immutable views of jobs, progress and the bake file, plus formatting
of its own (every unit's wording is the core's: rocmtui.core.text.units).

The core's records are being extended by other hands; the console renders these small frozen
views instead, built from the core's objects in `rocmtui.console.backend.access`, so a field
the core adds or renames changes one adapter, not every widget. Nothing here does I/O or
imports Textual.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from rocmtui.core.bake.entitlements import Privilege
from rocmtui.core.records import PartlyCompared, repr_without
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot
from rocmtui.core.states import JobState, NodeState
from rocmtui.core.text.units import fmt_age

if TYPE_CHECKING:  # types only: the console starts without the launch modules and the store
    from rocmtui.core.jobs.plan import LaunchPlan
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.verdicts.failure import FailureWhy

# State word -> severity class used by the stylesheet-derived palette (see widgets/palette.py).
SEVERITY: dict[str, str] = {
    "ok": "good",
    "succeeded": "good",
    "building": "busy",
    "running": "busy",
    "stalled": "alarm",
    "down": "bad",
    "failed": "bad",
    "lost": "bad",
    "degraded": "warn",
    "slow": "warn",
    "auth": "warn",
    "cancelled": "muted",
    "unknown": "muted",
}
# Sort order of nodes: what needs the operator first (a stalled node sits on top).
NODE_RANK: dict[str, int] = {"stalled": 0, "down": 1, "unknown": 2, "building": 3, "ok": 4}
SPARK_BLOCKS = "▁▂▃▄▅▆▇█"
LATENCY_FLOOR = 0.1  # s: the latency history's full height is at least this


class ProgressView(Struct, frozen=True):
    """A running or finished job's progress, as the core's progress model reports it."""

    step: str | None = None
    steps_done: int = 0
    steps_total: int = 0
    cached: int = 0
    ninja_done: int | None = None
    ninja_total: int | None = None
    rate: float | None = None  # compile lines per second
    eta: float | None = None  # seconds
    last_output_at: float | None = None
    error_step: str | None = None
    steps: tuple[StepView, ...] = ()


class StepView(Struct, frozen=True):
    """One BuildKit step of a job: its number, name, status word and duration."""

    number: str
    name: str
    status: str  # running, done, cached, error, canceled
    duration: float | None = None
    first_line: int | None = None  # line in the log where the step starts, when known


class JobView(Struct, frozen=True):
    """One bake job as the job store records it (whoever started it): the core's record, and
    what the console reads or works out beside it. Widgets read the record's fields as
    `view.record.X`; a build started elsewhere carries in its record what `r` relaunches for
    it (see `adapters.job_view`)."""

    record: JobRecord
    progress: ProgressView | None = None
    loop: str | None = None  # the closed loop's word: in registry, not found, moved, unchecked
    loop_text: str | None = None  # ... as one line with the digests (`✗ not found (recorded …)`)
    cache: str | None = None  # sccache statistics as one line (`sccache 30/40 hits (75%), …`)
    images: tuple[tuple[str, str | None, str | None], ...] = ()  # (target, digest, loop word)
    # while it runs: what such a build took (`≈ 2h10m, warm as last time`), or that it is
    # running far past its usual time (costbook.estimate)
    estimate: str | None = None
    failure: FailureWhy | None = None  # a failed build: why, and what to do next

    @property
    def who(self) -> str:
        """Who started it: the user for rocmtui's own jobs, `elsewhere` (and the client when
        BuildKit knows it) for the others."""
        outside = self.record.outside
        if outside is not None:
            return f"elsewhere ({outside.client})" if outside.client else "elsewhere"
        return self.record.user

    @property
    def active(self) -> bool:
        """Still running (or stalled): a build that keeps going when the console quits."""
        return self.record.state in (JobState.RUNNING, JobState.STALLED)

    def duration(self, now: float) -> float:
        """Seconds from start to end (or to `now` while it runs)."""
        return max(0.0, (self.record.ended_at or now) - self.record.started_at)


class VariableView(Struct, frozen=True):
    """One bake variable: its effective value and where it comes from."""

    name: str
    value: str
    default: str
    source: str  # "default" or "env" (or whatever the core names it)
    secret: bool = False

    @property
    def overridden(self) -> bool:
        """True when the environment, not the bake file, decides the value."""
        return self.source not in ("default", "")


class BakeView(Struct, frozen=True):
    """What the bake file offers: every name bake builds (targets, then groups and matrix
    names, as `rocmtui bake` takes them), pushing targets, arches and variables."""

    path: Path
    targets: tuple[str, ...] = ()
    pushing_targets: frozenset[str] = frozenset()
    arches: tuple[str, ...] = ()
    variables: tuple[VariableView, ...] = ()
    error: str | None = None  # why the file could not be read (shown in the panel)
    default_arch: str | None = None  # GFX_ARCH's default: what a launch builds unless told
    declares_arch: bool = True  # False: no GFX_ARCH in the file, it builds as written


class BakePlan(PartlyCompared, frozen=True):
    """One bake the operator is about to start: the command and what bake resolves.

    `push` is whether the launch pushes, as the core decided it from what bake resolved (the
    operator's `push_switch`, or a target whose output is a registry); only a `ready` plan,
    resolved without error, is ever started."""

    target: str
    arch: str
    node: str
    push: bool
    command: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()  # `bake --print` lines for this plan
    changed: frozenset[int] = frozenset()  # indexes of `resolved` lines that differ from defaults
    error: str | None = None
    push_switch: bool = False  # `--push`: push even a target whose output is not a registry
    overrides: tuple[tuple[str, str], ...] = ()  # variables set for this launch
    push_hosts: tuple[str, ...] = ()  # registry hosts of the tags bake resolved, when it pushes
    missing_logins: tuple[str, ...] = ()  # of those, hosts the docker config has no login for
    arch_pinned: bool = False  # the name fixes the arch (a matrix name such as pytorch-gfx1201)
    ready: bool = False  # resolved by bake with no error: what Start may launch
    # what such a build took before, from the job store's history (None: not asked)
    estimate: str | None = None
    # what bake will ask for (`--allow`), as the core worked it out; Start asks for them
    privileges: tuple[Privilege, ...] = ()
    # what the operator granted in the dialog's question (set only on the plan it dismisses with)
    granted: tuple[str, ...] = ()
    # the core's own LaunchPlan this view shows: Start launches exactly it (no second resolve);
    # it is how the view came to be, not what it shows, so equality and repr leave it out
    core_plan: LaunchPlan | None = None
    NOT_COMPARED = ("core_plan",)

    def __repr__(self) -> str:
        return repr_without(self, "core_plan")


class BakeRequest(Struct, frozen=True):
    """What the bake dialog opens with: `b` names a node; `r` passes exactly what a job built."""

    node: str | None = None
    target: str | None = None
    arch: str | None = None
    ready: bool = False  # focus Start: Enter launches (once bake has resolved it)
    push: bool = False  # the `--push` switch
    overrides: tuple[tuple[str, str], ...] = ()
    allowed: tuple[str, ...] = ()  # what the earlier build was granted: said, and asked again

    @classmethod
    def rebuild(cls, job: JobView) -> BakeRequest:
        """`r` on a job: exactly what it built (the name as given, whether a target, a group or
        a matrix name; its arch, node, push switch and variables), ready to start; what it was
        granted is shown, never granted again unasked."""
        return cls(
            node=job.record.node,
            target=job.record.target,
            arch=job.record.arch or None,
            ready=True,
            push=job.record.push,
            overrides=tuple(sorted(job.record.overrides.items())),
            allowed=job.record.allowed,
        )

    @classmethod
    def elsewhere(cls, job: JobView, fleet: FleetSnapshot | None) -> BakeRequest | None:
        """`r` on a stalled job: what it built, on another node that is `ok` (one of the same
        GPU arch first), ready as `r` is (the dialog shows the node; Enter starts it, and the
        node estimates keep the node named); None when no other node is free."""
        if fleet is None:
            return None
        free = [n for n in fleet.nodes if n.name != job.record.node and n.state is NodeState.OK]
        free.sort(key=lambda n: n.gfx != job.record.arch)
        if not free:
            return None
        return replace(cls.rebuild(job), node=free[0].name)


class ConsoleData(Struct, frozen=True):
    """Everything the fleet screen renders at one moment."""

    fleet: FleetSnapshot | None = None
    jobs: tuple[JobView, ...] = ()
    bake: BakeView | None = None
    latency: dict[str, tuple[float, ...]] = field(default_factory=dict)


# ---------------------------------------------------------------- formatting (pure functions)


def fmt_counter(progress: ProgressView | None, running: bool = True) -> str:
    """`[1234/5678] 12.3/s ETA 4m10s`, or the step count when no compile counter is seen; the
    counter alone once the build has ended (`running=False`: a rate and ETA would be stale)."""
    if progress is None:
        return ""
    parts: list[str] = []
    if progress.ninja_total:
        parts.append(f"[{progress.ninja_done or 0}/{progress.ninja_total}]")
        if running and progress.rate:
            parts.append(f"{progress.rate:.1f}/s")
        if running and progress.eta is not None:
            parts.append(f"ETA {fmt_age(progress.eta)}")
    elif progress.steps_total:
        parts.append(f"steps {progress.steps_done}/{progress.steps_total}")
    return " ".join(parts)


def sparkline(values: Sequence[float], width: int = 16, floor: float = 0.0) -> str:
    """Block-character sparkline of the last `width` values, relative to their own max but
    never to less than `floor` (latencies pass 0.1 s: a service answering in 6-10 ms draws a
    low flat line, not its jitter blown up to full height)."""
    tail = list(values)[-width:]
    if not tail:
        return " " * width
    top = max(*tail, floor) or 1.0
    last = len(SPARK_BLOCKS) - 1
    line = "".join(SPARK_BLOCKS[min(last, round(v / top * last))] for v in tail)
    return line.rjust(width)  # fixed width: a growing column would re-run the layout


def effective_node_state(node: NodeSnapshot, jobs: Iterable[JobView]) -> str:
    """The node's state word with the job store's view folded in.

    The monitor probes engines; the job store knows what runs where. A node with a stalled job
    is `stalled` and one with a running job is `building`, unless the engine itself is down.
    """
    state = str(node.state)
    if state in (NodeState.DOWN, NodeState.UNKNOWN, NodeState.STALLED):
        return state
    mine = [j for j in jobs if j.record.node == node.name and j.active]
    if any(j.record.state == JobState.STALLED for j in mine):
        return NodeState.STALLED
    if mine:
        return NodeState.BUILDING
    return state


def running_job_on(node: str, jobs: Iterable[JobView]) -> JobView | None:
    """The newest active job on `node` (stalled first: it is the one that needs attention)."""
    mine = [j for j in jobs if j.record.node == node and j.active]
    mine.sort(key=lambda j: (j.record.state != JobState.STALLED, -j.record.started_at))
    return mine[0] if mine else None


def last_job_on(node: str, jobs: Iterable[JobView]) -> JobView | None:
    """The newest job of any state on `node`: what a rebuild from that node repeats."""
    mine = sorted((j for j in jobs if j.record.node == node), key=lambda j: -j.record.started_at)
    return mine[0] if mine else None


def pushes_ended(before: Iterable[JobView], after: Iterable[JobView]) -> bool:
    """Whether a pushing job that was running has ended (the registry may hold something new)."""
    was = {j.record.id for j in before if j.active and j.record.push}
    return any(j.record.id in was and not j.active for j in after)


def keep_running(jobs: Iterable[JobView]) -> list[JobView]:
    """Jobs that go on after the console quits (they never belonged to it)."""
    return [j for j in jobs if j.active]


class PrunePreview(Struct, frozen=True):
    """What a prune of a node's build cache would remove, in lines for the question."""

    node: str
    lines: tuple[str, ...]  # the total, then the largest records (sanitised)
    records: int  # how many would go (0: nothing to prune)
