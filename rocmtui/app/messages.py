"""Typed messages: what workers report (the operator's intents are in `intents.py`).

Workers never touch widgets; they post one of these and the screen renders. Data messages can
replace an older queued one of the same kind (`can_replace`): only the latest fleet state matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from rocmtui.app.model import BakeView, JobView
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
class JobStarted(Message):
    """The core launched a job (the launch worker reports it to the App's owner)."""

    job: JobView
