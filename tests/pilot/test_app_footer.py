"""The footer fits its keys to the width: never a key cut at the edge, `?` always shown."""

from __future__ import annotations

import pytest

from rocmtui.console.app import RocmTui
from rocmtui.console.keys import FOOTER_FIRST
from rocmtui.console.screens.logs import LogsScreen
from rocmtui.console.textual_private import FooterKey
from rocmtui.console.widgets.footer import QuietFooter
from tests.support.snapshots.harness import feed, recorded_app


def footer_keys(app: RocmTui) -> tuple[QuietFooter, list[FooterKey], FooterKey | None]:
    footer = app.screen.query_one(QuietFooter)
    keys = list(footer.query(FooterKey))
    palette = next((k for k in keys if k.has_class("-command-palette")), None)
    return footer, [k for k in keys if k is not palette], palette


def assert_fitted(app: RocmTui) -> list[str]:
    """Every key lies wholly inside the footer, left of the palette's key; their keys."""
    footer, keys, palette = footer_keys(app)
    edge = palette.region.x if palette is not None else footer.region.right
    assert keys, "the footer shows keys"
    for key in keys:
        assert key.region.width > 0 and key.region.right <= edge, (key.key, key.region, edge)
    return [key.key for key in keys]


async def open_log_pane(app: RocmTui, pilot: object) -> None:
    app.fleet_screen.query_one("#jobs-table").focus()
    await pilot.press("down", "l")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    assert isinstance(app.screen, LogsScreen)
    await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [60, 80, 120])
async def test_narrow_footer_keeps_help_and_the_way_back(width: int) -> None:
    """At 80 columns Textual's footer ran the log screen's keys off the edge: only the log's
    own were left, `esc` and `?` were not on screen, the last key was cut mid-word."""
    app = recorded_app()
    async with app.run_test(size=(width, 24)) as pilot:
        await feed(app, pilot)
        await pilot.pause()
        assert "question_mark" in assert_fitted(app)
        await open_log_pane(app, pilot)
        shown = assert_fitted(app)
        assert "question_mark" in shown and "escape" in shown, shown
        assert "f" in shown and "slash" in shown, shown  # the log's follow and find


async def test_wide_footer_shows_every_key_and_narrows_on_resize() -> None:
    app = recorded_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await feed(app, pilot)
        await open_log_pane(app, pilot)
        wide = assert_fitted(app)
        listed = {b.key for _, b, _, _ in app.screen.active_bindings.values() if b.show}
        assert set(wide) == listed, (wide, listed)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        narrow = assert_fitted(app)
        assert len(narrow) < len(wide) and "question_mark" in narrow, narrow
        # the keys that made room are the ones ranked last (or not ranked)
        rank = {key_id: n for n, key_id in enumerate(FOOTER_FIRST)}
        by_key = {b.key: b.id for _, b, _, _ in app.screen.active_bindings.values()}
        kept = [rank.get(by_key[k] or "", len(rank)) for k in narrow]
        assert rank["app.help"] in kept and rank["logs.back"] in kept
        await pilot.resize_terminal(200, 40)
        await pilot.pause()
        await pilot.pause()
        assert set(assert_fitted(app)) == listed
