"""The published screen (`m`): every buildable target × arch with its verdict, the cell under the
cursor in detail, and the pinned versions beside upstream and the registry.

It coordinates: a `MatrixFeed` worker brings answers (from a child process, slowly and on
demand), the widgets render them, and the keys become intents for the App's handlers — a rebuild
opens the bake dialog ready (the same confirmation for a push), a log opens among the log
panes. It knows no other screen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import Static

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.matrix_child import Published
from rocmtui.console.backend.matrix_refresh import (
    PUSH_SETTLE,
    MatrixFeed,
    PublishedRound,
    PublishedUpdated,
)
from rocmtui.console.backend.names import store_line
from rocmtui.console.backend.views import BakeRequest
from rocmtui.console.dialogs.cell_detail import CellDetailScreen
from rocmtui.console.intents import HistoryRequested, LogRequested, RebuildRequested
from rocmtui.console.outside_text import clean, literal
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.common import Panel, StatusLine
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.matrix import MatrixGrid, cell_detail, versions_rows
from rocmtui.console.widgets.table import SnapshotTable
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.matrix.cells import Cell, Row
from rocmtui.core.matrix.rebuild import rebuild_for
from rocmtui.core.text.units import fmt_age, fmt_seconds

VERSION_COLUMNS = ("Pin", "Pinned", "Source", "Newest upstream", "Pin is", "Registry images")


class _GridPanel(Panel):
    def __init__(self) -> None:
        super().__init__("Published · target × arch", id="matrix-panel")
        self.grid = MatrixGrid(id="matrix-grid")

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.grid


class _CellPanel(Panel):
    def __init__(self) -> None:
        super().__init__("Cell", id="cell-panel")
        self.text = Static("", id="cell-detail", markup=False)

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.text


class _VersionsPanel(Panel):
    def __init__(self) -> None:
        super().__init__("Pinned versions", id="versions-panel")
        self.table = SnapshotTable(VERSION_COLUMNS, id="versions-table")

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.table


class PublishedScreen(CatalogScreen):
    """The matrix, a cell's detail and the versions."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE = "matrix"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("matrix"))

    def __init__(
        self,
        config: FleetConfig,
        env: Mapping[str, str],
        *,
        clock: Callable[[], float],
        live: bool,
        read_only: bool,
        keymap: Mapping[str, str],
    ) -> None:
        """The published state of `config`'s fleet, asked with `env` (a child process reads the
        registry); `live` False: a test shows recorded answers (`show`)."""
        super().__init__(read_only=read_only, keymap=keymap, id="matrix")
        self.config = config
        self.env = dict(env)
        self.clock = clock
        self.live = live
        self.published: Published | None = None
        self.round_started: float | None = None
        self.error: str | None = None
        self.feed: MatrixFeed | None = None
        self.grid_panel = _GridPanel()
        self.cell_panel = _CellPanel()
        self.versions_panel = _VersionsPanel()

    def compose(self) -> ComposeResult:
        """Status line, the grid, the cell, the versions, the footer."""
        yield StatusLine(id="matrix-status")
        yield self.grid_panel
        yield self.cell_panel
        yield self.versions_panel
        yield QuietFooter()

    def on_mount(self) -> None:
        """Start asking (unless a test feeds answers) and keep the ages current."""
        config = self.config
        self.grid_panel.grid.focus()
        self.render_status()
        self.show_cell()
        if self.live:
            self.feed = MatrixFeed(
                config.source,
                self.env,
                config.matrix.refresh_seconds,
                config.matrix.deadline_seconds,
                self.post_message,
            )
            self.run_worker(
                self.feed.loop,
                name="matrix",
                group="matrix",
                thread=True,
                exclusive=True,
                exit_on_error=False,
            )
        self.set_interval(1.0, self.render_status, name="matrix-ages")

    def on_unmount(self) -> None:
        """The console is going: kill a running child."""
        self.stop_feed()

    def stop_feed(self) -> None:
        """End the feed and kill a fill in flight (the console is quitting)."""
        if self.feed is not None:
            self.feed.stop()

    def refresh_soon(self) -> None:
        """A pushing job ended: ask again once its supervisor has checked the registry."""
        if self.feed is not None:
            self.feed.poke(PUSH_SETTLE)

    # ---------------------------------------------------------------- rendering

    @on(PublishedUpdated)
    def _updated(self, message: PublishedUpdated) -> None:
        self.show(message.published)

    def show(self, published: Published) -> None:
        """Render an answer (tests call this with recorded data)."""
        self.published, self.round_started, self.error = published, None, None
        matrix = published.matrix
        self.grid_panel.grid.show_matrix(matrix, self.palette)
        self.grid_panel.show_fault("; ".join(matrix.errors) if matrix.errors else None)
        if matrix.store is not None:  # the sccache store beside the cells' hit rates
            self.cell_panel.border_title = literal("Cell · " + clean(store_line(matrix.store), 120))
        if published.versions is not None:
            self.versions_panel.table.show_rows(versions_rows(published.versions, self.palette))
            self.versions_panel.show_fault(
                "upstream not configured: add [upstream] to the fleet file"
                if not published.versions.upstream_configured
                else None
            )
        self.render_status()
        self.show_cell()

    @on(PublishedRound)
    def _round(self, message: PublishedRound) -> None:
        if message.started is not None:
            self.round_started = message.started
        if message.error is not None:
            self.round_started, self.error = None, message.error
            self.grid_panel.show_fault(f"cannot ask: {message.error}")
        self.render_status()

    def render_status(self) -> None:
        """One line: where, how old, what it cost, when next, and the counts."""
        now = self.clock()
        palette = self.palette
        line = Text()
        line.append(" rocmtui ", style="bold reverse")
        line.append(" published")
        if self.read_only:  # first: at 80 columns the line's end is cut
            line.append(" · READ-ONLY", style=palette.warn)
        published = self.published
        if published is None:
            line.append(
                " · asking the registry…" if self.round_started else " · no answer yet",
                style=palette.muted,
            )
        else:
            matrix = published.matrix
            counts = matrix.counts()
            for word in (
                "published",
                "building",
                "stale",
                "moved",
                "missing",
                "failed",
                "never built",
                "unknown",
            ):
                if counts.get(word):
                    look = (
                        "good"
                        if word == "published"
                        else "muted"
                        if word == "never built"
                        else "warn"
                    )
                    line.append(f" · {counts[word]} {word}", style=getattr(palette, look))
            line.append(
                f" · answered {fmt_age(now - matrix.taken_at)} ago"
                f" in {fmt_seconds(matrix.seconds)}",
                style=palette.muted,
            )
            line.append(f" · {clean(matrix.registry, 60)}", style=palette.muted)
            if self.round_started is not None:
                line.append(" · asking again…", style=palette.busy)
            elif self.feed is not None and self.feed.next_at is not None:
                line.append(f" · next in {fmt_age(self.feed.next_at - now)}", style=palette.muted)
        self.query_one("#matrix-status", StatusLine).show(line)

    def current(self) -> tuple[Row, Cell] | None:
        """The row and cell under the cursor."""
        if self.published is None:
            return None
        grid = self.grid_panel.grid
        key, arch = grid.selected_key, grid.selected_arch
        row = next((r for r in self.published.matrix.rows if r.name == key), None)
        cell = row.cell(arch) if row is not None and arch is not None else None
        return (row, cell) if row is not None and cell is not None else None

    def show_cell(self) -> None:
        """The detail panel follows the cursor."""
        chosen = self.current()
        if chosen is None:
            self.cell_panel.text.update(
                Text("No cell yet: the registry is being asked.", style=self.palette.muted)
            )
            return
        row, cell = chosen
        now = self.clock()
        self.cell_panel.text.update(cell_detail(row.name, cell, self.palette, now=now))

    @on(MatrixGrid.CellMoved)
    def _moved(self, message: MatrixGrid.CellMoved) -> None:
        self.show_cell()

    @on(SnapshotTable.RowSelected, "#matrix-grid")
    def _chosen(self, event: SnapshotTable.RowSelected) -> None:
        event.stop()
        self.action_detail()

    # ---------------------------------------------------------------- keys

    def action_show_history(self) -> None:
        """`h`: what builds cost (regressions are marked there and on the grid)."""
        self.post_message(HistoryRequested())

    def action_back(self) -> None:
        """Back to the fleet screen."""
        self.app.pop_screen()

    def action_detail(self) -> None:
        """Enter: the cell's whole detail."""
        chosen = self.current()
        if chosen is not None:
            row, cell = chosen
            self.app.push_screen(
                CellDetailScreen(
                    cell_detail(row.name, cell, self.palette, full=True, now=self.clock())
                )
            )

    def action_refresh(self) -> None:
        """Ask the registry now."""
        if self.feed is not None:
            self.feed.poke()

    def action_rebuild(self) -> None:
        """`r`: rebuild the cell's target for its arch on the node the fleet file prefers for it
        (the bake dialog opens ready; a push asks for its own confirmation)."""
        chosen = self.current()
        rebuild = rebuild_for(self.config, *chosen) if chosen is not None else None
        if rebuild is None:
            self.notify("No cell here to rebuild.", severity="information")
            return
        self.post_message(
            RebuildRequested(
                BakeRequest(node=rebuild.node, target=rebuild.target, arch=rebuild.arch, ready=True)
            )
        )

    def action_open_log(self) -> None:
        """`l`: the log of the cell's last job."""
        chosen = self.current()
        job = chosen[1].job if chosen is not None else None
        if job is None:
            self.notify("No job has built this cell.", severity="information")
            return
        self.post_message(LogRequested(job.id))
