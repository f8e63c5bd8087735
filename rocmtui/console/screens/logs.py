"""The log panes: one tab per job, several open at once, kept while the console runs.

The screen is installed once and pushed over the fleet screen; escape pops it and the panes go on
following in the background, so coming back shows each log where it is now. It is given jobs
(`open_job`, `update_jobs`) and sends what the operator asks up as intents (cancel, rebuild,
which panes are open): it knows no other screen, and runs on its own over a recorded job list.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import ClassVar

from msgspec.structs import replace
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.css.query import NoMatches
from textual.widgets import Static, TabbedContent, TabPane

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.views import BakeRequest, JobView
from rocmtui.console.intents import (
    CancelRequested,
    LayoutChanged,
    PanesChanged,
    RebuildRequested,
    TimelineRequested,
)
from rocmtui.console.outside_text import clean
from rocmtui.console.prefs import PaneLayout
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.logpane import LogPane
from rocmtui.core.states import JOB_SYMBOLS
from rocmtui.core.text.units import fmt_clock


def pane_id(job_id: str) -> str:
    """A widget id for a job id (ids allow letters, digits, '-' and '_')."""
    return "job-" + re.sub(r"[^A-Za-z0-9_-]", "_", job_id)


def _build(job: JobView) -> tuple[str, str | None, str]:
    return job.record.target, job.record.arch, job.record.node


def tab_title(job: JobView, twins: bool) -> str:
    """The job's state symbol, target, arch and node (the same target and arch built on two
    nodes are two panes); `twins` (another pane shows the same build) adds its start time."""
    record = job.record
    where = f"{clean(record.arch or '', 10)} {clean(record.node, 16)}".strip()
    when = f" {fmt_clock(record.started_at)}" if twins else ""
    return f"{JOB_SYMBOLS.get(str(record.state), '?')} {clean(record.target, 24)} {where}{when}"


class LogsScreen(CatalogScreen):
    """Tabs of log panes."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE = "logs"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("logs"))

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        read_only: bool,
        keymap: Mapping[str, str],
        layout: PaneLayout | None = None,
    ) -> None:
        """`clock` is the console's (a fixed one in tests): the panes' ages are worded by it;
        `layout` the panes' outline as the operator last left it."""
        super().__init__(read_only=read_only, keymap=keymap, id="logs")
        self.clock = clock
        self.pane_layout = layout or PaneLayout()
        self.panes: dict[str, LogPane] = {}
        self._pending: list[TabPane] = []  # panes opened before the screen was first shown
        self._pending_active: str | None = None
        self._show_at: tuple[str, str] | None = None  # (job, step name) a pane is to show
        self._show_tries = 0

    def compose(self) -> ComposeResult:
        """Tabs (empty until a log is opened) and the footer."""
        yield Static(Text("No log open: select a job and press l.", style="dim"), id="logs-empty")
        yield TabbedContent(id="log-tabs")
        yield QuietFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode hides dangerous keys here too; pane keys wait for a pane."""
        if not super().check_action(action, parameters):
            return False
        if (
            action
            in (
                "close_pane",
                "next_pane",
                "prev_pane",
                "toggle_outline",
                "resize_outline",
                "cancel_job",
                "rebuild",
            )
            and not self.panes
        ):
            return None
        return True

    def open_job(self, job: JobView, at: str | None = None) -> None:
        """Show the job's pane, adding it when it is not open yet; `at`: a step's name whose
        first line it shows."""
        tabs = self.query_one(TabbedContent) if self.is_mounted else None
        pid = pane_id(job.record.id)
        if at is not None:
            self._show_at, self._show_tries = (job.record.id, at), 0
        if job.record.id not in self.panes:
            pane = LogPane(job, clock=self.clock, id=f"{pid}-pane")
            pane.apply_layout(self.pane_layout)
            self.panes[job.record.id] = pane
            same = [p for p in self.panes.values() if _build(p.job) == _build(job)]
            tab = TabPane(Content(tab_title(job, twins=len(same) > 1)), pane, id=pid)
            if tabs is not None:
                self.call_later(self._add_and_show, tabs, tab)
            else:
                self._pending.append(tab)
                self._pending_active = pid
        elif tabs is not None:
            tabs.active = pid
        else:
            self._pending_active = pid
        self._show_empty()
        self._retitle()
        self._watch()
        self.call_after_refresh(self._go_to_step)

    def _go_to_step(self) -> None:
        """The step asked for (`open_job(at=...)`), once its pane is there."""
        if self._show_at is None:
            return
        job_id, name = self._show_at
        pane = self.panes.get(job_id)
        if pane is None or not pane.is_mounted:
            self._show_tries += 1
            if self._show_tries < 50:  # its tab is still being added (5 s at most)
                self.set_timer(0.1, self._go_to_step)
            return
        self._show_at = None
        pane.show_step(name)

    async def _add_and_show(self, tabs: TabbedContent, tab: TabPane) -> None:
        """Add a pane's tab, then bring it forward (a tab still being added cannot be)."""
        await tabs.add_pane(tab)
        if tab.id is not None:
            tabs.active = tab.id
        self._retitle()

    async def on_mount(self) -> None:
        """Add panes opened before the screen was first shown (each in place before one is
        made active: a tab still being added is not there to activate)."""
        tabs = self.query_one(TabbedContent)
        pending, self._pending = list(self._pending), []
        for tab in pending:
            await tabs.add_pane(tab)
        if self._pending_active:
            tabs.active = self._pending_active
        self._show_empty()
        self._retitle()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The pane brought forward takes the keys."""
        pane = self.current()
        if pane is not None and pane.is_mounted:
            pane.focus_log()

    def _show_empty(self) -> None:
        for hint in self.query("#logs-empty"):  # nothing to do before the first compose
            hint.display = not self.panes

    def update_jobs(self, jobs: tuple[JobView, ...]) -> None:
        """Fresh state and progress for the open panes."""
        now = self.clock()
        by_id = {j.record.id: j for j in jobs}
        for job_id, pane in self.panes.items():
            job = by_id.get(job_id)
            if job is None:
                continue
            if pane.is_mounted:
                pane.update_job(job, now)
            else:  # it draws this when it mounts: the round asked for it may come first, and a
                pane.job = job  # finished build's later rounds are all the same (not re-sent)
        self._retitle()

    def _retitle(self) -> None:
        """Tab titles from each pane's job now: its state, and the start time where two panes
        would otherwise read the same."""
        if not self.is_mounted:
            return
        # mounted is not composed: a jobs round can land before the tabs exist (the next round
        # retitles them)
        tabs = next(iter(self.query(TabbedContent)), None)
        if tabs is None:
            return
        builds = Counter(_build(p.job) for p in self.panes.values())
        for job_id, pane in self.panes.items():
            title = tab_title(pane.job, builds[_build(pane.job)] > 1)
            with contextlib.suppress(NoMatches, ValueError):  # a tab still being added
                tab = tabs.get_tab(pane_id(job_id))
                if tab.label.plain != title:
                    tab.label = Content(title)

    def current(self) -> LogPane | None:
        """The pane on show."""
        if not self.panes:
            return None
        active = self.query_one(TabbedContent).active
        return next((p for j, p in self.panes.items() if pane_id(j) == active), None)

    def action_back(self) -> None:
        """Back to the fleet screen; panes keep following."""
        self.app.pop_screen()

    def action_next_pane(self) -> None:
        """Next tab."""
        self._cycle(1)

    def action_prev_pane(self) -> None:
        """Previous tab."""
        self._cycle(-1)

    def _cycle(self, step: int) -> None:
        ids = [pane_id(j) for j in self.panes]
        if not ids:
            return
        tabs = self.query_one(TabbedContent)
        index = ids.index(tabs.active) if tabs.active in ids else 0
        tabs.active = ids[(index + step) % len(ids)]

    async def action_close_pane(self) -> None:
        """Close the pane on show (the build goes on)."""
        pane = self.current()
        if pane is None:
            return
        del self.panes[pane.job.record.id]
        await self.query_one(TabbedContent).remove_pane(pane_id(pane.job.record.id))
        self._show_empty()
        self._retitle()
        self._watch()

    def _watch(self) -> None:
        """The job store is to report progress for every open pane's job, finished ones too
        (their step outline); a newly opened pane gets it from a round started now."""
        self.post_message(PanesChanged(tuple(self.panes)))

    def action_toggle_outline(self) -> None:
        """Show or hide the step outline, in every pane (and in the next console)."""
        pane = self.current()
        if pane is not None:
            self._lay_out(replace(self.pane_layout, outline_shown=not pane.outline.display))

    def action_resize_outline(self, by: int) -> None:
        """The step outline `by` columns wider (narrower when negative), in every pane."""
        pane = self.current()
        if pane is not None:
            shown = replace(self.pane_layout, outline_shown=True)
            # from the width asked for last, not the one laid out: a key held down repeats
            # faster than the panes are laid out again, and every press counts
            current = self.pane_layout.outline_width or pane.outline.outer_size.width
            self._lay_out(shown.resized(by, current))

    def _lay_out(self, layout: PaneLayout) -> None:
        self.pane_layout = layout
        for pane in self.panes.values():
            pane.apply_layout(layout)
        self.post_message(LayoutChanged(layout))

    def action_cancel_job(self) -> None:
        """Cancel this pane's job, after a confirmation; an ended one says so (the key did
        nothing there, silently, as the fleet screen's does not)."""
        pane = self.current()
        if pane is None:
            return
        job = pane.job
        if not job.active:
            said = f"{clean(job.record.target, 40)} is not running ({job.record.state})."
            self.notify(said, severity="information", markup=False)
            return
        self.post_message(CancelRequested(job))

    def action_show_timeline(self) -> None:
        """`t`: this pane's job's steps on a time axis."""
        pane = self.current()
        if pane is not None:
            self.post_message(TimelineRequested(pane.job.record.id))

    def action_rebuild(self) -> None:
        """Rebuild exactly what this pane's job built."""
        pane = self.current()
        if pane is not None:
            self.post_message(RebuildRequested(BakeRequest.rebuild(pane.job)))
