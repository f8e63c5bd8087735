"""Outside text enters the screen only through here: sanitised, never markup, length-capped.

Node names, targets, reasons, tags, variable values, versions and server replies all come from
outside the console. They are passed through the core's sanitiser (rocmtui.core.text.sanitize)
and reach a widget as rich `Text` objects, which no markup parser reads, so `[/]`, `[@click=...]`
or an OSC 52 write in a build's name is just characters on screen. The rule is one for the whole
console: wherever Textual parses a `str` as markup (border titles, tooltips, `Static`/`Label`
contents and `update`, select options) it is given a literal or a `Text` (`safe`, `literal`);
`notify` and a widget made with `markup=False` may take a `str`; the only API that takes nothing
but a markup `str` (the command palette's commands) gets `markup_escaped`.
tests/unit/test_markup_sinks.py walks the console's source for those places.
"""

from __future__ import annotations

import unicodedata

from rich.style import Style
from rich.text import Text
from textual.markup import escape

from rocmtui.core.text.sanitize import sanitize_line

MAX_CELL = 400  # a cell never needs more; a 10 MB value must not reach the layout engine
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F)}


def _strict_filter(s: str) -> str:
    """Drop every Unicode control, format and unassigned character and bidi control from text
    the core sanitiser already cleaned (never instead of it: escape sequences are its alone):
    one-line cells also lose the zero-width and private-use characters the sanitiser keeps."""
    return "".join(
        ch for ch in s if ch == "\t" or (unicodedata.category(ch)[0] != "C" and ch not in _BIDI)
    ).replace("\t", " ")


def clean(value: object, limit: int = MAX_CELL) -> str:
    """Plain, safe, one-line text for any outside value (None becomes an empty string)."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else str(value)
    if len(raw) > limit * 4:  # cut before sanitising: the sanitiser's cost grows with length
        raw = raw[: limit * 4]
    try:
        out = sanitize_line(raw)
    except Exception:  # a sanitiser bug must not take the screen down, nor let a second
        return "(not shown: unreadable text)"  # filter keep a sequence's printable tail
    out = _strict_filter(out.replace("\n", " ").replace("\r", " "))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def safe(value: object, style: str | Style = "", limit: int = MAX_CELL) -> Text:
    """A rich `Text` of sanitised outside text in one style (never interpreted as markup)."""
    return Text(clean(value, limit), style=style, no_wrap=True, overflow="ellipsis")


def literal(text: str, style: str | Style = "") -> Text:
    """A line made of literals and `clean` values (a title, a label) as a `Text`: shown as
    written, never parsed as markup, so a `clean` build name holding `x[/]` is characters."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def markup_escaped(value: object, limit: int = MAX_CELL) -> str:
    """A clean value escaped for the one kind of place that takes only a markup `str` (the
    command palette's commands); everywhere else outside text goes in as `Text`."""
    return escape(clean(value, limit))
