"""Outside text enters the screen only through here: sanitised, never markup, length-capped.

Node names, reasons, tags, variable values, versions and server replies all come from outside
the console. They are passed through the core's sanitiser (rocmtui.core.text.sanitize) and wrapped
in
rich `Text` objects, which are never parsed as markup, so `[/]` or an OSC 52 write in a variable
value is just characters on screen.
"""

from __future__ import annotations

import unicodedata

from rich.style import Style
from rich.text import Text

from rocmtui.core.text.sanitize import sanitize_line

MAX_CELL = 400  # a cell never needs more; a 10 MB value must not reach the layout engine
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F)}


def _strict_filter(s: str) -> str:
    """Drop every Unicode control, format and unassigned character and bidi control: one-line
    cells also lose the zero-width and private-use characters the core sanitiser keeps."""
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
    except Exception:  # a sanitiser bug must not take the screen down: fall back, stay safe
        out = _strict_filter(raw)
    out = _strict_filter(out.replace("\n", " ").replace("\r", " "))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def safe(value: object, style: str | Style = "", limit: int = MAX_CELL) -> Text:
    """A rich `Text` of sanitised outside text in one style (never interpreted as markup)."""
    return Text(clean(value, limit), style=style, no_wrap=True, overflow="ellipsis")
