"""The timeline screen (`t`, issue 38) on recorded steps: keys in, screen text out, an SVG
snapshot at 80×24 (TZ=UTC, a fixed clock). The steps' source (BuildKit's history) is tested
for real in tests/fleet/test_timeline_real.py."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.pilot import Pilot

from rocmtui.console.intents import TimelineRequested
from rocmtui.console.screens.logs import LogsScreen
from rocmtui.console.screens.timeline import TimelineScreen
from rocmtui.console.widgets.logview import LogView
from rocmtui.core.history.stepgraph import Step
from rocmtui.core.history.stepreport import StepReport
from tests.support.blackbox import screen_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, recorded_app
from tests.support.timeline import cached_after, recorded_steps

JOB = "20251130-1101-pytorch-gfx1201"  # the recorded running pytorch build
T0 = recorded.NOW - 40.0


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def report(running: bool = False, now: float = recorded.NOW) -> StepReport:
    return StepReport.build(recorded_steps(T0, open_last=running), now, running)


async def open_timeline(pilot: Pilot[Any], shown: StepReport | None = None) -> TimelineScreen:
    await feed(pilot.app, pilot)  # type: ignore[arg-type]
    pilot.app.screen.post_message(TimelineRequested(JOB))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, TimelineScreen)
    screen.show(shown or report())
    await pilot.pause()
    return screen


async def test_the_waterfall_marks_the_critical_path_and_enter_opens_the_log_there() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_timeline(pilot)
        text = screen_text(app)
        assert "11 steps, 1 cached" in text and "critical path: 7 steps, 30.7s" in text
        lines = [x for x in text.splitlines() if "critical path:" not in x]
        long_line = next(x for x in lines if "begin long" in x)
        short_line = next(x for x in lines if "begin short" in x)
        assert "*" in long_line.split("[long")[0] and "*" not in short_line.split("[short")[0]
        assert "█" in long_line and "cached" in next(x for x in lines if "FROM" in x)
        # parallel steps side by side: their bars start in the same column
        assert long_line.index("█") == short_line.index("█")
        assert "[bold]x[/]" in text  # markup in a name is text, never parsed
        await pilot.press("end")
        await pilot.press("up")
        await pilot.pause()
        assert screen.waterfall.selected is not None
        assert "begin two" in screen.waterfall.selected.name
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)
        # the log pane at that step
        app.screen.post_message(TimelineRequested(JOB))
        await pilot.pause()
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen)
        # the steps the recorded log names (tests/support/snapshots/logs/pytorch.log)
        named = [
            Step("sha256:1", "[internal] load build definition from Dockerfile", T0, T0 + 0.1),
            Step("sha256:4", "[demo-base 1/3] FROM rocm-base:local", T0 + 0.1, T0 + 0.2),
            Step("sha256:7", "[demo-pytorch 1/1] RUN fake-compile pytorch 2.15.0", T0 + 0.2,
                 None, ("sha256:4",)),
        ]  # fmt: skip
        timeline.show(StepReport.build(named, T0 + 30, running=True))
        await pilot.press("end")
        await pilot.pause()
        assert timeline.waterfall.selected is not None
        await pilot.press("enter")
        logs = app.screen
        assert isinstance(logs, LogsScreen)
        view = logs.query_one(LogView)

        async def landed() -> int | None:
            for _ in range(100):  # a deadline of pauses, not a sleep: the index and the jump
                await pilot.pause(0.05)
                if view.body.look.current_line is not None:
                    break
            return view.body.look.current_line

        assert await landed() == 7  # 0-based: line 8, `#7 [demo-pytorch 1/1] RUN ...`


async def test_a_running_build_grows() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_timeline(pilot, report(running=True, now=T0 + 25))
        first = screen.report
        assert first is not None and first.running
        screen.show(report(running=True, now=T0 + 29))
        await pilot.pause()
        later = screen.report
        assert later is not None and later.span > first.span
        assert "running" in screen_text(app) and "…" in screen_text(app)


def test_timeline_80x24(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await open_timeline(pilot)

    assert snap_compare(recorded_app(), terminal_size=(80, 24), run_before=run_before)


async def test_d_sets_the_build_beside_its_baseline() -> None:
    from rocmtui.core.history.buildfacts import BuildFacts
    from rocmtui.core.history.stepdiff import diff_builds

    then = StepReport.build(cached_after(recorded_steps(T0), "nothing"))
    now = StepReport.build(cached_after(recorded_steps(T0), "[final 3/3] RUN", "chocolate"))
    found = diff_builds(
        now, then, BuildFacts(args={"FLAVOUR": "chocolate"}), BuildFacts(args={"FLAVOUR": "x"}),
        JOB, "20251129-0900-pytorch-gfx1201",
    )  # fmt: skip
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_timeline(pilot)
        await pilot.press("D")
        await pilot.pause()
        text = screen_text(app)
        assert "comparing with the last build" in text
        screen.show_diff(found)
        await pilot.pause()
        text = screen_text(app)
        assert "first miss: [final 3/3] RUN" in text and "FLAVOUR: x → chocolate" in text
        assert any(x.strip().startswith("!") and "begin two" in x for x in text.splitlines())
        await pilot.press("D")
        await pilot.pause()
        assert "first miss" not in screen_text(app) and screen.waterfall.display


async def test_t_on_a_job_row_and_in_its_log_pane_opens_its_timeline() -> None:
    """Keys in: `t` on the jobs panel's row (the second job: pytorch on snoc-think), then in
    that job's log pane; each opens the timeline of that job."""
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "t")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.job_id == JOB
        assert "timeline · " + JOB in screen_text(app)
        assert "demo-pytorch gfx1201 on snoc-think" in screen.title_text
        await pilot.press("escape", "l")
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, TimelineScreen) and app.screen.job_id == JOB
