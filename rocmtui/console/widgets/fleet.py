"""The fleet screen's four panels: nodes, services, jobs and pinned variables.

Each panel renders one immutable `ConsoleData` at a given `now` and sends intents up as messages;
none of them does I/O or keeps state beyond what is on screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult

from rocmtui.console.backend.model import (
    LATENCY_FLOOR,
    NODE_RANK,
    ConsoleData,
    JobView,
    effective_node_state,
    fmt_counter,
    running_job_on,
    sparkline,
)
from rocmtui.console.intents import LogRequested
from rocmtui.console.outside_text import clean, safe
from rocmtui.console.widgets.common import Palette, Panel, state_cell, waiting_cell
from rocmtui.console.widgets.table import Fit, Row, SnapshotTable
from rocmtui.core.snapshots import NodeSnapshot, ServiceSnapshot
from rocmtui.core.states import (
    JOB_SYMBOLS,
    LOOP_SYMBOLS,
    NODE_SYMBOLS,
    SERVICE_SYMBOLS,
    JobState,
    NodeState,
)
from rocmtui.core.text.units import fmt_age, fmt_bytes, fmt_clock, fmt_latency, fmt_when

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


class NodesPanel(FleetPanel):
    """Every node: state, arch, how long its build has been silent, the job running there with
    its progress, versions, host load."""

    TITLE = "Nodes"
    disk_warn_percent = 90.0  # the screen sets it from the fleet file
    COLUMNS = (
        "State",
        "Node",
        "GFX",
        "Output",  # before Job: a long job cell must never push the silence off the screen
        "Job",
        "Engine",
        "BuildKit",
        "Builder",
        "Host",
        "Age",
    )

    def rows(self, data: ConsoleData, now: float, palette: Palette) -> list[Row]:
        """One row per node; stalled first, then down, so trouble is at the top."""
        if data.fleet is None:
            return []
        order = {n.name: i for i, n in enumerate(data.fleet.nodes)}
        nodes = sorted(
            data.fleet.nodes,
            key=lambda n: (NODE_RANK.get(effective_node_state(n, data.jobs), 9), order[n.name]),
        )
        pending = set(data.fleet.pending)
        return [
            (n.name, self.node_cells(n, data.jobs, now, palette, n.name in pending)) for n in nodes
        ]

    def node_cells(
        self,
        node: NodeSnapshot,
        jobs: Sequence[JobView],
        now: float,
        palette: Palette,
        pending: bool = False,
    ) -> list[Text]:
        """The cells of one node's row (`pending`: the round is still waiting for it)."""
        state = effective_node_state(node, jobs)
        job = running_job_on(node.name, jobs)
        builder = node.builder
        builder_cell = EMPTY
        if builder is not None:
            word = clean(builder.status, 20)
            style = palette.good if word == "running" else palette.warn
            builder_cell = Text(word, style=style)
            if builder.error:
                builder_cell.append(" " + clean(builder.error, 60), style=palette.bad)
        return [
            waiting_cell(palette)
            if pending and state != NodeState.STALLED  # a stall is never hidden
            else state_cell(state, NODE_SYMBOLS.get(state, "?"), palette),
            self.name_cell(node, palette),
            safe(node.gfx or "—", "", 10),
            self.output_cell(state, job, now, palette),
            self.job_cell(node, state, job, now, palette),
            safe(node.engine_version or "—", "", 24),
            safe(builder.buildkit_version if builder and builder.buildkit_version else "—"),
            builder_cell,
            self.host_cell(node, palette),
            self.age_cell(node.age(now), palette),
        ]

    def job_cell(
        self,
        node: NodeSnapshot,
        state: str,
        job: JobView | None,
        now: float,
        palette: Palette,
    ) -> Text:
        """What runs there, or why the node is down and since when."""
        if state in (NodeState.DOWN, NodeState.UNKNOWN):
            since = node.down_since or node.last_ok_at
            cell = Text(style=palette.bad if state == NodeState.DOWN else palette.muted)
            if since is not None:
                cell.append(f"since {fmt_clock(since)} ({fmt_age(now - since)}) ")
            if node.failed_step:  # which step of reaching it failed: dns, connect, auth ...
                cell.append(clean(node.failed_step, 12) + ": ", style="bold")
            cell.append(clean(node.reason or "no answer", 160))
            return cell
        if job is None:
            cell = Text("idle", style=palette.muted)
            if node.history_note:  # builds started elsewhere are not visible there, and why
                cell.append(" · " + clean(node.history_note, 120), style=palette.muted)
            return cell
        cell = Text()
        cell.append(clean(job.record.target, 40), style="bold")
        cell.append(" " + clean(job.record.arch or "", 10))
        counter = fmt_counter(job.progress)
        if counter:
            cell.append(" " + counter, style=palette.accent)
        if job.progress and job.progress.step:
            cell.append(" " + clean(job.progress.step, 60), style=palette.muted)
        return cell

    def name_cell(self, node: NodeSnapshot, palette: Palette) -> Text:
        """The node's name, then how it is reached (unix, ssh, tls, context/...)."""
        cell = safe(node.name, "bold", 40)
        if node.via:
            cell.append(" " + clean(node.via, 14), style=palette.muted)
        return cell

    def output_cell(self, state: str, job: JobView | None, now: float, palette: Palette) -> Text:
        """Age of the running job's last output line; loud when stalled."""
        if job is None or job.progress is None or job.progress.last_output_at is None:
            return EMPTY
        age = fmt_age(now - job.progress.last_output_at)
        if state == NodeState.STALLED or job.record.state == JobState.STALLED:
            return Text(f"silent {age}", style=palette.alarm)
        return Text(age, style=palette.muted)

    def host_cell(self, node: NodeSnapshot, palette: Palette) -> Text:
        """CPU, memory and disk of the local node."""
        host = node.host
        if host is None:
            return EMPTY
        cell = Text(no_wrap=True)
        for label, pct in (("cpu", host.cpu_percent), ("mem", host.mem_percent)):
            if pct is None:  # no CPU window long enough yet (the first round)
                cell.append(f"{label}   —  ", style=palette.muted)
                continue
            style = palette.warn if pct >= 90 else ""
            cell.append(f"{label} {pct:3.0f}% ", style=style)
        full = host.disk_percent >= self.disk_warn_percent  # the state folder's disk
        mark = " ‼" if full else ""
        free = fmt_bytes(host.disk_free)
        cell.append(
            f"disk {host.disk_percent:.0f}%{mark} ({free} free)", style=palette.bad if full else ""
        )
        return cell

    @on(SnapshotTable.RowSelected)
    def _open_running_log(self, event: SnapshotTable.RowSelected) -> None:
        """Enter on a node opens the log of the job running there."""
        event.stop()
        job = running_job_on(event.key, self.data.jobs)
        if job is not None:
            self.post_message(LogRequested(job.record.id))


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


def stall_words(job: JobView, now: float) -> str:
    """A stalled job's evidence with its silence as of `now`, from the log's age as every panel
    reads it (the evidence was worded when the job list was read)."""
    evidence = job.record.evidence or ""
    last = job.progress.last_output_at if job.progress else None
    if last is None or not evidence.startswith("silent "):
        return evidence
    rest = evidence.partition(";")[2]
    return f"silent {fmt_age(max(0.0, now - last))}" + (f";{rest}" if rest else "")


class JobsPanel(FleetPanel):
    """Recent and running jobs from the job store, whoever started them."""

    TITLE = "Jobs"
    # what matters at 80 columns first; the job id (for `rocmtui logs`) last, and like the
    # state never cut or hidden: the others give way in turns (a long failure text first, then
    # User, Started, Took and Node are hidden, Target is cut, Arch goes) until both fit
    COLUMNS = ("State", "Target", "Arch", "Node", "Progress", "Took", "Started", "User", "Job")
    FITS = (
        Fit(),
        Fit(min=10, max=40, turn=6),
        Fit(drop=True, turn=7),  # last: below ~90 columns a failure's reason needs the room
        Fit(max=30, drop=True, turn=5),  # the nodes panel says where it runs too
        Fit(min=32, max=72, turn=1),  # a long failure text gives way first
        Fit(drop=True, turn=4),
        Fit(drop=True, turn=3),
        Fit(max=20, drop=True, turn=2),
        Fit(),
    )

    def rows(self, data: ConsoleData, now: float, palette: Palette) -> list[Row]:
        """Active jobs first (stalled on top), then the rest newest first."""
        jobs = sorted(
            data.jobs,
            key=lambda j: (j.record.state != JobState.STALLED, not j.active, -j.record.started_at),
        )
        return [(j.record.id, self.job_cells(j, now, palette)) for j in jobs[:50]]

    def job_cells(self, job: JobView, now: float, palette: Palette) -> list[Text]:
        """The cells of one job's row."""
        word = str(job.record.state)
        return [
            state_cell(word, JOB_SYMBOLS.get(word, "?"), palette),
            safe(job.record.target, "bold", 40),
            safe(job.record.arch or "—", "", 10),
            safe(job.record.node, "", 30),
            self.result_cell(job, now, palette),
            Text(fmt_age(job.duration(now))),
            Text(fmt_when(job.record.started_at, now)),
            safe(job.who or "—", "", 20),
            self.id_cell(job, palette),
        ]

    @staticmethod
    def id_cell(job: JobView, palette: Palette) -> Text:
        """The job id (for `rocmtui logs`), with `elsewhere` for a build rocmtui did not
        start: this column is never hidden, so the mark shows at every width."""
        cell = safe(job.record.id, palette.muted, 40)
        if job.record.outside is not None:
            cell.append(" elsewhere", style=palette.accent)
        return cell

    def result_cell(self, job: JobView, now: float, palette: Palette) -> Text:
        """Progress while it runs; exit code, digest or failing step once it ends."""
        progress = job.progress
        if job.active and job.record.link_down_since is not None and job.record.evidence:
            # "link to snoc-think down since ...": first, where 80 columns still show it
            cell = Text(clean(job.record.evidence, 80), style=palette.alarm)
            cell.append(" " + fmt_counter(progress), style=palette.accent)
            return cell
        if job.active:
            cell = Text(fmt_counter(progress), style=palette.accent)
            style = palette.alarm if job.record.state == JobState.STALLED else palette.muted
            if (
                job.record.evidence
            ):  # "silent 16m40s; step ... still open; ...": it says the age too
                cell.append(" " + clean(stall_words(job, now), 80), style=style)
            if job.estimate:  # what such a build took, or that this one runs far past it
                late = job.estimate.startswith("!")
                cell.append(" " + clean(job.estimate, 60), style=palette.warn if late else style)
            if not job.record.evidence and progress and progress.last_output_at is not None:
                cell.append(f" out {fmt_age(now - progress.last_output_at)} ago", style=style)
            return cell
        parts: list[tuple[str, Style | str]] = []
        # a cancelled bake's exit code is the signal's doing, and "cancelled" is its state word
        if job.record.exit_code is not None and job.record.state != JobState.CANCELLED:
            parts.append((f"exit {job.record.exit_code}", ""))
        if job.record.digest:
            parts.append((clean(job.record.digest, 80)[:19], ""))
        if job.loop:  # the closed loop: does the registry hold what the push recorded?
            looks = {"in registry": palette.good, "not found": palette.bad, "moved": palette.warn}
            word = f"{LOOP_SYMBOLS.get(job.loop, '?')} {clean(job.loop, 20)}"
            parts.append((word, looks.get(job.loop, palette.muted)))
        if job.cache:
            parts.append((clean(job.cache, 60), ""))
        error_step = job.record.error_step or (progress.error_step if progress else None)
        if error_step:
            parts.append(("at " + clean(error_step, 80), palette.bad))
        elif (
            job.record.message
            and job.record.state != JobState.SUCCEEDED
            and job.record.message != job.record.state
        ):
            parts.append((clean(job.record.message, 80), ""))
        cell = Text(style=palette.muted)
        for i, (text, look) in enumerate(parts):
            cell.append((" " if i else "") + text, style=look)
        return cell

    @on(SnapshotTable.RowSelected)
    def _open_log(self, event: SnapshotTable.RowSelected) -> None:
        """Enter on a job opens its log pane."""
        event.stop()
        self.post_message(LogRequested(event.key))


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
        self.border_title = (
            f"Watching {clean(record.target, 30)} {clean(record.arch or '', 10)} "
            f"on {clean(record.node, 30)}"
        )
        if self.view is not None:
            self.view.set_path(job.record.log_path)
            return
        from rocmtui.console.widgets.logpane import make_log_view

        if self.view is not None:
            self.view.remove()
        self.view = make_log_view(job.record.log_path)
        self.mount(self.view)
