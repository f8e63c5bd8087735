"""`R` on the Runs screen starts a fleet run, on the real dev fleet (issue 39): keys in, screen
text out. The dialog lists every node at its own arch, ticked; the question names them; the run
starts detached like `rocmtui run` and the Runs screen shows it running; its builds outlive the
console and succeed after it closed."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import pytest

from tests.support.blackbox import console, screen_text, toasts, until, until_text
from tests.support.jobs import run_cli, wait_state

pytestmark = [pytest.mark.fleet]
SIZE = (120, 40)
ARCHES = {"snoc-strix": "gfx1151", "snoc-think": "gfx1201", "snoc-gaming": "gfx1201"}


async def test_big_r_starts_a_run_that_outlives_the_console(config: Path) -> None:
    sets = f"DEMO_NONCE={secrets.token_hex(4)} DEMO_STEPS=6 DEMO_SLEEP=0.5"
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, r"─Variables")
        await pilot.press("u")
        await until_text(pilot, r"Runs · newest first")
        await pilot.press("R")
        shown = await until_text(pilot, r"New fleet run", timeout=30)
        for node, arch in ARCHES.items():
            assert re.search(rf"{node} +{arch}", shown), shown
        await pilot.press("tab", "tab")  # target -> nodes -> the variables
        await pilot.press(*sets)
        await pilot.press("ctrl+s")
        shown = await until_text(pilot, r"Start a run of default on 3 node\(s\)\?")
        assert "snoc-strix gfx1151, snoc-think gfx1201, snoc-gaming gfx1201" in shown
        assert "DEMO_STEPS=6" in shown and "PUSHES" not in shown
        await pilot.press("y")
        said = await until(
            pilot,
            lambda: re.search(r"(run-[\w-]+): 3 of 3 nodes", toasts(screen_text(app))),
            "the run's toast",
            60,
        )
        run_id = said.group(1)
        await until_text(pilot, rf"{run_id.removeprefix('run-')} .* 3 on 3 .* running", 30)
        await until_text(pilot, r"snoc-strix +▏", 30)  # its lanes, drawn
    # the console is closed: the run's builds carry on by themselves
    shown_run = json.loads(run_cli(config, "runs", "show", run_id, "--json").stdout)
    assert [ln["node"] for ln in shown_run["lanes"]] == list(ARCHES)
    jobs = [b["job_id"] for ln in shown_run["lanes"] for b in ln["builds"]]
    assert len(jobs) == 3
    for job_id in jobs:
        assert wait_state(config, job_id, ["succeeded", "failed", "lost"], 180)["state"] == (
            "succeeded"
        )


async def test_big_r_on_the_fleet_screen_with_no_node_ticked_starts_nothing(
    config: Path,
) -> None:
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, r"─Variables")
        await pilot.press("R")  # the fleet screen's key: the same dialog
        await until_text(pilot, r"New fleet run", timeout=30)
        await pilot.press("tab", "space", "down", "space", "down", "space")  # untick all three
        await pilot.press("ctrl+s")
        await until_text(pilot, r"Not started: tick at least one node")
        await pilot.press("escape")
        await until(pilot, lambda: "New fleet run" not in screen_text(app), "the dialog closed")
    # (builds of other tests on the shared engines may be adopted as runs from elsewhere)
    runs = json.loads(run_cli(config, "runs", "--json").stdout)
    assert [r for r in runs if r["origin"] == "rocmtui"] == []
