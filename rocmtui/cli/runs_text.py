"""`rocmtui runs` and `rocmtui runs show ID` as text: every outside string sanitised."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rocmtui.core.runs.chart import Chart, compare, compare_line
from rocmtui.core.runs.run import Run
from rocmtui.core.runs.scale import text_row, track_label, tracks
from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.text.units import fmt_age, fmt_utc_stamp

CHART_WIDTH = 60


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def render_list(charts: Sequence[Chart]) -> None:
    """One line per run, newest first."""
    if not charts:
        _out("no fleet runs yet (rocmtui run TARGET starts one)")
        return
    for c in charts:
        r = c.run
        state = r.state()
        _out(
            sanitize_line(
                f"{r.id}  {fmt_utc_stamp(r.started_at)}  {r.target}  {len(r.builds)} builds "
                f"on {len(r.nodes)} nodes  {fmt_age(c.wall)}  {state}  ({r.origin}: "
                f"{r.started_by})",
                300,
            )
        )


def render_chart(drawn: Chart, previous: Run | None, now: float) -> None:
    """A lane per node: its bars as letters (F H W C ? by cache condition, > running,
    x failed, ! stalled), busy and idle time; the chain; the change against `previous`."""
    r = drawn.run
    _out(sanitize_line(f"run {r.id}: {r.target} ({r.origin}: {r.started_by})", 300))
    _out(
        f"started {fmt_utc_stamp(r.started_at)}; wall {fmt_age(drawn.wall)}"
        + ("; running" if drawn.running else "")
    )
    width = max(len(ln.node) for ln in drawn.lanes) if drawn.lanes else 4
    for lane in drawn.lanes:
        name = sanitize_line(lane.node, 40).ljust(width)
        rows = tracks(lane)
        for index, track in enumerate(rows):
            bars = text_row(track, drawn.wall, CHART_WIDTH)
            if index == 0:
                tail = f"busy {fmt_age(lane.busy)} idle {fmt_age(lane.idle)}"
            else:
                name = " " * width
                tail = ""
            if len(rows) > 1:
                tail = f"{tail}  {sanitize_line(track_label(track), 80)}".strip()
            _out(f"  {name} |{bars}| {tail}")
        if lane.note:
            _out(f"  {' ' * width}  {sanitize_line(lane.note, 200)}")
    for note in drawn.notes:
        _out(f"  {sanitize_line(note, 200)}")
    chain = drawn.links  # its bars: a group's targets, each with its own length
    if chain:
        said = " -> ".join(f"{b.target} on {b.node} ({fmt_age(b.duration(now))})" for b in chain)
        _out(sanitize_line(f"  set its length: {said}", 300))
    for b in r.bars():  # a group's build: a line per target
        _out(
            sanitize_line(
                f"  {b.job_id}  {b.node}  {b.target} {b.arch}  {b.state}  {b.condition}  "
                f"{fmt_age(b.duration(now))}",
                300,
            )
        )
    if previous is not None:
        _out(
            sanitize_line(f"against {previous.id}: {compare_line(compare(previous, r, now))}", 300)
        )
