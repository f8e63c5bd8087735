"""A standalone log viewer: one LogView on one file (`python -m rocmtui.app.logviewer FILE`).

The benchmark suite runs it in tmux the way it runs Toolong, and it is handy on its own for a log
that no job record points at. `q` quits; every other key is the LogView's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType

from rocmtui.app import keys, performance
from rocmtui.app.widgets.logview import LogView

SETTLE_AFTER = 2.0  # s: the file's last screen is up (performance.settle_heap)
STYLES = Path(__file__).resolve().parent.parent / "styles" / "logview.tcss"


class LogViewerApp(App[None]):
    """One file, one LogView, nothing else."""

    CSS_PATH = [STYLES] if STYLES.exists() else []
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("logviewer"))
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, path: Path, follow: bool = True) -> None:
        """View `path`."""
        super().__init__()
        performance.install_strip_patch()
        self.path = path
        self.start_follow = follow

    def compose(self) -> ComposeResult:
        """The view fills the screen."""
        yield LogView(self.path, follow=self.start_follow)

    def on_mount(self) -> None:
        """Keys go to the log at once."""
        self.query_one(LogView).body.focus()
        self.set_timer(SETTLE_AFTER, performance.settle_heap, name="heap-settle")


def main(argv: list[str] | None = None) -> int:
    """`python -m rocmtui.app.logviewer FILE [--no-follow]`."""
    args = sys.argv[1:] if argv is None else argv
    files = [a for a in args if not a.startswith("--")]
    if len(files) != 1:
        print("usage: python -m rocmtui.app.logviewer FILE [--no-follow]", file=sys.stderr)
        return 2
    LogViewerApp(Path(files[0]), follow="--no-follow" not in args).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
