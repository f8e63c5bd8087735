"""The Runs screen (`u`) on recorded runs: keys in, screen text out, and an SVG snapshot at
80×24 (TZ=UTC, a fixed clock)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from msgspec.structs import replace
from textual.pilot import Pilot

from rocmtui.console.screens.help import help_table
from rocmtui.console.screens.runs import RunsScreen
from rocmtui.core.costbook.cost import Condition
from rocmtui.core.runs.run import Run, RunBuild, TargetSpan
from tests.support.blackbox import screen_text, toasts, until, until_text
from tests.support.runs import DAY, T0, recorded_run, recorded_runs
from tests.support.snapshots.harness import feed, recorded_app

NOW = T0 + 2 * DAY + 6 * 3600.0  # six hours after the newest of three runs started


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


async def open_runs(pilot: Pilot[Any], shown: list[Run] | None = None) -> RunsScreen:
    await feed(pilot.app, pilot)  # type: ignore[arg-type]
    await pilot.press("u")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    screen.show(recorded_runs() if shown is None else shown)
    await pilot.pause()
    return screen


async def test_u_opens_the_newest_run_and_the_selector_walks_earlier_ones() -> None:
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_runs(pilot)
        text = screen_text(app)
        assert " runs · 3 runs" in text
        newest, middle = recorded_run(2), recorded_run(1)
        assert screen.table.selected_key == newest.id
        for node in ("snoc-strix", "snoc-think", "snoc-gaming"):
            assert f"{node.ljust(11)} ▏" in text  # one lane each, names aligned
        assert "set its length: " in text
        assert f"against {middle.id.removeprefix('run-')}: no build got slower" in text
        await pilot.press("down")
        await pilot.pause()
        assert screen.table.selected_key == middle.id
        text = screen_text(app)
        # run 1: pytorch on snoc-think 40 minutes slower than run 0
        assert "slower: pytorch gfx1201 on snoc-think: 1h45m -> 2h25m (+40m00s, slower)" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunsScreen)


async def test_k_marks_a_baseline_to_compare_any_run_with() -> None:
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_runs(pilot)
        await pilot.press("down")  # run 1 (pytorch on snoc-think slow)
        await pilot.press("k")
        await pilot.pause()
        assert screen.baseline == recorded_run(1).id
        assert "◆ baseline" in screen_text(app)
        await pilot.press("up")  # run 2 against run 1: pytorch on snoc-think got faster
        await pilot.pause()
        text = screen_text(app)
        assert f"against {recorded_run(1).id.removeprefix('run-')}: " in text
        assert "pytorch gfx1201 on snoc-think: 2h25m -> 1h45m (-40m00s)" in text


async def test_a_run_in_flight_grows_and_a_lane_that_did_not_start_says_why() -> None:
    clock = [T0 + 2 * DAY + 600.0]
    app = recorded_app(clock=lambda: clock[0])
    async with app.run_test(size=(120, 40)) as pilot:
        live = replace(
            recorded_run(2, running_at=clock[0]),
            nodes=("snoc-strix", "snoc-think", "snoc-gaming", "snoc-old"),
            notes={"snoc-old": "down (connect: refused)"},
        )
        screen = await open_runs(pilot, [live])
        assert screen.chart.chart is not None and screen.chart.chart.running
        wall = screen.chart.chart.wall
        text = screen_text(app)
        assert "did not start: down (connect: refused); no longer in the fleet file" in text
        assert " runs · 1 run · 1 running" in text
        clock[0] += 300
        screen.show_selected()  # what the one-second tick does
        await pilot.pause()
        assert screen.chart.chart.wall == wall + 300


async def test_a_group_built_on_one_node_shows_a_row_per_target() -> None:
    at = T0 + 2 * DAY
    spans = (
        TargetSpan("demo-base", at + 2, at + 300),
        TargetSpan("demo-pytorch", at + 2, at + 1800),
        TargetSpan("demo-vllm", at + 3, at + 3000),
    )
    build = RunBuild("j1", "snoc-think", "all", "gfx1201", at, at + 3010, "succeeded",
                     Condition.COLD, targets=spans)  # fmt: skip
    run = Run("run-20261203-0000-ab12", "all", at, "rocmtui", "me", ("snoc-think",),
              builds=(build,))  # fmt: skip
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_runs(pilot, [run])
        assert screen.chart.chart is not None
        bars = screen.chart.chart.lanes[0].bars
        assert [(b.build.target, b.start, b.end) for b in bars] == [
            ("demo-base", 0.0, 298.0),
            ("demo-pytorch", 0.0, 1798.0),
            ("demo-vllm", 1.0, 2998.0),
        ]
        lines = [ln for ln in screen_text(app).splitlines() if "▏" in ln and "▕" in ln]
        rows = {t: ln for ln in lines for t in ("demo-base", "demo-pytorch", "demo-vllm")
                if ln.rstrip().endswith(t)}  # fmt: skip
        assert set(rows) == {"demo-base", "demo-pytorch", "demo-vllm"}
        assert rows["demo-base"].lstrip().startswith("snoc-think")
        drawn = {t: ln.split("▏", 1)[1].split("▕", 1)[0] for t, ln in rows.items()}
        lengths = {t: len(d.strip()) for t, d in drawn.items()}
        assert lengths["demo-base"] < lengths["demo-pytorch"] < lengths["demo-vllm"]


async def test_no_run_yet_says_how_to_start_one() -> None:
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_runs(pilot, [])
        assert "no fleet run yet: `rocmtui run TARGET` starts one" in screen_text(app)


def test_help_names_the_runs_keys() -> None:
    text = help_table({}, read_only=True).plain
    assert "Runs (u): fleet runs" in text and "Compare with this" in text


def test_runs_80x24(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await open_runs(pilot)
        await pilot.press("down")
        await pilot.pause()

    app = recorded_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_r_asks_then_runs_the_selected_run_again_and_refuses_one_from_elsewhere() -> None:
    app = recorded_app(clock=lambda: NOW)
    asked: list[tuple[object, ...]] = []

    def launch_run(
        target: str, nodes: tuple[str, ...], overrides: Any, fleet: Any, push: bool = False
    ) -> str:
        # a stand-in for the core's launch_run (tests/fleet/test_runs_fleet.py runs it for real)
        asked.append((target, nodes, dict(overrides)))
        return "run-20261206-1300-abcd: 3 of 3 nodes"

    app.backend.launch_run = launch_run  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        elsewhere = replace(recorded_run(0), id="run-20261130-0200-ffff", origin="elsewhere")
        screen = await open_runs(pilot, [replace(recorded_run(2), overrides={"A": "1"}), elsewhere])
        await pilot.press("r")
        shown = await until_text(pilot, "Run nightly again on snoc-strix, snoc-think, snoc-gaming")
        assert "each node at its own arch; A=1" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert asked == []
        await pilot.press("r")
        await until_text(pilot, "Run nightly again")
        await pilot.press("y")
        await until(
            pilot, lambda: "abcd: 3 of 3 nodes" in toasts(screen_text(app)), "the run's toast"
        )
        assert asked == [("nightly", ("snoc-strix", "snoc-think", "snoc-gaming"), {"A": "1"})]
        await pilot.press("down")  # the run from elsewhere: nothing to run again here
        await pilot.press("r")
        await until(
            pilot, lambda: "was started elsewhere" in toasts(screen_text(app)), "the refusal"
        )
        assert len(asked) == 1 and isinstance(app.screen, RunsScreen) and screen.is_current


async def test_read_only_refuses_r_on_the_runs_screen() -> None:
    app = recorded_app(read_only=True, clock=lambda: NOW)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await open_runs(pilot)
        await pilot.press("r")
        await until(
            pilot, lambda: "Run again (r) is off" in toasts(screen_text(app)), "the refusal"
        )


async def test_faults_are_drawn_with_a_clear_line_and_nothing_raw() -> None:
    """Issue 39's bad input on the screen: 200 builds, builds lost to GC, a node's clock ahead,
    a node gone from the fleet file, and outside text with escapes and markup."""
    big = recorded_run(2, 201)  # 67 builds on each of the three nodes
    skewed = replace(big.builds[0], started_at=NOW + 900.0, ended_at=NOW + 960.0)
    hostile = replace(
        big.builds[1], target="[bold red]vllm\x1b[2J\x1b]0;owned\x07", node="snoc-old"
    )
    shown = replace(
        big,
        target="night[/]ly\x1b[31m",
        started_by="ci@\x1b[5msnoc",
        builds=(skewed, hostile, *big.builds[2:]),
        nodes=(*big.nodes, "snoc-old"),
        missing_jobs=7,
    )
    assert len(shown.builds) == 201
    app = recorded_app(clock=lambda: NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        await open_runs(pilot, [shown])
        text = screen_text(app)
        assert "7 builds of this run no longer in the job store" in text
        assert "its clock disagrees with this host's: times clamped" in text
        assert "no longer in the fleet file" in text
        assert "201 on 4" in text
        assert "night[/]ly" in text  # markup-like text shown as it is, never parsed
        assert "\x1b" not in text and "\x07" not in text
