"""The fleet screen's panels: the base every table panel shares (`FleetPanel`), services,
pinned variables and the watched build's log; the nodes and jobs panels have modules of their
own (`nodes.py`, `jobs.py`).

Each panel renders one immutable `ConsoleData` at a given `now` and sends intents up as messages;
none of them does I/O or keeps state beyond what is on screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult

from rocmtui.console.backend.views import (
    LATENCY_FLOOR,
    ConsoleData,
    JobView,
    sparkline,
)
from rocmtui.console.outside_text import clean, literal, safe
from rocmtui.console.widgets.common import Palette, Panel, state_cell, waiting_cell
from rocmtui.console.widgets.table import Fit, Row, SnapshotTable
from rocmtui.core.snapshots import ServiceSnapshot
from rocmtui.core.states import (
    SERVICE_SYMBOLS,
    JobState,
)
from rocmtui.core.text.units import fmt_age, fmt_latency

if TYPE_CHECKING:  # made when a build is first watched (widgets/logpane.py)
    from rocmtui.console.widgets.logview import LogView

EMPTY = Text("")


class FleetPanel(Panel):
    """A panel holding one keyed table; subclasses turn `ConsoleData` into rows."""

    COLUMNS: Sequence[str] = ()
    FITS: Sequence[Fit] = ()  # how the columns fit the width (none: the table scrolls)
    TITLE = ""

    def __init__(self, *, id: str) -> None:
        super().__init__(self.TITLE, id=id)
        self.table = SnapshotTable(self.COLUMNS, id=f"{id}-table", fits=self.FITS)
        self.late_after = 6.0  # seconds; the screen sets it from the refresh interval
        self.data = ConsoleData()  # what is on show

    def compose(self) -> ComposeResult:
        """Fault line, then the table."""
        yield from super().compose()
        yield self.table

    def rows(self, data: ConsoleData, now: float, palette: Palette) -> list[Row]:
        """The rows for this data (subclasses)."""
        raise NotImplementedError

    def show(self, data: ConsoleData, now: float, palette: Palette) -> None:
        """Render; a failure to render is this panel's fault, shown here, never raised."""
        self.data = data
        try:
            self.table.show_rows(self.rows(data, now, palette))
        except Exception as exc:  # outside data we did not foresee: say so, keep the console
            self.show_fault(f"cannot show this panel: {type(exc).__name__}: {exc}")

    @property
    def selected_key(self) -> str | None:
        """The key (node name, job id ...) of the row under the cursor."""
        return self.table.selected_key

    def age_cell(self, age: float, palette: Palette) -> Text:
        """The age of a status; late data says so instead of freezing."""
        if age > self.late_after:
            return Text(f"late {fmt_age(age)}", style=palette.warn, no_wrap=True)
        return Text(fmt_age(age), style=palette.muted, no_wrap=True)


class ServicesPanel(FleetPanel):
    """Zot and WebDAV: state, latency and its history, repository count."""

    TITLE = "Services"
    COLUMNS = ("State", "Service", "Latency", "History", "Repos", "Age", "Answer")

    def rows(self, data: ConsoleData, now: float, palette: Palette) -> list[Row]:
        """Registry first, then WebDAV."""
        if data.fleet is None:
            return []
        out: list[Row] = []
        for label, svc in (("zot", data.fleet.registry), ("webdav", data.fleet.webdav)):
            out.append((svc.kind, self.service_cells(label, svc, data, now, palette)))
        return out

    def service_cells(
        self, label: str, svc: ServiceSnapshot, data: ConsoleData, now: float, palette: Palette
    ) -> list[Text]:
        """The cells of one service's row."""
        word = str(svc.state)
        pending = data.fleet is not None and svc.kind in data.fleet.pending
        name = Text(label, style="bold")
        name.append(" " + clean(svc.url, 60), style=palette.muted)
        if svc.reason:
            style = palette.muted if pending else palette.for_state(word)
            answer = safe(svc.reason, style, 160)
        else:
            parts = [f"HTTP {svc.http_status}" if svc.http_status else ""]
            parts.append(clean(svc.identity or "", 40))
            parts += [f"{clean(k, 12)} {clean(v, 12)}" for k, v in svc.extras]
            answer = Text(" · ".join(p for p in parts if p), style=palette.muted)
        history = data.latency.get(svc.kind, ())
        return [
            waiting_cell(palette)
            if pending
            else state_cell(word, SERVICE_SYMBOLS.get(word, "?"), palette),
            name,
            Text(fmt_latency(svc.latency)),
            Text(sparkline(history, floor=LATENCY_FLOOR), style=palette.busy),
            Text("—" if svc.repositories is None else str(svc.repositories)),
            self.age_cell(svc.age(now), palette),
            answer,
        ]


class VariablesPanel(FleetPanel):
    """Pinned bake variables: effective value and source; overrides marked, secrets redacted."""

    TITLE = "Variables"
    COLUMNS = ("Variable", "Source", "Value", "Default")

    def rows(self, data: ConsoleData, now: float, palette: Palette) -> list[Row]:
        """One row per variable, in the bake file's order."""
        if data.bake is None:
            return []
        if data.bake.error:
            self.show_fault(data.bake.error)
        rows: list[Row] = []
        for var in data.bake.variables:
            overridden = var.overridden
            if var.secret:
                value = Text("•••••• (redacted)", style=palette.muted)
                default = Text("••••••" if overridden and var.default else "", style=palette.muted)
            else:
                value = safe(var.value, palette.accent if overridden else "", 80)
                default = safe(var.default, palette.muted, 60) if overridden else EMPTY
            source = Text(
                f"● {clean(var.source, 16)}" if overridden else clean(var.source, 16),
                style=palette.accent if overridden else palette.muted,
            )
            rows.append((var.name, [safe(var.name, "bold", 40), source, value, default]))
        return rows


class WatchPanel(Panel):
    """On a big terminal: the log of the build that matters most (stalled first, else the
    newest running one), followed live under the tables. Hidden by the stylesheet elsewhere."""

    def __init__(self, *, id: str) -> None:
        super().__init__("Watching", id=id)
        self.job_id: str | None = None
        self.view: LogView | None = None

    def watch_job(self, jobs: Sequence[JobView], room: bool) -> None:
        """Follow the job that matters most now; nothing when nothing runs or there is no room
        (a hidden log view would still poll its file)."""
        active = sorted(
            (j for j in jobs if j.active),
            key=lambda j: (j.record.state != JobState.STALLED, -j.record.started_at),
        )
        job = active[0] if active and room else None
        self.set_class(job is not None, "-active")
        if job is None:
            if self.view is not None:
                self.view.remove()
                self.view, self.job_id = None, None
            return
        if job.record.id == self.job_id:
            return
        self.job_id = job.record.id
        record = job.record
        self.border_title = literal(
            f"Watching {clean(record.target, 30)} {clean(record.arch or '', 10)} "
            f"on {clean(record.node, 30)}"
        )
        if self.view is not None:
            self.view.set_path(job.record.log_path)
            return
        # on first use: kept off the console's start
        from rocmtui.console.widgets.logpane import make_log_view

        self.view = make_log_view(job.record.log_path)
        self.mount(self.view)
