"""Outside text enters the screen only through here: sanitised, never markup, length-capped.

Node names, reasons, tags, variable values, versions and server replies all come from outside
the console. They are passed through the core's sanitiser (rocmtui.core.sanitize) and wrapped in
rich `Text` objects, which are never parsed as markup, so `[/]` or an OSC 52 write in a variable
value is just characters on screen.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from rich.style import Style
from rich.text import Text

MAX_CELL = 400  # a cell never needs more; a 10 MB value must not reach the layout engine
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F)}


def _fallback_sanitize(s: str) -> str:
    """Conservative stand-in for the core sanitiser: drop every control and bidi character."""
    return "".join(
        ch for ch in s if ch == "\t" or (unicodedata.category(ch)[0] != "C" and ch not in _BIDI)
    ).replace("\t", " ")


@lru_cache(maxsize=1)
def _sanitizer() -> object:
    try:
        from rocmtui.core.sanitize import sanitize_line
    except ImportError:  # the core's sanitiser has not landed in this checkout
        return _fallback_sanitize
    return sanitize_line


def clean(value: object, limit: int = MAX_CELL) -> str:
    """Plain, safe, one-line text for any outside value (None becomes an empty string)."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else str(value)
    if len(raw) > limit * 4:  # cut before sanitising: the sanitiser's cost grows with length
        raw = raw[: limit * 4]
    sanitize = _sanitizer()
    try:
        out = sanitize(raw)  # type: ignore[operator]
    except Exception:  # a sanitiser bug must not take the screen down: fall back, stay safe
        out = _fallback_sanitize(raw)
    if not isinstance(out, str):
        out = str(out)
    out = _fallback_sanitize(out.replace("\n", " ").replace("\r", " "))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def safe(value: object, style: str | Style = "", limit: int = MAX_CELL) -> Text:
    """A rich `Text` of sanitised outside text in one style (never interpreted as markup)."""
    return Text(clean(value, limit), style=style, no_wrap=True, overflow="ellipsis")
