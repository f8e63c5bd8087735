"""Intents: what the operator asked for, sent up as messages to the one owner that carries them
out (`ConsoleActions`, held by the App), so that no screen imports or calls another.

A screen, a widget or a dialog posts an intent on itself; it bubbles up to the App, whose one
handler hands it to `ConsoleActions.carry_out`. Every intent is a frozen dataclass naming what
is wanted, never how: the owner decides which screen shows it and which core call does it.

    b             BakeRequested         the bake dialog, fresh, on a node
    r             RebuildRequested      the bake dialog, ready with exactly what a job built
    Start         LaunchRequested       start this resolved plan (a push already confirmed)
    c             CancelRequested       ask, then cancel this running job
    y             CancelConfirmed       the operator said yes: cancel it through the core
    l / Enter     LogRequested          this job's log pane, brought forward
    L / m         LogsRequested / PublishedRequested   show that screen
    (job store)   JobsChanged           a new job list: open panes and the published screen follow
    (log panes)   PanesChanged          the jobs with an open pane (their progress is wanted)
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from rocmtui.app.model import BakePlan, BakeRequest, JobView


class Intent(Message):
    """Something the operator asked for; the App's owner (`ConsoleActions`) carries it out."""


@dataclass
class BakeRequested(Intent):
    """`b`: the bake dialog, with what `request` names chosen (a node, at least)."""

    request: BakeRequest


@dataclass
class RebuildRequested(Intent):
    """`r`: the bake dialog, ready to start exactly `request` (a job's or a matrix cell's)."""

    request: BakeRequest


@dataclass
class LaunchRequested(Intent):
    """Start this plan: resolved by bake for what the dialog showed, a push already confirmed."""

    plan: BakePlan


@dataclass
class CancelRequested(Intent):
    """`c`: cancel this running job, once the operator confirms."""

    job: JobView


@dataclass
class CancelConfirmed(Intent):
    """The operator confirmed: cancel the job through the core."""

    job_id: str


@dataclass
class LogRequested(Intent):
    """Open (or bring forward) the log pane of this job."""

    job_id: str


@dataclass
class LogsRequested(Intent):
    """`L`: the log panes already open."""


@dataclass
class PublishedRequested(Intent):
    """`m`: what the fleet has published, and the pinned versions."""


@dataclass
class JobsChanged(Intent):
    """The job store's list changed (`pushes_ended`: a pushing job ended since the last one)."""

    jobs: tuple[JobView, ...]
    pushes_ended: bool = False


@dataclass
class PanesChanged(Intent):
    """The jobs that have a log pane open now: their progress is wanted, finished or not."""

    job_ids: tuple[str, ...]
