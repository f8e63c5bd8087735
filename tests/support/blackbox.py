"""Drive the real console as an operator does: keys in; the screen's text and the job store out.

The console runs whole (its real backend, monitor process, job store and `docker buildx bake`)
under Textual's Pilot. Tests press keys with `pilot.press`, read only what the terminal shows
(`screen_text`, `until_text`) and what the job store says (`rocmtui jobs --json`), and never
reach into the console's own objects. `screen_text` renders the screen the way Textual's own
screenshot does, as plain text (through rocmtui's one module of Textual's private API).
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from rocmtui.console import textual_private


def console(*argv: str | Path) -> App[Any]:
    """The console as `rocmtui ARGV` opens it (its real backend: monitor process, job store,
    bake), not yet running: `console("--read-only", "--config", path)`."""
    from rocmtui.cli.main import build_parser
    from rocmtui.console.run import console_for

    args = build_parser(None, all_commands=False).parse_args([str(word) for word in argv])
    return console_for(args)


def recorder(*kinds: type) -> tuple[list[Any], Callable[[Any], None]]:
    """A list and a `message_hook` for `run_test` that appends each message of `kinds` to it
    once (a message bubbling up is seen at every node it passes)."""
    seen: list[Any] = []

    def hook(message: Any) -> None:
        if isinstance(message, kinds) and not any(m is message for m in seen):
            seen.append(message)

    return seen, hook


def screen_text(app: App[Any]) -> str:
    """What the terminal shows now (dialogs over the screen below them, toasts included)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, color_system=None,
        legacy_windows=False, safe_box=False,
    )  # fmt: skip
    console.print(textual_private.render_stack(app))
    return console.export_text()


async def until_text(
    pilot: Pilot[Any], pattern: str, timeout: float = 20.0, *, absent: bool = False
) -> str:
    """Let the console run until its screen matches the regex `pattern` (or, with `absent`,
    no longer does); fail with the last screen after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = screen_text(pilot.app)
        if bool(re.search(pattern, shown, re.M)) != absent:
            return shown
        await pilot.pause(0.05)
    said = "gone" if absent else "shown"
    raise AssertionError(f"{pattern!r} not {said} within {timeout:.0f} s; the screen:\n{shown}")


async def until(pilot: Pilot[Any], ready: Any, what: str, timeout: float = 20.0) -> Any:
    """Let the console run until `ready()` returns something true (outside state, such as the
    job store); that value is returned."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ready()
        if got:
            return got
        await pilot.pause(0.1)
    raise AssertionError(f"not within {timeout:.0f} s: {what}; the screen:\n"
                         f"{screen_text(pilot.app)}")  # fmt: skip


def toasts(shown: str) -> str:
    """The text of the notifications on `shown`, each one's lines joined (a toast wraps)."""
    parts = [line.rsplit("▌", 1)[1].strip() for line in shown.splitlines() if "▌" in line]
    return " ".join(" ".join(part for part in parts if part).split())


def panel(shown: str, title: str) -> list[str]:
    """The lines of the panel titled `title` as `shown` has them (its header row first, blank
    lines left out): from its top border (`─Title──`) to the next border."""
    lines = shown.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"─{title}")), None)
    if start is None:
        raise AssertionError(f"no panel {title!r} on the screen:\n{shown}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("─")), len(lines))
    return [ln.rstrip() for ln in lines[start + 1 : end] if ln.strip()]


def row(shown: str, title: str, pattern: str) -> str:
    """The one line of panel `title` that matches the regex `pattern`."""
    found = [ln for ln in panel(shown, title) if re.search(pattern, ln)]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} rows of {title} match {pattern!r}:\n{shown}")
    return found[0]


def status_line(shown: str) -> str:
    """The console's status line: the screen's first line."""
    return shown.splitlines()[0]


def cell(shown: str, title: str, pattern: str, column: str) -> str:
    """The text under the heading `column` in the one row of panel `title` matching the regex
    `pattern`: from where the heading starts to where the next heading starts (columns are
    left-aligned under their headings)."""
    header = next((ln for ln in panel(shown, title) if re.search(rf"(^|\s){column}(\s|$)", ln)),
                  None)  # fmt: skip
    if header is None:
        raise AssertionError(f"no column {column!r} in panel {title}:\n{shown}")
    start = re.search(rf"(^|\s)({column})(\s|$)", header)
    assert start is not None
    begin = start.start(2)
    after = re.search(r"\s\S", header[start.end(2) :])
    end = start.end(2) + after.start() + 1 if after else None
    return row(shown, title, pattern)[begin:end].strip()
