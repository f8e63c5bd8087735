"""The console's stylesheets: the fleet screen's before the first frame, the rest after it.

Parsing the dialogs', the log view's and the published screen's sheets before the first frame
cost ~50 M instructions (about 6% of the bare Textual app's whole start) for screens nobody has
opened yet; the log panes' rules, once the second half of console.tcss, another ~6 M (the fleet
screen shows no log before its jobs are read). They are read right after the first frame
(`load_later`), and every screen that uses them names them as its own CSS_PATH too, so Textual
reads them first if such a screen is ever shown before that. Read in this order whichever way,
they make the same rules as before.
"""

from __future__ import annotations

from pathlib import Path, PurePath

from textual.app import App

STYLES = Path(__file__).resolve().parent.parent / "styles"  # rocmtui/styles -> ../styles
FIRST: list[str | PurePath] = [STYLES / "console.tcss"]
LATER: list[str | PurePath] = [
    STYLES / "logs.tcss",  # right after console.tcss, as when it was its second half
    STYLES / "dialogs.tcss",
    STYLES / "logview.tcss",
    STYLES / "published.tcss",
    # the Runs screen's: pushed with it otherwise, Textual reparses every sheet then (0.46 s
    # of the screen's open on a loaded 2-core machine, for a sheet of a dozen rules)
    STYLES / "runs.tcss",
]


def load_later(app: App[object]) -> None:
    """Read the later sheets (those not read yet) and restyle what is mounted."""
    sheet = app.stylesheet
    fresh = [path for path in LATER if not sheet.has_source(str(path), "")]
    for path in fresh:
        sheet.read(path)
    if fresh:
        sheet.update(app)
