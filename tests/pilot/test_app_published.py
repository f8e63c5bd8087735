"""The published screen (`m`) on recorded data: keys in, screen text and intents out, and an SVG
snapshot at 120×40 (TZ=UTC, a fixed clock)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.pilot import Pilot

from rocmtui.console.backend.views import BakeView, JobView
from rocmtui.console.dialogs.bake import BakeDialog
from rocmtui.console.dialogs.cell_detail import CellDetailScreen
from rocmtui.console.intents import LogRequested
from rocmtui.console.messages import BakeLoaded
from rocmtui.console.screens.published import PublishedScreen
from rocmtui.core.matrix.rebuild import preferred_node, rebuild_for
from tests.support.blackbox import recorder, toasts
from tests.support.blackbox import screen_text as shown_text
from tests.support.snapshots import published as recorded_published
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, recorded_app


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


async def open_published(pilot: Pilot[Any]) -> PublishedScreen:
    await feed(pilot.app, pilot)  # type: ignore[arg-type]
    await pilot.press("m")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, PublishedScreen)
    screen.show(recorded_published.published())
    await pilot.pause()
    return screen


def screen_text(app: Any) -> str:
    """What the terminal shows, as plain lines."""
    return shown_text(app)


def test_published_120x40(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await open_published(pilot)
        await pilot.press("down", "right", "right")  # pytorch for gfx1250
        await pilot.pause()
        assert screen.grid_panel.grid.selected_arch == "gfx1250"

    assert snap_compare(recorded_app(), terminal_size=(120, 40), run_before=run_before)


async def test_the_cursor_walks_cells_and_the_detail_follows() -> None:
    app = recorded_app()
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await open_published(pilot)
        detail = screen.cell_panel.text
        assert "base for gfx950" in str(detail.render())
        await pilot.press("down", "down")  # triton
        await pilot.pause()
        text = str(detail.render())
        assert "triton for gfx950" in text and "≠ moved" in text
        assert "the registry has sha256:9f2b7e0d41c3" in text
        await pilot.press("right", "right")  # triton for gfx1250: stale, with the pin
        await pilot.pause()
        text = str(detail.render())
        assert "◐ stale" in text and "PYTORCH_VERSION 2.14.0 → 2.15.0" in text
        assert "sccache   21110/23456 hits (90%)" in text
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CellDetailScreen)
        assert "rocm-bake.pin.ROCM_VERSION = 7.2.2" in str(app.screen.text)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.fleet_screen


async def test_r_opens_the_bake_dialog_for_the_cell_and_l_its_last_log() -> None:
    app = recorded_app()
    asked, hook = recorder(LogRequested)
    async with app.run_test(size=(140, 45), message_hook=hook) as pilot:
        await feed(app, pilot)
        names = ("base", "pytorch", "pytorch-push", "vllm", "vllm-push")
        view = BakeView(
            path=recorded.ROOT / "bake" / "rocm-bake.hcl",
            targets=names,
            pushing_targets=frozenset({"pytorch-push", "vllm-push"}),
            arches=recorded_published.ARCHES,
        )
        screen = await open_published(pilot)  # (it feeds the demo bake file again)
        app.fleet_screen.post_message(BakeLoaded(view))
        await pilot.pause()
        await pilot.press("down", "right")  # pytorch for gfx1201
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        request = dialog.request
        assert (request.target, request.arch, request.node) == (
            "pytorch-push",
            "gfx1201",
            "snoc-think",
        )
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("l")
        await pilot.pause()
        # the job is not in the recorded job list: the owner says so, the intent was sent
        assert [m.job_id for m in asked] == ["20261201-0312-a41f"]


async def test_read_only_hides_and_refuses_rebuild() -> None:
    app = recorded_app(read_only=True)
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await open_published(pilot)
        await pilot.press("r")
        await pilot.pause()
        assert app.screen is screen  # no dialog
        assert "Read-only console: Rebuild (r) is off." in toasts(screen_text(app))


async def test_a_pushing_job_that_ends_asks_again() -> None:
    app = recorded_app()
    async with app.run_test(size=(140, 45)) as pilot:
        await feed(app, pilot)
        screen = app.published_screen
        pokes: list[float] = []

        class Feed:
            def poke(self, delay: float = 0.0) -> None:
                pokes.append(delay)

            def stop(self) -> None:
                pass

        screen.feed = Feed()  # type: ignore[assignment]
        running = JobView(
            recorded.job(
                "j1", "pytorch-push", "gfx950", "snoc-strix", "running", recorded.NOW, push=True
            )
        )
        from rocmtui.console.messages import JobsUpdated

        app.fleet_screen.post_message(JobsUpdated((running,)))
        await pilot.pause()
        assert pokes == []
        done = JobView(
            recorded.job(
                "j1", "pytorch-push", "gfx950", "snoc-strix", "succeeded", recorded.NOW, push=True
            )
        )
        app.fleet_screen.post_message(JobsUpdated((done,)))
        await pilot.pause()
        assert pokes == [1.0]


def test_the_rebuild_goes_to_the_node_the_fleet_file_names_for_the_arch() -> None:
    config = recorded.config()
    assert preferred_node(config, "gfx1201") == "snoc-think"
    assert preferred_node(config, "gfx1151") == "snoc-strix"
    assert preferred_node(config, "gfx950") == "snoc-strix"  # no node has it: the local one
    matrix = recorded_published.matrix()
    row = matrix.rows[1]
    cell = row.cell("gfx1201")
    assert cell is not None
    rebuild = rebuild_for(config, row, cell)
    assert rebuild is not None and (rebuild.target, rebuild.node, rebuild.pushes) == (
        "pytorch-push",
        "snoc-think",
        True,
    )


async def test_the_versions_panel_heads_every_column_and_says_nothing_twice() -> None:
    """The comparison column had no heading, and a pin with no upstream configured read "not
    configured   unknown": it is headed "Pin is", and a dash says there is nothing to compare."""
    from msgspec.structs import replace

    from rocmtui.console.backend.matrix_child import Published

    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_published(pilot)
        versions = recorded_published.versions()
        first = versions.rows[0]
        bare = replace(first, upstream=replace(first.upstream, state="not configured"),
                       compared="unknown")  # fmt: skip
        published = recorded_published.published()
        screen.show(Published(published.matrix, replace(versions, rows=(bare, *versions.rows[1:]))))
        await pilot.pause()
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "Newest upstream" in line)
        assert "Pin is" in header, header
        rocm = next(line for line in lines if line.lstrip().startswith("ROCM_VERSION"))
        assert rocm.split()[3:6] == ["not", "configured", "—"], rocm
        torch = next(line for line in lines if line.lstrip().startswith("PYTORCH_VERSION"))
        assert "behind" in torch, torch


async def test_a_status_line_too_long_for_80_columns_ends_in_an_ellipsis() -> None:
    """Wrapped into its one row, the line broke before a word and ended in a dangling "·"
    (`... in 1.1s ·`): now it is cut and says so."""
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_published(pilot)
        first = screen_text(app).splitlines()[0].rstrip()
        assert first.startswith(" rocmtui  published"), first
        assert first.endswith("…") and len(first) == 80, first
