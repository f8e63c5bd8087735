"""SGR colour state for the sanitiser: parse `ESC [ ... m` parameters into a small immutable
state, and render that state again -- as a fresh SGR sequence or as a Rich `Style`.

Kept apart from `sanitize.py` so that the scanner stays short. Nothing here ever copies input
bytes to the output: a state is rebuilt from parsed integers, so what reaches a terminal is only
what this module chose to write.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Rich is loaded only by the first Rich style: probes and the CLI never ask
    from rich.color import Color
    from rich.style import Style

#: A colour: None (terminal default), 0-255 (16/256 palette) or an (r, g, b) triple.
SGRColor = int | tuple[int, int, int] | None
#: (foreground, background, attribute bits). Hashable, so renders can be cached.
SGRState = tuple[SGRColor, SGRColor, int]

BOLD = 1
DIM = 2
ITALIC = 4
UNDERLINE = 8
REVERSE = 16
STRIKE = 32

DEFAULT: SGRState = (None, None, 0)
#: The style of the "line cut" marker the sanitiser appends.
MARKER: SGRState = (None, None, DIM)

_SET = {1: BOLD, 2: DIM, 3: ITALIC, 4: UNDERLINE, 7: REVERSE, 9: STRIKE, 21: UNDERLINE}
_CLEAR = {22: BOLD | DIM, 23: ITALIC, 24: UNDERLINE, 27: REVERSE, 29: STRIKE}
# Attribute bit -> SGR code used when rendering (fixed order keeps output canonical).
_RENDER_ORDER = ((BOLD, "1"), (DIM, "2"), (ITALIC, "3"), (UNDERLINE, "4"), (REVERSE, "7"),
                 (STRIKE, "9"))  # fmt: skip


def _num(text: str) -> int:
    """A parameter as an int; empty means 0. Long digit strings are treated as junk (-1) because
    `int()` of a huge string is slow and Python caps it anyway."""
    if not text:
        return 0
    if len(text) > 3 or not text.isdigit():
        return -1
    return int(text)


def _channel(text: str) -> int:
    value = _num(text)
    return value if 0 <= value <= 255 else 0


def _extended(mode: str, args: list[str]) -> tuple[SGRColor, int] | None:
    """Decode `5;N` or `2;R;G;B` after a 38/48. Returns (colour, parameters consumed)."""
    if mode == "5" and args:
        index = _num(args[0])
        return (index if 0 <= index <= 255 else None), 2
    if mode == "2" and len(args) >= 3:
        return (_channel(args[0]), _channel(args[1]), _channel(args[2])), 4
    return None


def _colon_color(sub: list[str]) -> SGRColor:
    """ITU T.416 colon form: `38:5:N`, `38:2:R:G:B` or `38:2:CS:R:G:B` (colour-space id)."""
    if not sub:
        return None
    if sub[0] == "5" and len(sub) >= 2:
        index = _num(sub[1])
        return index if 0 <= index <= 255 else None
    if sub[0] == "2":
        rgb = sub[2:5] if len(sub) >= 5 else sub[1:4]
        if len(rgb) == 3:
            return (_channel(rgb[0]), _channel(rgb[1]), _channel(rgb[2]))
    return None


@lru_cache(maxsize=4096)
def apply_sgr(state: SGRState, params: str) -> SGRState:
    """Return the state after an SGR sequence with `params` (the text between `ESC [` and `m`).

    Unknown codes (blink, conceal, fonts ...) are ignored rather than kept: only what this module
    can render again survives.
    """
    fg, bg, flags = state
    if not params:
        return DEFAULT
    parts = params.split(";")
    i = 0
    while i < len(parts):
        part = parts[i]
        i += 1
        if ":" in part:
            sub = part.split(":")
            head = _num(sub[0])
            if head == 38:
                fg = _colon_color(sub[1:])
            elif head == 48:
                bg = _colon_color(sub[1:])
            elif head == 4:
                flags = flags & ~UNDERLINE if sub[1:2] == ["0"] else flags | UNDERLINE
            continue
        code = _num(part)
        if code == 0:
            fg, bg, flags = DEFAULT
        elif code in _SET:
            flags |= _SET[code]
        elif code in _CLEAR:
            flags &= ~_CLEAR[code]
        elif 30 <= code <= 37:
            fg = code - 30
        elif 90 <= code <= 97:
            fg = code - 82
        elif 40 <= code <= 47:
            bg = code - 40
        elif 100 <= code <= 107:
            bg = code - 92
        elif code == 39:
            fg = None
        elif code == 49:
            bg = None
        elif code in (38, 48) and i < len(parts):
            decoded = _extended(parts[i], parts[i + 1 :])
            if decoded is None:
                break  # malformed: a terminal would lose sync too; stop here
            color, used = decoded
            if code == 38:
                fg = color
            else:
                bg = color
            i += used
    return (fg, bg, flags)


def _color_codes(color: SGRColor, base: int) -> str:
    """SGR parameters for a colour; base 30 for foreground, 40 for background."""
    if isinstance(color, tuple):
        return f"{base + 8};2;{color[0]};{color[1]};{color[2]}"
    assert color is not None
    if color < 8:
        return str(base + color)
    if color < 16:
        return str(base + 60 + color - 8)
    return f"{base + 8};5;{color}"


@lru_cache(maxsize=4096)
def render_sgr(state: SGRState) -> str:
    """A fresh, canonical SGR sequence that sets exactly `state` (always starts from reset)."""
    fg, bg, flags = state
    codes = ["0"]
    codes.extend(code for bit, code in _RENDER_ORDER if flags & bit)
    if fg is not None:
        codes.append(_color_codes(fg, 30))
    if bg is not None:
        codes.append(_color_codes(bg, 40))
    return "\x1b[" + ";".join(codes) + "m"


def _rich_color(color: SGRColor) -> Color | None:
    # on first use: kept off `--help`
    from rich.color import Color

    if color is None:
        return None
    if isinstance(color, tuple):
        return Color.from_rgb(*color)
    return Color.from_ansi(color)


@lru_cache(maxsize=4096)
def rich_style(state: SGRState) -> Style:
    """The Rich style for a state (no links, no meta: nothing an input could smuggle)."""
    # on first use: kept off `--help`
    from rich.style import Style

    fg, bg, flags = state
    return Style(
        color=_rich_color(fg),
        bgcolor=_rich_color(bg),
        bold=bool(flags & BOLD) or None,
        dim=bool(flags & DIM) or None,
        italic=bool(flags & ITALIC) or None,
        underline=bool(flags & UNDERLINE) or None,
        reverse=bool(flags & REVERSE) or None,
        strike=bool(flags & STRIKE) or None,
    )
