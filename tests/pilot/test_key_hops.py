"""`r` on a job row reaches the core's plan call in at most four hops, and never goes back
through the App on the way; the dialog's Start goes on to the core's launch without the App
at all (issue 40, "One key, one path").

The console runs on recorded rounds and jobs, with the real backend (`FleetBackend`) and the
real bake dialog; `tests.support.hops` follows the key across messages, tasks and threads, and
the core's call records the path that reached it (and stops there: what it resolves or starts
is tested elsewhere, tests/fleet/ and tests/e2e/).
"""

from __future__ import annotations

import pytest

import rocmtui.core.jobs.launch as core_launch
import rocmtui.core.jobs.plan as core_plan
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import FleetBackend
from tests.support import hops
from tests.support.blackbox import until, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import RecordedPlans, feed
from tests.support.snapshots.plans import PLAN

MAX_HOPS = 4
APP = "RocmTui"


async def test_r_on_a_job_row_reaches_the_core_plan_in_four_hops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = recorded.config()
    app = RocmTui(config, backend=FleetBackend(config), live=False, clock=lambda: recorded.NOW)
    paths: list[tuple[str, ...]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down")  # the jobs panel: pytorch on snoc-think
        await pilot.pause()
        hops.install(monkeypatch)
        hops.arrival(monkeypatch, core_plan, "resolve_plan", paths)
        await pilot.press("r")
        await until(pilot, lambda: paths, "the bake dialog's plan call")
        monkeypatch.undo()
    path = paths[0]
    said = " → ".join(path)
    assert path[0] == "FleetScreen", said  # the binding's action: where the key came in
    assert path[-1] == "rocmtui.core.jobs.plan.resolve_plan", said
    assert len(path) - 1 <= MAX_HOPS, said
    assert path.count(APP) == 1, f"back through the App: {said}"
    # the walk as it stands, so that a change to it is seen and read
    assert path == (
        "FleetScreen",
        APP,
        "BakeDialog",
        "FleetBackend",
        "rocmtui.core.jobs.plan.resolve_plan",
    ), said


async def test_start_in_the_bake_dialog_reaches_the_core_launch_not_through_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dialog's plan goes straight to the launch: Start (Enter) → the flow that opened
    the dialog → the door → the core, with no message to the App between."""
    config = recorded.config()
    backend = RecordedPlans(config, PLAN)  # bake --print answered; the launch is the door's
    app = RocmTui(config, backend=backend, live=False, clock=lambda: recorded.NOW)
    paths: list[tuple[str, ...]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "r")
        await until_text(pilot, r"▶ +\"GFX_ARCH\": \"gfx1201\"")  # resolved: Start can start
        hops.install(monkeypatch)
        hops.arrival(monkeypatch, core_launch, "launch_job", paths)
        await pilot.press("enter")
        await until(pilot, lambda: paths, "the launch's core call")
        monkeypatch.undo()
    path = paths[0]
    said = " → ".join(path)
    assert APP not in path, f"back through the App: {said}"
    assert path == (
        "BakeDialog",
        "ConsoleActions",
        "FleetBackend",
        "rocmtui.console.backend.calls",
        "rocmtui.core.jobs.launch.launch_job",
    ), said
