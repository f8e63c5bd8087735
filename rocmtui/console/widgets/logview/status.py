"""The log view's status line, as text: where the screen is, what is on, what was found.

    build.log │ 1,201–1,240 of 52,113 │ FOLLOW │ wrap │ /error/ 3/17 │ filter !HIP: 4,210…

`StatusFacts` is what the line says (`gather()` collects it from the view's parts);
`status_line()` words it. The line is sanitised: the file name and the search texts come from
outside.
"""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from rocmtui.console.widgets.logview.body import LogBody
from rocmtui.console.widgets.logview.feed import LogFeed
from rocmtui.console.widgets.logview.search import Search, SearchController
from rocmtui.core.text.sanitize import sanitize_line


class SearchFacts(Struct, frozen=True):
    """A find or a filter: what was typed, lines found, and whether the search is finished."""

    text: str
    found: int
    done: bool
    invert: bool = False


class StatusFacts(Struct, frozen=True):
    """What the status line says."""

    name: str | None = None  # the file's name
    error: str | None = None  # why it cannot be read
    removed: bool = False  # its path is gone; the open file is still read
    lines: int | None = None  # lines indexed (None: not open)
    complete: bool = False  # every line indexed: numbers are the file's own
    shown: tuple[int, int] | None = None  # first and last line on screen (1-based)
    indexing: tuple[int, int] | None = None  # bytes indexed of total, while it runs
    follow: bool = True
    wrap: bool = False
    find: SearchFacts | None = None
    match_no: int | None = None  # the 1-based match n/N landed on
    filter: SearchFacts | None = None
    selecting: bool = False


def _search_facts(search: Search | None) -> SearchFacts | None:
    if search is None:
        return None
    return SearchFacts(search.text, search.lines, search.done, search.invert)


def gather(
    path: Path | None, feed: LogFeed, body: LogBody, search: SearchController, follow: bool
) -> StatusFacts:
    """The facts of a view showing `path` through `feed` in `body`, with `search`'s find and
    filter, following or not."""
    index = feed.index
    shown = None
    if index is not None and index.complete:
        rows = body.visible_rows()
        if len(rows):
            shown = (body.line_of_row(rows.start) + 1, body.line_of_row(rows.stop - 1) + 1)
    return StatusFacts(
        name=path.name if path is not None else None,
        removed=index is not None and index.removed,
        lines=index.line_count if index is not None else None,
        complete=index is not None and index.complete,
        shown=shown,
        find=_search_facts(search.find),
        match_no=search.match_no,
        filter=_search_facts(search.filter),
        selecting=body.selection.active,
        error=feed.error,
        indexing=feed.indexing,
        follow=follow,
        wrap=body.wrap,
    )


def status_line(facts: StatusFacts) -> str:
    """The status line for `facts`."""
    parts: list[str] = []
    if facts.error:
        parts.append(f"⚠ {facts.error}")
    if facts.removed:
        parts.append("⚠ removed; still followed")
    if facts.name is not None:
        parts.append(facts.name)
    if facts.lines is not None:
        if facts.complete and facts.shown is not None:
            first, last = facts.shown
            parts.append(f"{first:,}–{last:,} of {facts.lines:,}")
        else:
            parts.append(f"{facts.lines:,}+ lines")
        if facts.indexing and not facts.complete:
            done, size = facts.indexing
            parts.append(f"indexing {100 * done // max(1, size)}%")
    parts.append("FOLLOW" if facts.follow else "paused")
    if facts.wrap:
        parts.append("wrap")
    if facts.find is not None:
        find = facts.find
        where = f"{facts.match_no:,}/" if facts.match_no else ""
        more = "" if find.done else "…"
        parts.append(f"/{find.text[:30]}/ {where}{find.found:,}{more}")
    if facts.filter is not None:
        filt = facts.filter
        sign = "!" if filt.invert else ""
        more = "" if filt.done else "…"
        parts.append(f"filter {sign}{filt.text[:30]}: {filt.found:,}{more}")
    if facts.selecting:
        parts.append("select: ↑↓ then y")
    return sanitize_line(" │ ".join(parts))
