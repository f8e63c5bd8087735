"""What the console remembers per user between runs: the theme chosen in the palette, and the
log panes' step outline (its width in columns, shown or hidden).

A small JSON file, `$XDG_STATE_HOME/rocmtui/console.json` (never the fleet file, which may be
shared or system-wide; never the state folder, which a fleet file may share between operators).
The fleet file's `theme` is the default; the operator's own choice, once made, wins. A file
that cannot be read is ignored; one that cannot be written (a full disk, a read-only state
home) is left as it was, never half-written, and `save` returns the line the console shows
("... not remembered: ... (state disk full)"). No Textual here.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct

FILE = "console.json"
OUTLINE_MIN, OUTLINE_MAX = 16, 120  # columns the step outline may take (a log keeps the rest)


class PaneLayout(Struct, frozen=True):
    """How the log panes are laid out: the step outline's width in columns (None: the
    stylesheet's, a share of the terminal) and whether it is shown."""

    outline_width: int | None = None
    outline_shown: bool = True

    @classmethod
    def remembered(cls, data: Mapping[str, Any]) -> PaneLayout:
        """The layout `load()` remembers; a value out of range or of the wrong type is left
        out (the default), never fatal."""
        width, shown = data.get("outline_width"), data.get("outline_shown")
        in_range = isinstance(width, int) and OUTLINE_MIN <= width <= OUTLINE_MAX
        if isinstance(width, bool) or not in_range:
            width = None
        return cls(width, shown if isinstance(shown, bool) else True)

    def resized(self, by: int, current: int) -> PaneLayout:
        """`by` columns wider (narrower when negative) than `current`, within the bounds."""
        width = max(OUTLINE_MIN, min(OUTLINE_MAX, current + by))
        return PaneLayout(width, self.outline_shown)

    def as_prefs(self) -> dict[str, Any]:
        """What `save()` is to remember of it."""
        return {"outline_width": self.outline_width, "outline_shown": self.outline_shown}


def prefs_path(env: Mapping[str, str] | None = None) -> Path:
    """The per-user file (the user's own state home, whatever the fleet file says)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    base = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "rocmtui" / FILE


def load(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The remembered settings ({} when none, or unreadable)."""
    try:
        data = json.loads(prefs_path(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(env: Mapping[str, str] | None = None, **changes: Any) -> str | None:
    """Remember `changes` beside what is already remembered (atomically; blocking: call it
    from a worker). None when remembered, else one line saying what was not, and why."""
    # on first use: kept off the console's start
    from rocmtui.core.diskroom import describe

    path = prefs_path(env)
    data = {**load(env), **changes}
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        what = ", ".join(sorted(changes))
        return f"{what} not remembered for next time: {describe(path, exc)}"
    return None
