"""The published screen's widgets: the target × arch grid (a cell cursor over the snapshot table),
a cell's detail, and the versions table. They render a `Matrix` / `Versions` snapshot and post
intents; none does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.strip import Strip

from rocmtui.console.outside_text import clean
from rocmtui.console.widgets.common import Palette
from rocmtui.console.widgets.table import HEADER, Row, SnapshotTable
from rocmtui.core.matrix.cells import VERDICT_SYMBOLS, Cell, Matrix, Verdict
from rocmtui.core.registry.media import kind_word
from rocmtui.core.states import LOOP_SYMBOLS
from rocmtui.core.text.units import fmt_age, fmt_bytes, fmt_when
from rocmtui.core.versions.report import Versions

#: verdict -> the palette's severity for it
VERDICT_LOOK = {
    "published": "good",
    "building": "busy",
    "stale": "warn",
    "moved": "bad",
    "missing": "bad",
    "failed": "bad",
    "never built": "muted",
    "unknown": "warn",
}


def verdict_cell(cell: Cell, palette: Palette) -> Text:
    """`✓ published` in its colour; `—` where the row builds nothing for the arch."""
    if not cell.applies:
        return Text("—", style=palette.muted)
    word = str(cell.verdict)
    style: Style = getattr(palette, VERDICT_LOOK.get(word, "muted"))
    text = Text(f"{VERDICT_SYMBOLS.get(word, '?')} {word}", style=style, no_wrap=True)
    if cell.regressions:  # its builds got slower, or sccache stopped answering (h says more)
        text.append(" !", style=palette.bad)
    return text


class MatrixGrid(SnapshotTable):
    """Rows of targets, columns of arches, and a cursor on one cell: up/down move between rows,
    left/right between arches, enter chooses the cell."""

    class CellMoved(Message):
        """The cursor is on another cell."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(("Target",), id=id)
        self.arches: tuple[str, ...] = ()
        self.column = 1  # the cursor's column (0 is the target name)

    def set_arches(self, arches: Sequence[str]) -> None:
        """New columns (another bake file or fleet): the header and widths start again."""
        if tuple(arches) == self.arches:
            return
        self.arches = tuple(arches)
        self._labels = (Text("Target", no_wrap=True), *(Text(a, no_wrap=True) for a in arches))
        self._widths = [label.cell_len for label in self._labels]
        self._rows, self._keys = [], []
        self._strips.clear()
        self.column = min(max(1, self.column), max(1, len(self.arches)))

    def show_matrix(self, matrix: Matrix, palette: Palette) -> None:
        """Render a matrix snapshot (only changed rows repaint)."""
        self.set_arches(matrix.arches)
        rows: list[Row] = []
        for row in matrix.rows:
            cells = [Text(clean(row.name, 40), style="bold", no_wrap=True)]
            cells += [verdict_cell(row.cell(arch) or _none(arch), palette) for arch in self.arches]
            rows.append((row.name, cells))
        self.show_rows(rows)

    @property
    def selected_arch(self) -> str | None:
        """The arch of the cursor's column."""
        return self.arches[self.column - 1] if 0 < self.column <= len(self.arches) else None

    def _span(self, column: int) -> tuple[int, int]:
        start = 1  # every line starts with one space
        for width in self._widths[:column]:
            start += width + 2
        return start, start + self._widths[column]

    def render_line(self, y: int) -> Strip:
        """The snapshot table's line, with the cursor on one cell instead of the whole row."""
        scroll_x, scroll_y = self.scroll_offset
        index = HEADER if y == 0 else scroll_y + y - 1
        base = self.rich_style
        width = self.size.width
        if index >= len(self._rows):
            return Strip.blank(width, base)
        strip = self._strip(index)
        if index == self._cursor and index != HEADER and self.column < len(self._widths):
            start, end = self._span(self.column)
            cursor = self.get_component_rich_style("snapshot-table--cursor")
            marked = Strip(Segment.apply_style(list(strip.crop(start, end)), post_style=cursor))
            strip = Strip.join([strip.crop(0, start), marked, strip.crop(end, strip.cell_length)])
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def move_cursor(self, row: int) -> None:
        """Up/down: the cursor's row, and the detail follows."""
        before = self._cursor
        super().move_cursor(row)
        if self._cursor != before:
            self.post_message(self.CellMoved())

    def action_columns(self, step: int) -> None:
        """Left/right: the previous or next arch (the view scrolls to keep it in sight)."""
        column = min(max(1, self.column + step), max(1, len(self._widths) - 1))
        if column == self.column:
            return
        self.column = column
        self._refresh_row(self._cursor)
        start, end = self._span(column)
        left = round(self.scroll_offset.x)
        if start < left or end > left + self.size.width:
            self.scroll_to(
                x=max(0, end - self.size.width) if end > left + self.size.width else start - 1,
                animate=False,
            )
        self.post_message(self.CellMoved())


def _none(arch: str) -> Cell:
    return Cell(arch=arch, tag=None, verdict=Verdict.UNKNOWN)


def _bytes(n: int | None) -> str:
    return fmt_bytes(n)


def cell_detail(
    row_name: str, cell: Cell, palette: Palette, *, full: bool = False, now: float | None = None
) -> Text:
    """Everything a cell knows, one fact per line (`full`: every label and note too)."""
    now = time.time() if now is None else now
    out = Text()
    out.append(f"{clean(row_name, 40)} for {clean(cell.arch, 12)}  ", style="bold")
    out.append_text(verdict_cell(cell, palette))
    if cell.reason:
        out.append(
            "  " + clean(cell.reason, 300),
            style=palette.muted if cell.verdict == "published" else "",
        )
    if not cell.applies:
        return out
    out.append("\ntag       ", style=palette.muted)
    out.append(clean(cell.tag or "", 200))
    image = cell.image
    out.append("\nregistry  ", style=palette.muted)
    if image is None:
        out.append(clean(cell.lookup or "not asked", 40))
    else:
        out.append(
            f"{clean(image.digest, 80)[:19]}  {kind_word(image.media_type)}  {_bytes(image.size)}"
        )
        if image.created:
            out.append(f"  created {clean(image.created, 40)}")
    for label, job in (("last job  ", cell.job), ("last push ", cell.pushed)):
        if job is None or (
            label.startswith("last push") and cell.job is not None and job.id == cell.job.id
        ):
            continue
        out.append("\n" + label, style=palette.muted)
        took = (
            fmt_age(job.duration)
            if job.duration is not None
            else f"running {fmt_age(now - job.started_at)}"
        )
        when = fmt_when(job.started_at, now)
        out.append(
            f"{clean(job.id, 40)} {clean(job.state, 12)} {took}, {when} on {clean(job.node, 30)}"
        )
        if job.digest:
            out.append(f"  {clean(job.digest, 80)[:19]}")
        if job.loop:
            out.append(f"  {LOOP_SYMBOLS.get(job.loop, '?')} {clean(job.loop, 20)}")
    cache = cell.job.cache if cell.job is not None else None
    if cache:
        rate = cache.get("rate")
        out.append("\nsccache   ", style=palette.muted)
        hits, misses = cache.get("hits") or 0, cache.get("misses") or 0
        text = f"{hits}/{hits + misses} hits"
        text += f" ({rate * 100:.0f}%)" if isinstance(rate, int | float) else ""
        backend = cache.get("backend") or "unknown backend"
        text += f", {cache.get('requests')} compile requests, {backend}"
        out.append(clean(text, 200))
    for pin in cell.pins:
        out.append("\npin       ", style=palette.muted)
        out.append(
            f"{clean(pin.name, 40)} {clean(pin.image or 'unlabelled', 40)} → {clean(pin.now, 40)}",
            style=palette.warn,
        )
    targets = ", ".join(cell.targets)
    if targets:
        out.append("\nbuilt by  ", style=palette.muted)
        out.append(clean(targets, 200))
        if cell.push_target:
            out.append(f"  (r rebuilds with {clean(cell.push_target, 40)})", style=palette.muted)
    for regression in cell.regressions:
        out.append("\nslower  ! ", style=palette.bad)
        out.append(clean(regression, 200), style=palette.bad)
    for note in cell.notes:
        out.append("\nnote      ", style=palette.muted)
        out.append(clean(note, 300))
    if full and image is not None:
        for key, value in sorted(image.labels.items()):
            out.append("\nlabel     ", style=palette.muted)
            out.append(f"{clean(key, 80)} = {clean(value, 120)}")
    return out


def versions_rows(versions: object, palette: Palette) -> list[Row]:
    """The versions table's rows: pin, pinned, source, newest upstream, how it compares, and
    what the registry's images were built from."""
    assert isinstance(versions, Versions)
    looks = {"behind": palette.warn, "newest": palette.good, "ahead": palette.busy}
    rows: list[Row] = []
    for row in versions.rows:
        answer = row.upstream
        if answer.state == "not configured":
            upstream = Text("not configured", style=palette.muted)
        else:
            upstream = Text(clean(answer.newest or "—", 30))
            if answer.newest_pre:
                upstream.append(f" (pre {clean(answer.newest_pre, 30)})", style=palette.muted)
            if answer.state != "ok":
                old = f", {fmt_age(answer.age)} old" if answer.age is not None else ""
                what = "unreachable" if answer.state == "offline" else "error"
                upstream.append(f" [{what}{old}]", style=palette.warn)
        registry = ", ".join(
            f"{v} ×{n}" for v, n in sorted(row.registry.items(), key=lambda x: -x[1])
        )
        mixed = len(row.registry) > 1 or (row.registry and row.pinned not in row.registry)
        rows.append(
            (
                row.variable,
                [
                    Text(clean(row.variable, 40), style="bold"),
                    Text(
                        clean(row.pinned or "?", 30),
                        style=palette.accent if row.source != "default" else "",
                    ),
                    Text(clean(row.source, 12), style=palette.muted),
                    upstream,
                    Text(row.compared_shown, style=looks.get(row.compared, palette.muted)),
                    Text(
                        clean(registry or "—", 80), style=palette.warn if mixed else palette.muted
                    ),
                ],
            )
        )
    return rows
