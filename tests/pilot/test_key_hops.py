"""`r` on a job row reaches the core's plan call in at most four hops, and never goes back
through the App on the way (issue 40, "One key, one path").

The console runs on recorded rounds and jobs, with the real backend (`FleetBackend`) and the
real bake dialog; `tests.support.hops` follows the key across messages, tasks and threads, and
the core's `resolve_plan` records the path that reached it (and stops there: what it resolves
is tested elsewhere, tests/fleet/test_bake_dialog*.py).
"""

from __future__ import annotations

import pytest

import rocmtui.core.jobs.plan as core_plan
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import FleetBackend
from tests.support import hops
from tests.support.blackbox import until
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed

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
