"""Typed messages: data reported up by workers, intents sent up by widgets.

Workers never touch widgets; they post one of these and the screen renders. Data messages can
replace an older queued one of the same kind (`can_replace`): only the latest fleet state matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from rocmtui.app.model import BakePlan, BakeView, JobView
from rocmtui.core.snapshots import FleetSnapshot


@dataclass
class FleetUpdated(Message):
    """The monitor finished a probe round."""

    snapshot: FleetSnapshot

    def can_replace(self, message: Message) -> bool:
        """A newer round makes an older queued one pointless."""
        return isinstance(message, FleetUpdated)


@dataclass
class ProbeSourceChanged(Message):
    """Rounds now come from `kind`: "monitor" (the host's, shared), "own" (a child of this
    console's), or "lost" (the host's monitor went away; `detail` says how)."""

    kind: str
    detail: str


@dataclass
class JobsUpdated(Message):
    """The job store's list (with progress of the active jobs)."""

    jobs: tuple[JobView, ...]

    def can_replace(self, message: Message) -> bool:
        """Latest list wins."""
        return isinstance(message, JobsUpdated)


@dataclass
class BakeLoaded(Message):
    """The bake file was read (or failed to be: `bake.error`)."""

    bake: BakeView


@dataclass
class PanelFailed(Message):
    """A source behind one panel failed; the panel shows why, the others go on."""

    panel: str  # "nodes", "services", "jobs", "variables"
    reason: str


@dataclass
class PlanResolved(Message):
    """The core resolved the plan in the bake dialog; `request` is the dialog's choice it was
    asked for (None: a recorded plan, posted by snapshot tests)."""

    plan: BakePlan
    request: object = None


@dataclass
class JobStarted(Message):
    """The core launched a job."""

    job: JobView


@dataclass
class BakeRequested(Message):
    """Intent from the bake dialog: start this plan (already confirmed)."""

    plan: BakePlan


@dataclass
class LogRequested(Message):
    """Intent: open a log pane for this job."""

    job_id: str


@dataclass
class CancelRequested(Message):
    """Intent: cancel this job (already confirmed)."""

    job_id: str
