"""The fleet screen's first frame holds the status line and the nodes panel; the other panels
and the footer are mounted right after it, in their places, showing what came meanwhile.

(The first frame is what the attached console's start waits for: tests/
test_monitor_attach_imports.py and bench/start_instructions.py.)
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocmtui.console import stylesheets
from rocmtui.console.app import RocmTui
from rocmtui.console.messages import BakeLoaded, PanelFailed
from rocmtui.console.widgets.common import Panel
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.panels import FleetPanel
from tests.support.blackbox import until
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import recorded_app


def test_the_rest_is_mounted_after_the_first_frame_and_shows_what_came_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def run() -> None:
        app = recorded_app()
        screen = app.fleet_screen
        at_first_frame: dict[str, Any] = {}
        mount_the_rest = screen._mount_the_rest

        async def later() -> None:
            at_first_frame["panels"] = [str(p.id) for p in screen.query(Panel)]
            at_first_frame["footer"] = len(screen.query(QuietFooter))
            # a round, the jobs, the bake file and a fault, all before the panels exist
            screen.show_fleet(recorded.fleet())
            screen.show_jobs(recorded.jobs())
            screen.post_message(BakeLoaded(recorded.bake()))
            screen.post_message(PanelFailed("jobs", "the job store is locked"))
            await asyncio.sleep(0.05)  # the messages are handled, the panels still absent
            at_first_frame["handled"] = [str(p.id) for p in screen.query(Panel)]
            await mount_the_rest()

        monkeypatch.setattr(screen, "_mount_the_rest", later)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: screen.all_mounted, "every panel, after the first frame")
            await pilot.pause()
            assert at_first_frame == {
                "panels": ["nodes"], "footer": 0, "handled": ["nodes"]
            }  # fmt: skip
            order = [str(p.id) for p in screen.query(Panel)]
            assert order == ["nodes", "services", "jobs", "variables", "watch"]
            assert list(screen.children)[-1] is screen.query_one(QuietFooter)
            rows = {str(p.id): p.table.row_count for p in screen.query(FleetPanel)}
            assert rows == {
                "nodes": len(recorded.fleet().nodes),
                "services": 2,
                "jobs": len(recorded.jobs()),
                "variables": len(recorded.bake().variables),
            }
            assert screen.query_one("#jobs", FleetPanel).fault == "the job store is locked"
            assert screen.focused is screen.query_one("#nodes", FleetPanel).table
            footer = screen.query_one(QuietFooter)
            await until(pilot, lambda: len(footer.children) > 0, "the footer's keys")

    asyncio.run(run())


def test_the_first_frame_is_styled_from_the_fleet_screens_sheet_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log panes', dialogs', log view's and published screen's rules are parsed after the
    first frame, not before it (console/stylesheets.py): the screens that use them are not open
    yet, and the fleet screen shows no log until its jobs are read."""

    async def run() -> None:
        app = recorded_app()
        sheets = [*stylesheets.FIRST, *stylesheets.LATER]
        read: dict[str, list[str]] = {}
        load_later = stylesheets.load_later

        def read_now() -> list[str]:
            return [p.name for p in sheets if app.stylesheet.has_source(str(p), "")]

        def after_the_first_frame(app: RocmTui) -> None:
            read["first frame"] = read_now()
            # no fault was said: no panel has made its fault line (a widget more to style)
            read["fault lines"] = [str(w) for w in app.fleet_screen.query(".panel--fault")]
            load_later(app)

        monkeypatch.setattr(stylesheets, "load_later", after_the_first_frame)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: len(read_now()) == len(sheets), "the later sheets")
        assert read["first frame"] == ["console.tcss"]
        assert read["fault lines"] == []
        assert [p.name for p in sheets[:2]] == ["console.tcss", "logs.tcss"]  # the old order

    asyncio.run(run())
