"""Intents: what the operator asked for, sent up as messages to the App, so that no screen
imports or calls another.

A screen, a widget or a dialog posts an intent on itself; it bubbles up to the App, which has
one handler per kind (`@on(RebuildRequested)` ...). Every intent is a plain dataclass message
naming what is wanted, never how: the App's handler decides which screen shows it, and the
flow it starts (`rocmtui.console.actions`) calls each next step itself, never through the App
again (the bake dialog's plan goes straight to the launch, the started job straight to its
log pane).

    b             BakeRequested         the bake dialog, fresh, on a node
    r             RebuildRequested      the bake dialog, ready with exactly what a job built
    c             CancelRequested       ask, then cancel this running job through the core
    p             PruneRequested        show what a prune of this node's build cache removes, ask,
                                        then prune it through the core
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

from dataclasses import dataclass, field

from textual.message import Message

from rocmtui.console.backend.views import BakeRequest, JobView
from rocmtui.console.prefs import PaneLayout


class Intent(Message):
    """Something the operator asked for; the App's handler of its kind carries it out."""


@dataclass
class BakeRequested(Intent):
    """`b`: the bake dialog, with what `request` names chosen (a node, at least)."""

    request: BakeRequest


@dataclass
class RebuildRequested(Intent):
    """`r`: the bake dialog, ready to start exactly `request` (a job's or a matrix cell's)."""

    request: BakeRequest


@dataclass
class CancelRequested(Intent):
    """`c`: cancel this running job, once the operator confirms."""

    job: JobView


@dataclass
class PruneRequested(Intent):
    """`p`: a node's build cache, shown, then pruned once the operator confirms."""

    node: str


@dataclass
class LogRequested(Intent):
    """Open (or bring forward) the log pane of this job; `at`: a step's name, whose first line
    the pane shows."""

    job_id: str
    at: str | None = None


@dataclass
class LogsRequested(Intent):
    """`L`: the log panes already open."""


@dataclass
class PublishedRequested(Intent):
    """`m`: what the fleet has published, and the pinned versions."""


@dataclass
class HistoryRequested(Intent):
    """`h`: every build's duration and cache condition, per target × arch × node."""


@dataclass
class TimelineRequested(Intent):
    """`t`: this job's steps on a time axis, its critical path (live while it runs)."""

    job_id: str


@dataclass
class RunsRequested(Intent):
    """`u`: fleet runs, a lane per node and a bar per build, compared run with run."""


@dataclass
class RunAgainRequested(Intent):
    """`r` on the Runs screen: start the selected run's target on its nodes again (with its
    variables), once the operator said yes."""

    target: str
    nodes: tuple[str, ...]
    overrides: dict[str, str] = field(default_factory=dict)


@dataclass
class NewRunRequested(Intent):
    """`R` (Runs or fleet screen): the new-run dialog, then (asked once more) a fleet run."""


@dataclass
class JobsChanged(Intent):
    """The job store's list changed (`pushes_ended`: a pushing job ended since the last one)."""

    jobs: tuple[JobView, ...]
    pushes_ended: bool = False


@dataclass
class PanesChanged(Intent):
    """The jobs that have a log pane open now: their progress is wanted, finished or not."""

    job_ids: tuple[str, ...]


@dataclass
class LayoutChanged(Intent):
    """The operator laid the log panes out anew (the step outline's width, shown or not):
    every pane has it now, and the next console starts with it."""

    layout: PaneLayout
