"""The history screen (`h`) on recorded build history: keys in, screen text out, and SVG
snapshots at 80×24 (TZ=UTC, a fixed clock), in colour and with NO_COLOR."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from textual.pilot import Pilot

from rocmtui.console.screens.help import help_table
from rocmtui.console.screens.history import HistoryScreen
from rocmtui.core.costbook.report import HistoryReport
from rocmtui.core.history.steptrend import StepTrend
from tests.support.blackbox import screen_text
from tests.support.history import T0, recorded_rows
from tests.support.snapshots.harness import feed, recorded_app

NOW = T0 + 240 * 2400.0 + 3600.0  # an hour after the last recorded build started


def report(count: int = 240, jump: bool = True) -> HistoryReport:
    return HistoryReport.build(recorded_rows(count, jump_last=jump), now=NOW)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


async def open_history(pilot: Pilot[Any], shown: HistoryReport | None = None) -> HistoryScreen:
    await feed(pilot.app, pilot)  # type: ignore[arg-type]
    await pilot.press("h")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    screen.show(shown or report())
    await pilot.pause()
    return screen


async def test_h_opens_the_groups_and_the_cursor_walks_them() -> None:
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_history(pilot)
        text = screen_text(app)
        assert "240 builds · 16 target×arch×node · ! 1 regressed" in text
        assert "aiter" in text and "≈ " in text
        first = screen.table.selected_key
        await pilot.press("down")
        await pilot.pause()
        assert screen.table.selected_key != first
        # to the regressed group: pytorch gfx1201 on snoc-think
        keys = screen.table.row_keys
        target = keys.index("pytorch\tgfx1201\tsnoc-think")
        for _ in range(target - keys.index(screen.table.selected_key or "")):
            await pilot.press("down")
        await pilot.pause()
        text = screen_text(app)
        assert "! warm took" in text and "! slower" in text
        assert "last warm: 0/31 steps cached, sccache 92% hits" in text
        assert "W warm" in text and "median" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)


async def test_the_plots_say_their_unit_in_the_title_and_their_axes_line_up() -> None:
    """plotext drew each plot's unit as a y label in its bottom-left corner, so the line under
    the two plots read "min   days ago   min"; the unit is in each title now, and both plots
    have an x label, so their axes stay on the same rows."""
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_history(pilot)
        lines = screen_text(app).splitlines()
        title = next(line for line in lines if "duration over time" in line)
        assert "duration over time (min)" in title and "spread per condition (min)" in title
        under = next(line for line in lines if "days ago" in line)
        assert under.split() == ["days", "ago", "condition"], under
        bottoms = [line for line in lines if "└" in line]
        assert len(bottoms) == 1 and bottoms[0].count("└") == 2, bottoms


async def test_help_and_the_palette_name_the_history_key() -> None:
    text = help_table({}, read_only=True).plain
    assert "History (h): what builds cost" in text
    assert re.search(r"(?m)^ +h  History +fleet\.history$", text)
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(100, 40)) as pilot:
        await feed(app, pilot)
        commands = [c.title for c in app.get_system_commands(app.screen_stack[0])]
        assert "History" in commands
        await pilot.press("h")
        await pilot.pause()
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Back", "Refresh now"} <= set(commands)


async def test_an_empty_history_says_so() -> None:
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_history(pilot, HistoryReport.build([], now=NOW))
        assert "no builds recorded yet" in screen_text(app)


def test_history_80x24(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await open_history(pilot)
        keys = screen.table.row_keys
        screen.table.move_cursor(keys.index("pytorch\tgfx1201\tsnoc-think"))
        await pilot.pause()

    app = recorded_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_history_no_color_80x24(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR: the conditions are letters in the plots and the table."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_history(pilot)

    app = recorded_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def recorded_trend() -> StepTrend:
    """The timeline build four times on snoc-think: ran cold, then cached, then its last step
    re-ran (a changed arg); one build between them whose steps BuildKit forgot."""
    from msgspec.structs import replace

    from rocmtui.core.history.stepreport import StepReport
    from rocmtui.core.history.steptrend import TrendBuild
    from tests.support.timeline import recorded_steps

    def build(hours: float, cached: set[str] | None) -> tuple[TrendBuild, StepReport | None]:
        started = NOW - hours * 3600
        column = TrendBuild(f"job-{hours}", "snoc-think", started, "succeeded")
        if cached is None:
            return replace(column, note="the node's BuildKit forgot its record"), None
        steps = [
            replace(s, cached=True, started=s.started, completed=s.started)
            if any(word in s.name for word in cached) else s
            for s in recorded_steps(started)
        ]  # fmt: skip
        return column, StepReport.build(steps)

    everything = {"RUN", "COPY", "FROM"}
    return StepTrend.build(
        "pytorch",
        "gfx1201",
        [
            build(1, {"begin one", "begin long", "begin short", "COPY", "FROM"}),
            build(2, everything),
            build(3, None),
            build(4, set()),
        ],
    )


def test_history_steps_80x24(snap_compare: Any) -> None:
    """S: the steps across the last builds in the plots' place."""

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await open_history(pilot)
        keys = screen.table.row_keys
        screen.table.move_cursor(keys.index("pytorch\tgfx1201\tsnoc-think"))
        await pilot.press("S")
        screen.show_trend(recorded_trend())
        await pilot.pause()

    app = recorded_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_enter_on_a_step_of_the_panel_opens_the_newest_build_that_has_it() -> None:
    from rocmtui.console.screens.timeline import TimelineScreen

    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_history(pilot)
        await pilot.press("S")
        screen.show_trend(recorded_trend())
        await pilot.pause()
        await pilot.press("tab")  # from the groups to the steps
        await pilot.pause()
        assert screen.steps.table.has_focus
        assert screen.steps.table.selected_key == "[long 1/1] RUN"
        await pilot.press("enter")
        await pilot.pause()
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        assert timeline.job_id == "job-1"  # the newest build (it has the step, cached)
