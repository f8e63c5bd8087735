"""The log panes' step outline as the operator leaves it — wider, narrower, hidden — is how
the next console opens it: `<`/`>` resize it in every pane, `o` hides it, and both are kept
in the per-user prefs file (`$XDG_STATE_HOME/rocmtui/console.json`), never the fleet file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmtui.console import keys
from rocmtui.console.app import RocmTui
from rocmtui.console.prefs import OUTLINE_MAX, OUTLINE_MIN, PaneLayout
from rocmtui.console.screens.logs import LogsScreen
from rocmtui.console.widgets.logpane import LogPane
from tests.support.blackbox import until
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed

SIZE = (120, 40)


def console() -> RocmTui:
    """The recorded console, remembering what the operator chooses (as a live one does)."""
    config = recorded.config()
    return RocmTui(config, live=False, clock=lambda: recorded.NOW, remember=True)


async def open_pane(app: RocmTui, pilot: object) -> LogPane:
    """The first job's log pane, its outline laid out."""
    pane = await open_pane_hidden(app, pilot)
    await until(pilot, lambda: pane.outline.outer_size.width > 0, "the outline laid out")
    return pane


async def test_the_outline_resized_and_hidden_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    prefs_file = tmp_path / "state" / "rocmtui" / "console.json"
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(app, pilot)
        first = pane.outline.outer_size.width
        await pilot.press(">", ">")
        await until(pilot, lambda: pane.outline.outer_size.width == first + 8, "8 columns wider")
        await pilot.press("<")
        await until(pilot, lambda: pane.outline.outer_size.width == first + 4, "4 narrower again")
        saved = await until(
            pilot,
            lambda: prefs_file.exists() and json.loads(prefs_file.read_text()),
            "the prefs file",
        )
        assert saved["outline_width"] == first + 4 and saved["outline_shown"] is True
        await pilot.press(keys.BY_ID["logs.outline"].key)
        await until(pilot, lambda: not pane.outline.display, "the outline hidden")
        await until(
            pilot,
            lambda: json.loads(prefs_file.read_text())["outline_shown"] is False,
            "hidden, remembered",
        )

    again = console()  # the next console: the same width, still hidden until `o`
    async with again.run_test(size=SIZE) as pilot:
        pane = await open_pane_hidden(again, pilot)
        assert not pane.outline.display
        await pilot.press(keys.BY_ID["logs.outline"].key)
        await until(pilot, lambda: pane.outline.outer_size.width == first + 4, "the width it had")


async def open_pane_hidden(app: RocmTui, pilot: object) -> LogPane:
    """The first job's log pane in front (its outline may be hidden)."""
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    await feed(app, pilot)
    app.fleet_screen.query_one("#jobs-table").focus()
    await pilot.press(keys.BY_ID["fleet.log"].key)
    await until(pilot, lambda: isinstance(app.screen, LogsScreen), "the log panes")
    screen = app.screen
    assert isinstance(screen, LogsScreen)
    pane: LogPane = await until(pilot, lambda: screen.current(), "a pane in front")
    return pane


async def test_a_console_that_does_not_remember_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = RocmTui(recorded.config(), live=False, clock=lambda: recorded.NOW, remember=False)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(app, pilot)
        width = pane.outline.outer_size.width
        await pilot.press(">")
        await until(pilot, lambda: pane.outline.outer_size.width == width + 4, "4 columns wider")
        await pilot.pause()
    assert not (tmp_path / "state").exists()


def test_a_remembered_layout_out_of_range_or_of_the_wrong_type_is_the_default() -> None:
    assert PaneLayout.remembered({}) == PaneLayout()
    assert PaneLayout.remembered({"outline_width": 40, "outline_shown": False}) == PaneLayout(
        40, False
    )
    for width in (OUTLINE_MIN - 1, OUTLINE_MAX + 1, "40", True, 40.5, None):
        assert PaneLayout.remembered({"outline_width": width}).outline_width is None, width
    assert PaneLayout.remembered({"outline_shown": "no"}).outline_shown is True
    assert PaneLayout(30).resized(-100, 30).outline_width == OUTLINE_MIN
    assert PaneLayout(30).resized(1000, 30).outline_width == OUTLINE_MAX
