"""Where a chart's bars fall on a row of `width` cells: shared by `rocmtui runs show`'s text
and the console's Runs screen, so both draw a run the same way. Pure."""

from __future__ import annotations

from msgspec.structs import replace

from rocmtui.core.costbook.cost import Condition
from rocmtui.core.runs.chart import Bar, Lane

#: Job states drawn as a failed bar.
FAILED_STATES = ("failed", "lost", "cancelled")


def span(bar: Bar, wall: float, width: int) -> tuple[int, int]:
    """The cells [a, b) the bar covers; at least one cell, so a short build still shows."""
    if wall <= 0 or width <= 0:
        return 0, min(1, width)
    a = int(bar.start / wall * width)
    b = round(bar.end / wall * width)
    a = min(a, width - 1)
    return a, max(a + 1, min(b, width))


def mark(bar: Bar) -> str:
    """One character for the bar's cells: `>` running, `x` failed, `!` stalled, else its
    condition's letter (F, H, W, C, ?)."""
    state = bar.build.state
    if state == "stalled":
        return "!"
    if bar.running:
        return ">"
    if state in FAILED_STATES:
        return "x"
    return bar.build.condition.letter if bar.build.condition else Condition.UNKNOWN.letter


def row(lane: Lane, wall: float, width: int) -> list[tuple[int, int, Bar]]:
    """The lane's bars as cell spans, by start (two builds at once on one node overlap: the
    later one is drawn over the earlier; the build list under a chart names both)."""
    out: list[tuple[int, int, Bar]] = []
    for bar in sorted(lane.bars, key=lambda b: (b.start, b.end)):
        a, b = span(bar, wall, width)
        out.append((a, b, bar))
    return out


def tracks(lane: Lane) -> list[Lane]:
    """The lane as rows whose bars never overlap, each bar on the first row free at its
    start: one row for builds one after another, one per target for a bake group's targets
    built at once (so none is drawn over). Each row a Lane of the same node and figures."""
    rows: list[list[Bar]] = []
    for bar in sorted(lane.bars, key=lambda b: (b.start, b.end)):
        free = next((r for r in rows if r[-1].end <= bar.start + 1e-9), None)
        if free is None:
            rows.append([bar])
        else:
            free.append(bar)
    if len(rows) <= 1:
        return [lane]
    return [replace(lane, bars=tuple(r)) for r in rows]


def track_label(track: Lane) -> str:
    """What a row of a lane split in rows built: its bars' targets (outside text: clean it)."""
    return ", ".join(dict.fromkeys(bar.build.target for bar in track.bars))


def text_row(lane: Lane, wall: float, width: int) -> str:
    """The lane drawn with characters: `.` idle, a bar's mark where it ran."""
    cells = ["."] * width
    for a, b, bar in row(lane, wall, width):
        for i in range(a, b):
            cells[i] = mark(bar)
    return "".join(cells)


__all__ = ["FAILED_STATES", "mark", "row", "span", "text_row", "track_label", "tracks"]
