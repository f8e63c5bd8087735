"""Estimates where they matter (issue 29): a running build's row and the bake dialog say what
such a build took, from the real job store; a build far past its usual time is flagged."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.messages import JobsUpdated
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.costbook.book import CostBook
from rocmtui.core.costbook.estimate import CostEstimates
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from tests.support.blackbox import screen_text, until_text
from tests.support.history import recorded_rows
from tests.support.jobs import hold_lock, job_record
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app
from tests.support.snapshots.plans import PLAN

GROUP = ("pytorch", "gfx1201", "snoc-think")


def _book(root: Path) -> JobStore:
    store = JobStore(root)
    CostBook(store, retention_days=36500).add(recorded_rows(240))
    return store


def _running(store: JobStore, started: float) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(
            job_id, job_dir, target=GROUP[0], arch=GROUP[1], node=GROUP[2], started_at=started,
        )  # fmt: skip

    job = store.create(make)
    job.log_path.write_text("#1 [internal] load build definition\n")
    return job


def test_the_estimate_follows_the_last_condition_and_flags_overtime(tmp_path: Path) -> None:
    estimates = CostEstimates(_book(tmp_path), retention_days=36500)
    now = time.time()
    said = estimates.running(*GROUP, elapsed=600, now=now)
    assert said is not None and said.startswith("≈ ") and said.endswith(", warm")
    late = estimates.running(*GROUP, elapsed=40 * 3600, now=now)
    assert late == "! far past usual (5h54m at most)"  # p90 of its slowest condition: cold
    ninja = estimates.running(*GROUP, elapsed=3600, now=now, eta=9 * 3600)
    assert ninja == "! ETA past usual (10h00m, 5h54m at most)"
    assert estimates.running(*GROUP, elapsed=3600, now=now, eta=600) == said
    assert estimates.before_start(*GROUP, now=now).startswith("such a build took ≈ ")
    none = estimates.before_start("pytorch", "gfx1250", "snoc-think", now=now)
    assert none == "no earlier build of pytorch gfx1250 on snoc-think to go by"
    assert estimates.running("pytorch", "gfx1250", "snoc-think", 60, now) is None


def test_a_running_build_row_carries_its_estimate(tmp_path: Path) -> None:
    state = tmp_path / "state"
    store = _book(state)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'state_dir = "{state}"\nhistory_retention_days = 3650\n')
    job = _running(store, time.time() - 120)
    holder = hold_lock(job.lock_path)  # its supervisor, as far as every reader can tell
    try:
        views = FleetBackend(load_config(fleet)).jobs()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    view = next(v for v in views if v.record.id == job.id)
    assert view.active and view.estimate is not None and view.estimate.startswith("≈ ")


async def test_the_row_shows_the_estimate_and_the_overtime_flag() -> None:
    app = recorded_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await feed(app, pilot)
        jobs = list(recorded.jobs())
        index = next(i for i, j in enumerate(jobs) if j.active)
        late = "! far past usual (5h54m at most)"
        jobs[index] = replace(jobs[index], estimate=late)
        post_feed(app, JobsUpdated(tuple(jobs)))
        await until_text(pilot, r"ETA 16m15s ! far past usual")


async def test_the_bake_dialog_says_what_such_a_build_took() -> None:
    said = "such a build took ≈ 2h15m, warm as last time (p90 3h06m)"
    app = recorded_app(plan=replace(PLAN, estimate=said))
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "r")
        await until_text(pilot, "such a build took ≈ 2h15m, warm as last time")
        assert "(p90 3h06m)" in screen_text(app)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
