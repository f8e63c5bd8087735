"""The console remembers the theme chosen in the palette (per user, not in the fleet file);
the fleet file's `theme` is the default; a theme Textual does not know is said, not fatal."""

from __future__ import annotations

import json

from msgspec.structs import replace

from rocmtui.console import prefs
from rocmtui.console.app import RocmTui
from tests.support.blackbox import toasts, until_text
from tests.support.snapshots import recorded


def app_with(theme: str | None = None, remember: bool = True) -> RocmTui:
    config = replace(recorded.config(), theme=theme)
    return RocmTui(config, live=False, remember=remember, clock=lambda: recorded.NOW)


async def test_the_fleet_file_sets_the_default_theme() -> None:
    app = app_with("nord")
    async with app.run_test(size=(100, 30)):
        assert app.theme == "nord"
        assert app.theme_problem is None


async def test_a_theme_chosen_in_the_palette_is_remembered_and_wins() -> None:
    app = app_with("nord")
    async with app.run_test(size=(100, 30)) as pilot:
        app.theme = "dracula"  # what the palette's "Change theme" does
        await pilot.pause()
        await app.workers.wait_for_complete()
    saved = json.loads(prefs.prefs_path().read_text())
    assert saved == {"theme": "dracula"}
    again = app_with("nord")  # the next console: the operator's choice over the default
    async with again.run_test(size=(100, 30)):
        assert again.theme == "dracula"


async def test_an_unknown_theme_is_said_and_the_console_opens() -> None:
    app = app_with("no-such-theme")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause()
        assert app.theme == "textual-dark"
        assert app.theme_problem is not None
        assert app.theme_problem.startswith("theme 'no-such-theme' (fleet file) is not one of:")
        assert "no-such-theme" in toasts(await until_text(pilot, r"no-such-theme"))


async def test_an_unreadable_prefs_file_is_ignored() -> None:
    path = prefs.prefs_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    app = app_with("nord")
    async with app.run_test(size=(100, 30)):
        assert app.theme == "nord"


async def test_the_state_words_take_the_colours_of_the_theme_in_use() -> None:
    """The fleet file's theme from the first frame on, and a theme chosen later at once: the
    palette is read from the theme's variables once Textual has made them (not before)."""
    from rocmtui.console.widgets.common import Palette

    def error_colour(app: RocmTui) -> str:
        return app.get_css_variables()["text-error"][:7].lower()

    app = app_with("nord")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.fleet_screen
        assert isinstance(screen.palette, Palette)
        assert str(screen.palette.bad.color) == str(Palette.from_app(app).bad.color)
        nord = error_colour(app)
        assert screen.palette.bad.color is not None
        assert screen.palette.bad.color.triplet is not None
        assert screen.palette.bad.color.triplet.hex == nord
        app.theme = "dracula"
        await pilot.pause()
        await pilot.pause()
        dracula = error_colour(app)
        assert dracula != nord
        assert screen.palette.bad.color.triplet.hex == dracula
