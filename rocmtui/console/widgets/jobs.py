"""The fleet screen's jobs panel: recent and running jobs from the job store, whoever started
them, active and stalled ones first.

It renders one immutable `ConsoleData` at a given `now` and sends intents up as messages.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import on

from rocmtui.console.backend.views import (
    ConsoleData,
    JobView,
    fmt_counter,
)
from rocmtui.console.intents import LogRequested
from rocmtui.console.outside_text import clean, safe
from rocmtui.console.widgets.common import Palette, state_cell
from rocmtui.console.widgets.panels import FleetPanel
from rocmtui.console.widgets.table import Fit, Row, SnapshotTable
from rocmtui.core.states import (
    JOB_SYMBOLS,
    LOOP_SYMBOLS,
    JobState,
    NodeState,
)
from rocmtui.core.text.units import fmt_age, fmt_when


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
        lost = {  # a build's rate and ETA there would read as live
            n.name: str(n.state)
            for n in (data.fleet.nodes if data.fleet is not None else ())
            if n.state in (NodeState.DOWN, NodeState.UNKNOWN)
        }
        return [
            (j.record.id, self.job_cells(j, now, palette, lost.get(j.record.node)))
            for j in jobs[:50]
        ]

    def job_cells(
        self, job: JobView, now: float, palette: Palette, node_lost: str | None = None
    ) -> list[Text]:
        """The cells of one job's row (`node_lost`: its node's state word when that is down
        or unknown)."""
        word = str(job.record.state)
        return [
            state_cell(word, JOB_SYMBOLS.get(word, "?"), palette),
            self.target_cell(job, palette),
            safe(job.record.arch or "—", "", 10),
            safe(job.record.node, "", 30),
            self.result_cell(job, now, palette, node_lost),
            Text(fmt_age(job.duration(now))),
            Text(fmt_when(job.record.started_at, now)),
            safe(job.who or "—", "", 20),
            self.id_cell(job, palette),
        ]

    @staticmethod
    def target_cell(job: JobView, palette: Palette) -> Text:
        """The bake target; for a build started elsewhere with none (a plain `docker build`,
        read from BuildKit's history), its record's name, muted, where "?" said nothing
        (`rocmtui jobs` names it too)."""
        outside = job.record.outside
        if outside is not None and not outside.target and outside.inspected and outside.name:
            return safe(outside.name, palette.muted, 40)
        return safe(job.record.target, "bold", 40)

    @staticmethod
    def id_cell(job: JobView, palette: Palette) -> Text:
        """The job id (for `rocmtui logs`), with `elsewhere` for a build rocmtui did not
        start: this column is never hidden, so the mark shows at every width."""
        cell = safe(job.record.id, palette.muted, 40)
        if job.record.outside is not None:
            cell.append(" elsewhere", style=palette.accent)
        return cell

    def result_cell(
        self, job: JobView, now: float, palette: Palette, node_lost: str | None = None
    ) -> Text:
        """Progress while it runs; exit code, digest or failing step once it ends. On a node
        that is down, the counter without rate or ETA, the node's state, and the last line's
        age said as such."""
        progress = job.progress
        if job.active and job.record.link_down_since is not None and job.record.evidence:
            # "link to snoc-think down since ...": first, where 80 columns still show it
            cell = Text(clean(job.record.evidence, 80), style=palette.alarm)
            cell.append(" " + fmt_counter(progress), style=palette.accent)
            return cell
        if job.active:
            cell = Text(fmt_counter(progress, running=not node_lost), style=palette.accent)
            if node_lost:
                cell.append(f" · node {node_lost}", style=palette.bad)
            style = palette.alarm if job.record.state == JobState.STALLED else palette.muted
            if (
                job.record.evidence
            ):  # "silent 16m40s; step ... still open; ...": it says the age too
                cell.append(" " + clean(stall_words(job, now), 80), style=style)
            if job.estimate:  # what such a build took, or that this one runs far past it
                late = job.estimate.startswith("!")
                cell.append(" " + clean(job.estimate, 60), style=palette.warn if late else style)
            if not job.record.evidence and progress and progress.last_output_at is not None:
                last = "last out" if node_lost else "out"
                cell.append(f" {last} {fmt_age(now - progress.last_output_at)} ago", style=style)
            return cell
        parts: list[tuple[str, Style | str]] = []
        # a cancelled bake's exit code is the signal's doing, and "cancelled" is its state word
        if job.record.exit_code is not None and job.record.state != JobState.CANCELLED:
            parts.append((f"exit {job.record.exit_code}", ""))
        error_step = job.record.error_step or (progress.error_step if progress else None)
        if job.failure is not None and (error_step or not job.record.message):
            # why, before the step (a long step name must not hide it); a record's own message
            # (a link that broke, a full state disk) is the why already, and shown below
            parts.append((job.failure.short, palette.bad))
        if job.record.digest:
            parts.append((clean(job.record.digest, 80)[:19], ""))
        if job.loop:  # the closed loop: does the registry hold what the push recorded?
            looks = {"in registry": palette.good, "not found": palette.bad, "moved": palette.warn}
            word = f"{LOOP_SYMBOLS.get(job.loop, '?')} {clean(job.loop, 20)}"
            parts.append((word, looks.get(job.loop, palette.muted)))
        if job.cache:
            parts.append((clean(job.cache, 60), ""))
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
