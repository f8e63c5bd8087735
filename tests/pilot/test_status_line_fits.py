"""The status lines at 80 columns, from recorded fleet data (keys in, screen text out): what
must be read is at the front, and a line cut at the edge says so with "…"."""

from __future__ import annotations

import time

import pytest

from tests.support.blackbox import screen_text, until_text
from tests.support.snapshots.harness import feed, recorded_app


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


async def test_read_only_is_on_the_fleet_screens_status_line_at_80_columns() -> None:
    """READ-ONLY came last and fell off an 80-column line with a node down; it comes first."""
    app = recorded_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot, think_down=True)
        await until_text(pilot, r"✗ down +snoc-think")
        first = screen_text(app).splitlines()[0].rstrip()
        assert first.startswith(" rocmtui  READ-ONLY · rocmtui.toml"), first
        assert first.endswith("…"), first  # the rest is cut, and says so


async def test_read_only_is_on_the_published_screens_status_line_at_80_columns() -> None:
    app = recorded_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot)
        await pilot.press("m")
        shown = await until_text(pilot, r"published")
        first = shown.splitlines()[0]
        assert first.startswith(" rocmtui  published · READ-ONLY"), first
