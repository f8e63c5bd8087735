"""Issue 38's "bad input and faults" on screen: a step graph with a cycle and a missing
parent, clocks that disagree, a step with no name, escapes and markup in names and errors, a
10,000-step build and steps past the bound, and the history screen's step panel with a build
whose steps cannot be had. Each drawn as far as it goes, with a line saying what is missing,
nothing raw on screen (keys in, screen text out)."""

from __future__ import annotations

import json
from typing import Any

from textual.pilot import Pilot

from rocmtui.console.intents import TimelineRequested
from rocmtui.console.screens.history import HistoryScreen
from rocmtui.console.screens.timeline import TimelineScreen
from rocmtui.core.history.stepgraph import Step, collect
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.history.steptrend import StepTrend, TrendBuild
from tests.support.blackbox import screen_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, recorded_app

JOB = "20251130-1101-pytorch-gfx1201"
T0 = recorded.NOW - 40.0
EVIL = "[1/1] RUN \x1b]52;c;aGk=\x07\x1b[31mred[/] [bold]x\x1b]0;title\x07"


async def timeline(pilot: Pilot[Any], report: StepReport) -> TimelineScreen:
    await feed(pilot.app, pilot)  # type: ignore[arg-type]
    pilot.app.screen.post_message(TimelineRequested(JOB))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, TimelineScreen)
    screen.show(report)
    await pilot.pause()
    return screen


def as_reported(digest: str, name: str, start: float, end: float, error: str) -> Step:
    """A step as BuildKit's rawjson reports it, through the collector every step comes by."""
    from datetime import UTC, datetime

    def at(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")

    vertex = {"digest": digest, "name": name, "started": at(start), "completed": at(end),
              "error": error}  # fmt: skip
    (step,) = collect([json.dumps({"vertexes": [vertex]}) + "\n"]).steps()
    return step


def raw(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\x9b")


async def test_a_cycle_a_lost_parent_skewed_clocks_and_no_name_are_drawn_and_said() -> None:
    steps = [
        Step("sha256:a", "[a 1/2] RUN loop one", T0, T0 + 2, inputs=("sha256:b",)),
        Step("sha256:b", "[a 2/2] RUN loop two", T0 + 2, T0 + 4, inputs=("sha256:a",)),
        Step("sha256:c", "[c 1/1] RUN orphan", T0 + 4, T0 + 6, inputs=("sha256:gone",)),
        Step("sha256:d", "[d 1/1] RUN skewed", T0 + 9, T0 + 5),  # ends before it starts
        Step("sha256:e", "", T0 + 1, T0 + 3),
        as_reported("sha256:f", EVIL, T0 + 1, T0 + 2, error="boom\x1b[2J"),
    ]
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await timeline(pilot, StepReport.build(steps, T0 + 10, False, dropped=3))
        text = screen_text(app)
        assert "1 input(s) of the path were never reported" in text, text
        skewed = next(line for line in text.splitlines() if "RUN skewed" in line)
        assert "skew?" in skewed, skewed
        assert "(no name reported)" in text
        assert "3 more steps not kept" in text
        assert "red[/]" in text and not raw(text)  # markup shown as text, never parsed
        # the cycle alone: the path stops where it closes, and says so
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        screen.show(StepReport.build(steps[:2], T0 + 10))
        await pilot.pause()
        assert "cycle" in screen_text(app), screen_text(app)


async def test_ten_thousand_steps_open_and_scroll() -> None:
    chain = [Step("sha256:0", "[s 1/10000] RUN 0", T0, T0 + 0.01)]
    chain += [
        Step(f"sha256:{i}", f"[s {i + 1}/10000] RUN {i}", T0 + i * 0.01, T0 + (i + 1) * 0.01,
             inputs=(f"sha256:{i - 1}",))
        for i in range(1, 10_000)
    ]  # fmt: skip
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await timeline(pilot, StepReport.build(chain, T0 + 200))
        assert "10000 steps" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert screen.waterfall.selected is not None
        assert screen.waterfall.selected.name == "[s 10000/10000] RUN 9999"
        for _ in range(40):  # a deadline of pauses: the scroll to the cursor
            if "RUN 9999" in screen_text(app):
                break
            await pilot.pause(0.05)
        assert "RUN 9999" in screen_text(app), screen_text(app)


async def test_the_step_panel_says_which_build_has_no_steps_and_shows_names_plainly() -> None:
    from rocmtui.core.costbook.report import HistoryReport
    from tests.support.history import T0 as H0
    from tests.support.history import recorded_rows

    now = H0 + 240 * 2400.0 + 3600.0
    app = recorded_app(clock=lambda: now)
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("h")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        screen.show(HistoryReport.build(recorded_rows(240), now=now))
        await pilot.press("S")
        await pilot.pause()
        steps = StepReport.build([as_reported("sha256:f", EVIL, now - 60, now - 50, "")])
        screen.show_trend(
            StepTrend.build(
                "pytorch",
                "gfx1201",
                [
                    (TrendBuild("job-new", "snoc-think", now - 60, "succeeded"), steps),
                    (
                        TrendBuild(
                            "job-old",
                            "snoc-think",
                            now - 7200,
                            "succeeded",
                            note="the node's BuildKit keeps no build history",
                        ),
                        None,
                    ),
                ],
            )
        )
        await pilot.pause()
        text = screen_text(app)
        assert "-1 snoc-think" in text and "(no steps)" in text, text
        assert "no steps: -1: the node's BuildKit keeps no build history" in text, text
        line = next(x for x in text.splitlines() if "[bold]x" in x)
        assert "10s" in line and line.rstrip(" │").endswith("-"), line
        assert not raw(text)
        await pilot.press("S")
        await pilot.pause()
        assert "no steps:" not in screen_text(app)


# Step names as BuildKit reports them when a build arg carries escapes: each must go whole
# (a terminal executes the FS, BS, VT or CR inside one and still reads the sequence), never
# leaving its printable tail ("]52;c;...", "1m") on screen.
HOSTILE = (
    "[1/6] RUN a \x1b\x1c]52;c;aGk=\x07end",
    "[2/6] RUN b \x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\ end",
    "[3/6] RUN c \x1b[" + ";".join(str(i) for i in range(99)) + "Hend",
    "[4/6] RUN d \x9b3\x0b1m\x1b\r]0;title\x07end",
    "[5/6] RUN e [bold]x[/] \x1b[3\x081mend",
    "[6/6] RUN f \x1b]0;never terminated",
)
TAILS = ("52;", "aGk=", "8;;", "evil", "title", "1m", "98H", "terminated")


async def test_hostile_step_names_leave_no_tail_in_the_timeline() -> None:
    steps = [
        as_reported(f"sha256:{i}", name, T0 + i, T0 + i + 1, error="")
        for i, name in enumerate(HOSTILE)
    ]
    app = recorded_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await timeline(pilot, StepReport.build(steps, T0 + 10, False))
        text = screen_text(app)
        for letter in "abcde":
            assert f"RUN {letter} " in text, text
        assert "RUN a end" in text and "RUN b link end" in text and "RUN c end" in text, text
        assert "RUN d end" in text and "RUN e [bold]x[/] end" in text, text
        assert "RUN f " in text, text
        for tail in TAILS:
            assert tail not in text, (tail, text)
        assert not raw(text)


async def test_why_a_build_has_no_steps_is_said_whole_in_the_panel_at_80x24() -> None:
    """Said in the status line alone, the reason was cut at the screen's edge over an empty
    panel: now the panel says it, wrapped, and the status line points there."""
    from rocmtui.console.screens.timeline import TimelineLoaded

    why = (
        "job 20251130-1101-pytorch-gfx1201 on snoc-gaming: the node's BuildKit keeps no build "
        "history (20.10's predates it): ERROR: rpc error: code = Unimplemented desc = unknown "
        "method ListenBuildHistory for service moby.buildkit.v1.Control"
    )
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot)  # type: ignore[arg-type]
        app.screen.post_message(TimelineRequested(JOB))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        screen.post_message(TimelineLoaded(None, why))
        await pilot.pause()
        text = screen_text(app)
        lines = text.splitlines()
        assert "no steps (below)" in lines[0], lines[0]
        words = " ".join(" ".join(line.strip(" │") for line in lines[1:]).split())
        assert f"No steps to show: {why}" in words, text


async def test_the_footer_offers_log_at_this_step_only_with_a_step_to_choose() -> None:
    from rocmtui.console.screens.timeline import TimelineLoaded

    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot)  # type: ignore[arg-type]
        app.screen.post_message(TimelineRequested(JOB))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        screen.post_message(TimelineLoaded(None, "the node's BuildKit keeps no build history"))
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "Log at this step" not in footer and "esc Back" in footer, footer
        step = Step("sha256:a", "[a 1/1] RUN x", T0, T0 + 2)
        screen.show(StepReport.build([step], T0 + 10))
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "⏎ Log at this step" in footer, footer
