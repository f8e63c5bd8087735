"""The fleet screen's nodes panel: one row per node with its state, the build running there and
how long its output has been silent.

It renders one immutable `ConsoleData` at a given `now` and sends intents up as messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on

from rocmtui.console import keys
from rocmtui.console.backend.views import (
    NODE_RANK,
    ConsoleData,
    JobView,
    effective_node_state,
    fmt_counter,
    running_job_on,
)
from rocmtui.console.intents import LogRequested
from rocmtui.console.outside_text import clean, safe
from rocmtui.console.widgets.common import Palette, state_cell, waiting_cell
from rocmtui.console.widgets.panels import EMPTY, FleetPanel
from rocmtui.console.widgets.table import Fit, Row, SnapshotTable
from rocmtui.core.snapshots import NodeSnapshot
from rocmtui.core.states import (
    NODE_SYMBOLS,
    JobState,
    NodeState,
)
from rocmtui.core.text.units import fmt_age, fmt_bytes, fmt_clock
from rocmtui.core.vitals.nodevitals import NodeVitals

STALE_VITALS = 10.0  # seconds older than the node's probe: the vitals show their age
JOB_MIN = 24  # cells the job cell keeps before Host goes: `target arch [counter]`


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
    # Narrower than the row, columns give way in turns (see table.py): the versions, the
    # builder, the arch (the job cell names it) and the age go first, then the job cell is
    # cut down to what says what runs there, and last the Host vitals, the evidence behind a
    # verdict. State, Node, Output and Job never go: the stall
    # stays first and loud at 80 columns, and at 120 the vitals are on screen beside it.
    FITS = (
        Fit(),  # State
        Fit(),  # Node
        Fit(drop=True, turn=4),  # GFX
        Fit(),  # Output
        Fit(min=JOB_MIN, turn=6),  # Job
        Fit(max=24, drop=True, turn=1),  # Engine
        Fit(max=20, drop=True, turn=2),  # BuildKit
        Fit(max=40, drop=True, turn=3),  # Builder
        Fit(drop=True, turn=7),  # Host
        Fit(drop=True, turn=5),  # Age
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
            if node.history_note:  # builds started elsewhere are not visible there
                cell.append(" · " + short_note(node.history_note), style=palette.muted)
            return cell
        cell = Text()
        cell.append(clean(job.record.target, 40), style="bold")
        cell.append(" " + clean(job.record.arch or "", 10))
        counter = fmt_counter(job.progress)
        if counter:
            cell.append(" " + counter, style=palette.accent)
        if job.record.verdict_line:  # silent past the threshold: the verdict says why
            stalled = job.record.state == JobState.STALLED
            cell.append(
                " · " + clean(job.record.verdict_line, 100),
                style=palette.alarm if stalled else palette.warn,
            )
            if job.record.verdict == "disk":  # what fits a full data root: room on it
                cell.append(f" · {keys.BY_ID['fleet.prune'].key} prunes its build cache")
        elif job.progress and job.progress.step:
            cell.append(" " + clean(job.progress.step, 60), style=palette.muted)
        return cell

    def name_cell(self, node: NodeSnapshot, palette: Palette) -> Text:
        """The node's name, then how it is reached (unix, ssh, tls, context/...)."""
        cell = safe(node.name, "bold", 40)
        if node.via:
            cell.append(" " + clean(node.via, 14), style=palette.muted)
        return cell

    def output_cell(self, state: str, job: JobView | None, now: float, palette: Palette) -> Text:
        """Age of the running job's last output line; loud when stalled. On a node that is
        down or unknown a bare age would read as a live build's: it says "last ... ago", or
        "—" when no output was seen."""
        lost = state in (NodeState.DOWN, NodeState.UNKNOWN)
        if job is None or job.progress is None or job.progress.last_output_at is None:
            return Text("—", style=palette.muted) if lost else EMPTY
        age = fmt_age(now - job.progress.last_output_at)
        if state == NodeState.STALLED or job.record.state == JobState.STALLED:
            return Text(f"silent {age}", style=palette.alarm)
        if lost:
            return Text(f"last {age} ago", style=palette.muted)
        if job.record.quiet:  # silent past the threshold, its node busy: marked, no alarm
            return Text(f"quiet {age}", style=palette.warn)
        return Text(age, style=palette.muted)

    def host_cell(self, node: NodeSnapshot, palette: Palette) -> Text:
        """The node's vitals, compact: host and engine CPU, memory, room on the data root, io
        pressure; the psutil figures of a local node with none yet."""
        if node.vitals is not None:
            return vitals_cell(node.vitals, node.probed_at, palette, self.disk_warn_percent)
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


def short_note(note: str) -> str:
    """A node's history note as its idle cell says it: the what, without the why (the
    engine's version, the error), which `rocmtui status` prints whole. The whole sentence
    (~110 cells) made the Job column that wide and pushed Host off a 120-column screen."""
    head = clean(note, 120).split(":", 1)[0]
    return head.replace("builds started elsewhere are ", "outside builds ")


def vitals_cell(vitals: NodeVitals, now: float, palette: Palette, disk_warn: float) -> Text:
    """`cpu 1580% eng 1490% mem 71% 38G free io 12%`: what is there of it, the loud parts
    styled, and the vitals' age when they are older than the probe (a hung source)."""
    cell = Text(no_wrap=True)
    cpus = vitals.cpu_count or 1
    figures = (
        ("cpu", vitals.host_cpu_percent, 90.0 * cpus),
        ("eng", vitals.engine_cpu_percent, None),
        ("mem", vitals.mem_used_percent, 90.0),
    )
    for label, value, warn in figures:
        if value is not None:
            style = palette.warn if warn is not None and value >= warn else ""
            cell.append(f"{label} {value:.0f}% ", style=style)
    if vitals.data_root_free_bytes is not None:
        used = vitals.data_root_used_percent
        full = used is not None and used >= disk_warn
        text = f"{fmt_bytes(vitals.data_root_free_bytes)} free" + (" ‼" if full else "")
        cell.append(text + " ", style=palette.bad if full else "")
    if vitals.psi_io_some_avg10 is not None:
        io = vitals.psi_io_some_avg10
        cell.append(f"io {io:.0f}% ", style=palette.warn if io >= 20 else "")
    if not cell.plain:
        what = "engine only" if vitals.build_cache_bytes is None else "cache "
        cell.append(what, style=palette.muted)
        if vitals.build_cache_bytes is not None:
            cell.append(fmt_bytes(vitals.build_cache_bytes) + " ", style=palette.muted)
    age = now - vitals.taken_at
    if vitals.error and age > STALE_VITALS:
        cell.append(f"({fmt_age(age)} old)", style=palette.warn)
    cell.rstrip()
    return cell
