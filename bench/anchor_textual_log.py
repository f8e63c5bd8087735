"""Anchor: Textual's own `Log` widget following a file, the way an app would use it.

    python bench/anchor_textual_log.py FILE

Every 100 ms it reads what the file grew by and `write_lines` it (the batching HAZARDS.md
measured at ~55-93k lines/s). `w` flips a label between "wrap:off" and "wrap:on", so the bench
can time a key press to the screen exactly as it does for rocmtui's viewer. `q` quits.
"""

from __future__ import annotations

import os
import sys

from textual.app import App, ComposeResult
from textual.widgets import Label, Log


class LogAnchor(App[None]):
    """A Log following a file."""

    BINDINGS = [("w", "flip", "flip"), ("q", "quit", "quit")]  # noqa: RUF012

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.pos = 0
        self.rest = b""
        self.flag = False

    def compose(self) -> ComposeResult:
        yield Log(auto_scroll=True)
        yield Label("wrap:off", id="flag")

    def on_mount(self) -> None:
        self.query_one(Log).styles.height = "1fr"
        self.set_interval(0.1, self.poll)
        self.poll()

    def poll(self) -> None:
        size = os.stat(self.path).st_size
        if size <= self.pos:
            return
        with open(self.path, "rb") as fh:
            fh.seek(self.pos)
            data = self.rest + fh.read(size - self.pos)
        self.pos = size
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        lines = data[:cut].decode("utf-8", "replace").splitlines()
        if lines:
            self.query_one(Log).write_lines(lines)

    def action_flip(self) -> None:
        self.flag = not self.flag
        self.query_one("#flag", Label).update("wrap:on" if self.flag else "wrap:off")


if __name__ == "__main__":
    LogAnchor(sys.argv[1]).run()
