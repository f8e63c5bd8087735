"""Intents: what the operator asked for, sent up as messages to the one owner that carries them
out (`ConsoleActions`, held by the App), so that no screen imports or calls another.

A screen, a widget or a dialog posts an intent on itself; it bubbles up to the App, whose one
handler hands it to `ConsoleActions.carry_out`. Every intent is a Message naming what
is wanted, never how: the owner decides which screen shows it and which core call does it.

    b             BakeRequested         the bake dialog, fresh, on a node
    r             RebuildRequested      the bake dialog, ready with exactly what a job built
    Start         LaunchRequested       start this resolved plan (a push already confirmed)
    c             CancelRequested       ask, then cancel this running job
    y             CancelConfirmed       the operator said yes: cancel it through the core
    p             PruneRequested        show what a prune of this node's build cache removes, ask
    y             PruneConfirmed        the operator said yes: prune it through the core
    l / Enter     LogRequested          this job's log pane, brought forward
    L / m         LogsRequested / PublishedRequested   show that screen
    h             HistoryRequested      the history screen: what builds cost
    t             TimelineRequested     a build's steps on a time axis (its timeline screen)
    ⏎ (timeline)  LogRequested(at=...)  the log pane, at that step's first line
    u             RunsRequested         the Runs screen: fleet runs, drawn and compared
    r (Runs)      RunAgainRequested     the selected run's target on its nodes again, asked first
    R             NewRunRequested       the new-run dialog, then asked once more, then the run
    (job store)   JobsChanged           a new job list: open panes and the published screen follow
    (log panes)   PanesChanged          the jobs with an open pane (their progress is wanted)
    o / < / >     LayoutChanged         the log panes' outline, shown/hidden or resized: remember it
"""

from __future__ import annotations

from textual.message import Message

from rocmtui.console.backend.views import BakePlan, BakeRequest, JobView
from rocmtui.console.prefs import PaneLayout


class Intent(Message):
    """Something the operator asked for; the App's owner (`ConsoleActions`) carries it out."""


class BakeRequested(Intent):
    """`b`: the bake dialog, with what `request` names chosen (a node, at least)."""

    def __init__(self, request: BakeRequest) -> None:
        super().__init__()
        self.request = request


class RebuildRequested(Intent):
    """`r`: the bake dialog, ready to start exactly `request` (a job's or a matrix cell's)."""

    def __init__(self, request: BakeRequest) -> None:
        super().__init__()
        self.request = request


class LaunchRequested(Intent):
    """Start this plan: resolved by bake for what the dialog showed, a push already confirmed."""

    def __init__(self, plan: BakePlan) -> None:
        super().__init__()
        self.plan = plan


class CancelRequested(Intent):
    """`c`: cancel this running job, once the operator confirms."""

    def __init__(self, job: JobView) -> None:
        super().__init__()
        self.job = job


class CancelConfirmed(Intent):
    """The operator confirmed: cancel the job through the core."""

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id


class PruneRequested(Intent):
    """`p`: a node's build cache, shown, then pruned once the operator confirms."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node


class PruneConfirmed(Intent):
    """The operator confirmed: prune the node's build cache through the core."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node


class LogRequested(Intent):
    """Open (or bring forward) the log pane of this job; `at`: a step's name, whose first line
    the pane shows."""

    def __init__(self, job_id: str, at: str | None = None) -> None:
        super().__init__()
        self.job_id = job_id
        self.at = at


class LogsRequested(Intent):
    """`L`: the log panes already open."""


class PublishedRequested(Intent):
    """`m`: what the fleet has published, and the pinned versions."""


class HistoryRequested(Intent):
    """`h`: every build's duration and cache condition, per target × arch × node."""


class TimelineRequested(Intent):
    """`t`: this job's steps on a time axis, its critical path (live while it runs)."""

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id


class RunsRequested(Intent):
    """`u`: fleet runs, a lane per node and a bar per build, compared run with run."""


class RunAgainRequested(Intent):
    """`r` on the Runs screen: start the selected run's target on its nodes again (with its
    variables), once the operator said yes."""

    def __init__(self, target: str, nodes: tuple[str, ...], overrides: dict[str, str]) -> None:
        super().__init__()
        self.target = target
        self.nodes = nodes
        self.overrides = overrides


class NewRunRequested(Intent):
    """`R` (Runs or fleet screen): the new-run dialog, then (asked once more) a fleet run."""


class JobsChanged(Intent):
    """The job store's list changed (`pushes_ended`: a pushing job ended since the last one)."""

    def __init__(self, jobs: tuple[JobView, ...], pushes_ended: bool = False) -> None:
        super().__init__()
        self.jobs = jobs
        self.pushes_ended = pushes_ended


class PanesChanged(Intent):
    """The jobs that have a log pane open now: their progress is wanted, finished or not."""

    def __init__(self, job_ids: tuple[str, ...]) -> None:
        super().__init__()
        self.job_ids = job_ids


class LayoutChanged(Intent):
    """The operator laid the log panes out anew (the step outline's width, shown or not):
    every pane has it now, and the next console starts with it."""

    def __init__(self, layout: PaneLayout) -> None:
        super().__init__()
        self.layout = layout
