"""Typed messages: what workers report (the operator's intents are in `intents.py`).

Workers never touch widgets; they post one of these and the screen renders. Data messages can
replace an older queued one of the same kind (`can_replace`): only the latest fleet state matters.
"""

from __future__ import annotations

from textual.message import Message

from rocmtui.console.backend.views import BakeView, JobView
from rocmtui.core.snapshots import FleetSnapshot


class FleetUpdated(Message):
    """The monitor finished a probe round."""

    def __init__(self, snapshot: FleetSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        """A newer round makes an older queued one pointless."""
        return isinstance(message, FleetUpdated)


class ProbeSourceChanged(Message):
    """Rounds now come from `kind`: "monitor" (the host's, shared), "own" (a child of this
    console's), or "lost" (the host's monitor went away; `detail` says how)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__()
        self.kind = kind
        self.detail = detail


class JobsUpdated(Message):
    """The job store's list (with progress of the active jobs)."""

    def __init__(self, jobs: tuple[JobView, ...]) -> None:
        super().__init__()
        self.jobs = jobs

    def can_replace(self, message: Message) -> bool:
        """Latest list wins."""
        return isinstance(message, JobsUpdated)


class BakeLoaded(Message):
    """The bake file was read (or failed to be: `bake.error`)."""

    def __init__(self, bake: BakeView) -> None:
        super().__init__()
        self.bake = bake


class PanelFailed(Message):
    """A source behind one panel failed; the panel shows why, the others go on."""

    def __init__(self, panel: str, reason: str) -> None:
        super().__init__()
        self.panel = panel  # "nodes", "services", "jobs", "variables"
        self.reason = reason
