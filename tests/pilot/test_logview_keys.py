"""The log view's keys are in the one catalog (rocmtui/console/keys.py): remappable from the fleet
file's `[keys]`, listed in `?` and found by name in the palette, like every other key."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from rocmtui.console import keys
from rocmtui.console.screens.help import help_table
from rocmtui.console.screens.logs import LogsScreen
from rocmtui.console.widgets.logview import LogView
from rocmtui.core.config.fleetfile import load_config
from tests.support.snapshots.harness import feed, recorded_app

SIZE = (120, 40)


def test_every_log_view_binding_is_a_catalog_entry() -> None:
    ids = {b.id for b in LogView.BINDINGS if not isinstance(b, tuple)}
    assert len(ids) == 16 and ids == {k.id for k in keys.CATALOG if k.scope == "logview"}
    good, bad = keys.check_keymap({"logview.follow": "ctrl+f", "logprompt.regex": "ctrl+e"})
    assert good == {"logview.follow": "ctrl+f", "logprompt.regex": "ctrl+e"} and bad == []


def test_a_key_moved_onto_another_of_its_scope_is_kept_and_named() -> None:
    good, bad = keys.check_keymap({"logview.follow": "F"})
    assert good == {"logview.follow": "F"}
    assert bad == ["[keys] logview.follow: F is logview.filter's key too; move one"]


def test_the_fleet_file_remaps_log_view_keys(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        '[[nodes]]\nname = "snoc-think"\ndocker_host = "unix:///nonexistent/d.sock"\n\n'
        '[keys]\nlogview.follow = "F"\nlogview.filter = "ctrl+f"\n'
    )
    config = load_config(fleet)
    assert config.keys == {"logview.follow": "F", "logview.filter": "ctrl+f"}
    assert keys.check_keymap(config.keys) == (config.keys, [])


async def test_remapped_log_view_keys_work_in_a_pane_and_help_names_them() -> None:
    app = recorded_app(keys={"logview.follow": "F", "logview.filter": "ctrl+f"})
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        view = app.screen.query_one(LogView)
        assert view.follow
        await pilot.press("F")  # follow, as the fleet file says
        await pilot.pause()
        assert not view.follow and "paused" in view.status_text
        await pilot.press("f")  # no longer follow's key, nor anything else's
        await pilot.pause()
        assert not view.follow and not view.prompt.is_open
        await pilot.press("ctrl+f")  # filter moved here
        await pilot.pause()
        assert view.prompt.is_open and view.prompt.label_text.startswith("filter")
        await pilot.press("escape")
        await pilot.pause()
        assert not view.prompt.is_open and app.keymap_problems == []
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(help_table(app.keymap, app.read_only))
        text = console.export_text()
        assert "F  Follow" in text and "logview.follow" in text
        assert "ctrl+f  Filter" in text and "logprompt.case" in text


async def test_the_palette_finds_the_log_views_actions_by_name() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.logs_screen)]
        assert "Follow" not in titles  # no pane open: nothing to run them on
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("l")
        await pilot.pause()
        view = app.screen.query_one(LogView)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"Follow", "Wrap", "Find", "Filter", "First error", "Copy"} <= set(commands)
        assert commands["Wrap"].help == "key w"
        assert len(commands) == len(list(app.get_system_commands(app.screen)))
        await commands["Wrap"].callback()
        await pilot.pause()
        assert view.wrap and "wrap" in view.status_text
