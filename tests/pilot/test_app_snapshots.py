"""SVG snapshots of the console from recorded fleet data: fixed sizes, TZ=UTC, a fixed clock.

Regenerate after an intended change with `pytest tests/pilot/test_app_snapshots.py
--snapshot-update`
and look at the result (`rsvg-convert` turns the SVGs into PNGs).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.support.blackbox import until_text
from tests.support.snapshots.harness import feed, recorded_app
from tests.support.snapshots.plans import PLAN


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def fed(**kwargs: Any) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A `run_before` that feeds the recorded fleet."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await feed(pilot.app, pilot, **kwargs)  # type: ignore[arg-type]
        await pilot.pause()

    return run_before


async def wait_for_log(pilot: Pilot[Any], lines: int = 48, deadline: float = 10.0) -> None:
    """Until the open pane shows the recorded log's last line (the view reads it in a worker)."""
    give_up = time.monotonic() + deadline
    while time.monotonic() < give_up:
        pane = pilot.app.logs_screen.current()
        view = pane.view if pane is not None else None
        done = view is not None and getattr(view, "line_count", 0) >= lines
        if done and getattr(view, "index_complete", True):
            break
        await pilot.pause(0.05)
    # the view's next poll brings its status line to the last line: then the frame is whole
    await until_text(pilot, rf"–{lines} of {lines} │ FOLLOW")
    await pilot.pause()


def test_fleet_80x24(snap_compare: Any) -> None:
    assert snap_compare(recorded_app(), terminal_size=(80, 24), run_before=fed())


def test_fleet_200x60_watching_a_build(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await feed(pilot.app, pilot)  # type: ignore[arg-type]
        watch = pilot.app.fleet_screen.query_one("#watch")
        give_up = time.monotonic() + 10
        while time.monotonic() < give_up and getattr(watch.view, "line_count", 0) < 2:
            await pilot.pause(0.05)
        await until_text(pilot, r"vllm\.log │ 1–2 of 2 │ FOLLOW")
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=(200, 60), run_before=run_before)


def test_fleet_stalled_and_down_120x40(snap_compare: Any) -> None:
    run = fed(stalled=True, think_down=False, hostile=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await run(pilot)
        pilot.app.clear_notifications()  # toasts are asserted in the Pilot tests, not here
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=(120, 40), run_before=run_before)


def test_fleet_down_read_only_80x24(snap_compare: Any) -> None:
    app = recorded_app(read_only=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=fed(think_down=True))


def test_bake_dialog_100x30(snap_compare: Any) -> None:
    app = recorded_app(plan=PLAN)  # bake --print answers with the recorded plan

    async def run_before(pilot: Pilot[Any]) -> None:
        await feed(pilot.app, pilot)  # type: ignore[arg-type]
        await pilot.press("tab", "tab", "down", "r")
        await until_text(pilot, r"▶ +\"GFX_ARCH\": \"gfx1201\"")
        await until_text(pilot, r"finishes first: ")  # the node estimates, from their thread
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_help_80x24(snap_compare: Any) -> None:
    assert snap_compare(
        recorded_app(), terminal_size=(80, 24), press=["question_mark"], run_before=fed()
    )


def test_log_pane_120x30(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await feed(pilot.app, pilot)  # type: ignore[arg-type]
        pilot.app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("down", "l")
        await wait_for_log(pilot)

    assert snap_compare(recorded_app(), terminal_size=(120, 30), run_before=run_before)


def test_quit_with_running_builds_80x24(snap_compare: Any) -> None:
    assert snap_compare(recorded_app(), terminal_size=(80, 24), press=["q"], run_before=fed())


def test_fleet_no_color_80x24(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR: state words and symbols carry the meaning; the stall is still reversed."""
    monkeypatch.setenv("NO_COLOR", "1")
    run = fed(stalled=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await run(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(recorded_app(), terminal_size=(80, 24), run_before=run_before)
