"""`rocmtui serve` in a real browser: Debian's headless chromium, driven through Playwright's
Python API, against the real dev fleet (three engines, registry, WebDAV).

Why Playwright pointed at Debian's chromium: it speaks CDP to the browser the machine already
has (no webdriver binary of a matching version to keep, nothing downloaded), types real key
events into the page, sees the page's websocket frames (what xterm.js draws from: read back
as text by tests/support/serve.PageScreen) and takes screenshots. Every screenshot is written
under the test's folder; the README's is one of them, looked at and kept in screenshots/.
"""

from __future__ import annotations

import os
import re
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from devfleet import DevFleet
from tests.support.jobs import wait_for
from tests.support.serve import PageScreen, ServeProcess, browser, chromium_pids, playwright_session
from tests.support.terminal import cli, console_env, fleet_file, job_json

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
NODES = ("snoc-strix", "snoc-think", "snoc-gaming")
VIEWPORT = {"width": 1400, "height": 900}


@pytest.fixture
def playwright() -> Iterator[Any]:
    yield from playwright_session()


def serve(fleet: DevFleet, tmp: Path, *args: str, **env: str) -> ServeProcess:
    config = fleet_file(fleet, tmp, refresh_seconds=1.0)
    return ServeProcess(config, *args, env=console_env(tmp, **env))


def fleet_shown(screen: PageScreen) -> str:
    """Until every node of the dev fleet is up on the page, and the pinned GFX_ARCH shows."""
    return screen.wait(
        "the three nodes ok and GFX_ARCH",
        lambda s: (
            all(f"ok   {node}" in s or f"ok {node}" in s for node in NODES)
            and re.search(r"(?m)^ *GFX_ARCH +default +gfx950\b", s)
        ),
        90,
    )


def test_read_only_page_shows_the_fleet_opens_help_and_refuses_a_build(
    fleet: DevFleet, playwright: Any, tmp_path: Path
) -> None:
    server = serve(fleet, tmp_path)
    chromium = browser(playwright)
    try:
        page = chromium.new_page(viewport=VIEWPORT)
        screen = PageScreen(page)
        page.goto(server.url)
        shown = fleet_shown(screen)
        assert "READ-ONLY" in shown and "shared monitor" in shown
        page.screenshot(path=str(tmp_path / "serve-fleet.png"))
        (pid,) = server.consoles()
        assert "--read-only" in psutil.Process(pid).cmdline()

        screen.focus()
        screen.press("?")
        screen.wait_text(r"Keys — remap any of them", 30)
        page.screenshot(path=str(tmp_path / "serve-help.png"))
        screen.press("Escape")
        screen.wait("help closed", lambda s: "Keys — remap" not in s, 30)

        screen.press("r")  # rebuild: refused, and the page says why
        screen.wait_text(r"Read-only console: Rebuild \(r\) is off\.", 30)
        screen.press("b")
        screen.wait_text(r"Read-only console: Bake \(b\) is off\.", 30)
        page.screenshot(path=str(tmp_path / "serve-refused.png"))
        config = tmp_path / "fleet.toml"
        assert job_json(console_env(tmp_path), config) == []  # nothing ran
        page.close()
        wait_for("the console to end with its page", lambda: not psutil.pid_exists(pid), 30)
    finally:
        chromium.close()
        server.stop()


def test_with_actions_the_page_asks_for_the_token_then_r_enter_rebuilds(
    fleet: DevFleet, playwright: Any, tmp_path: Path
) -> None:
    env = {"DEMO_NONCE": uuid.uuid4().hex[:8], "DEMO_SLEEP": "0.1"}
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    first = cli(console_env(tmp_path, **env), config, "bake", "demo-pytorch", "--arch",
                "gfx1201", "--node", "snoc-think", "--set", "DEMO_SLEEP=0")  # fmt: skip
    first_id = first.split()[0]
    server = ServeProcess(config, "--allow-actions", env=console_env(tmp_path, **env))
    chromium = browser(playwright)
    try:
        page = chromium.new_page(viewport=VIEWPORT)
        screen = PageScreen(page)
        page.goto(server.url)
        assert page.url.endswith("/login")  # asked, and nothing runs
        page.screenshot(path=str(tmp_path / "serve-login.png"))
        assert screen.sockets == 0 and server.consoles() == []
        page.fill("#token", "not-the-token")
        page.click("#login")
        assert "not the token" in page.inner_text("#error")
        assert screen.sockets == 0 and server.consoles() == []
        assert [j["id"] for j in job_json(console_env(tmp_path), config)] == [first_id]

        assert server.token is not None
        page.fill("#token", server.token)
        page.click("#login")
        shown = fleet_shown(screen)
        assert "READ-ONLY" not in shown
        assert server.token not in page.url
        screen.wait_text(r"succeeded +demo-pytorch +gfx1201 +snoc-think", 240)
        screen.focus()
        screen.press("Tab", "Tab")  # nodes -> services -> jobs
        screen.press("r")
        screen.wait_text(r"target demo-pytorch .*arch gfx1201 .*node snoc-think", 30)
        screen.press("Enter")
        screen.wait_text(r"running +demo-pytorch gfx1201 on snoc-think", 90)
        screen.wait_text(r"\[\d+/\d+\] Building HIP object", 120)  # the log pane follows
        page.screenshot(path=str(tmp_path / "serve-rebuild.png"))
        screen.wait_text(r"succeeded +demo-pytorch gfx1201 on snoc-think", 240)
        jobs = [j for j in job_json(console_env(tmp_path), config) if j["id"] != first_id]
        assert len(jobs) == 1 and jobs[0]["state"] == "succeeded"
    finally:
        chromium.close()
        server.stop()
    assert server.token not in server.server_log()


def test_a_browser_killed_mid_session_ends_its_console_and_others_are_served(
    fleet: DevFleet, playwright: Any, tmp_path: Path
) -> None:
    server = serve(fleet, tmp_path)
    try:
        doomed = browser(playwright)
        screen = PageScreen(doomed.new_page(viewport=VIEWPORT))
        screen.page.goto(server.url)
        fleet_shown(screen)
        (pid,) = server.consoles()
        for browser_pid in chromium_pids():
            os.kill(browser_pid, signal.SIGKILL)  # no goodbye: the tab, the laptop lid
        wait_for("the killed browser's console to end", lambda: not psutil.pid_exists(pid), 60)
        other = browser(playwright)
        try:
            screen = PageScreen(other.new_page(viewport=VIEWPORT))
            screen.page.goto(server.url)
            fleet_shown(screen)
            assert len(server.consoles()) == 1 and pid not in server.consoles()
        finally:
            other.close()
    finally:
        server.stop()
