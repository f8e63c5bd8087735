"""The Runs screen through `rocmtui serve` in Debian's headless chromium (issue 39): a fleet
run of the demo group on the dev fleet's three nodes, then `u` on the page draws it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from tests.support.serve import PageScreen, ServeProcess, browser, playwright_session
from tests.support.terminal import cli, console_env, fleet_file, wait_job

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
NODES = ("snoc-strix", "snoc-think", "snoc-gaming")


@pytest.fixture
def playwright() -> Iterator[Any]:
    yield from playwright_session()


def test_the_runs_screen_in_the_browser(fleet: DevFleet, playwright: Any, tmp_path: Path) -> None:
    env = console_env(tmp_path)
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    nonce = uuid.uuid4().hex[:8]
    sets = ("--set", f"DEMO_NONCE={nonce}", "--set", "DEMO_STEPS=3", "--set", "DEMO_SLEEP=0")
    started = json.loads(cli(env, config, "run", "default", "--json", *sets))
    for node in started["nodes"]:
        wait_job(env, config, node["job_id"], {"succeeded", "failed"}, 180)
    short = started["run_id"].removeprefix("run-")
    server = ServeProcess(config, env=env)
    chromium = browser(playwright)
    try:
        page = chromium.new_page(viewport={"width": 1400, "height": 900})
        screen = PageScreen(page)
        page.goto(server.url)
        screen.wait("the fleet screen", lambda s: "snoc-gaming" in s, 90)
        screen.focus()
        screen.press("u")
        shown = screen.wait(
            "the run on the Runs screen", lambda s: short in s and "runs · 1 run" in s, 60
        )
        for node in NODES:
            assert f"{node.ljust(11)} ▏" in shown
        assert "set its length: " in shown
        page.screenshot(path=str(tmp_path / "serve-runs.png"))
        page.close()
    finally:
        chromium.close()
        server.stop()
