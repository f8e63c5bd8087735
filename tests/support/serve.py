"""What the `rocmtui serve` tests share: the real server as a process, Debian's chromium driven
through Playwright, and the screen the page drew, read back.

The page draws the console on a canvas (xterm.js with its WebGL/canvas renderer): there is no
text in the DOM to read. `PageScreen` replays every byte the page's websocket received into a
terminal emulator (pyte) of the size the page asked for: what xterm.js drew from, read as text.
Screenshots of the page are taken beside it, for a person to look at.

Never a downloaded browser: Playwright is pointed at Debian's `chromium` (installed by
.ci/install-system). Playwright's sync API delivers page events only while it is called, so
waits pump it (`page.wait_for_timeout`) between checks of the condition.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import psutil
import pytest

CHROMIUM = Path("/usr/lib/chromium/chromium")  # the binary: /usr/bin/chromium is a shell script


class ServeProcess:
    """`rocmtui --config FLEET serve --listen 127.0.0.1:0 ARGS` as a real process."""

    def __init__(self, config: Path, *args: str, env: Mapping[str, str] | None = None) -> None:
        argv = [sys.executable, "-m", "rocmtui", "--config", str(config), "serve"]
        argv += ["--listen", "127.0.0.1:0", *args]
        self.log = config.parent / f"serve-{time.monotonic_ns()}.log"
        self._err = self.log.open("wb")
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=dict(env) if env is not None else None,
            text=True,
        )
        self.lines: list[str] = []
        self.url = ""
        self.token: str | None = None
        self.seen: set[int] = set()  # every console pid ever seen: none may outlive the server
        assert self.process.stdout is not None
        deadline = time.monotonic() + 60
        while not self.url:
            line = self.process.stdout.readline()
            if not line:
                self.stop()
                pytest.fail(f"serve ended before it listened:\n{self.log.read_text()}")
            self.lines.append(line.rstrip("\n"))
            found = re.match(r"rocmtui serve: (https?://\S+/) ", line)
            if found:
                self.url = found.group(1)
            assert time.monotonic() < deadline, "serve did not say where it listens"
        if "--allow-actions" in args:
            line = self.process.stdout.readline()  # the tunnel line
            self.lines.append(line.rstrip("\n"))
            line = self.process.stdout.readline()
            self.lines.append(line.rstrip("\n"))
            # stdout is a pipe here: the token file is named, the token not printed
            found = re.search(r"login token: in (\S+) \(mode 0600", line)
            assert found, self.lines
            self.token_file = Path(found.group(1))
            self.token = self.token_file.read_text().strip()

    @property
    def host(self) -> str:
        return self.url.split("//", 1)[1].rstrip("/")

    def consoles(self) -> list[int]:
        """The pids of the console processes serving sessions now: children the server's log
        named as a session's console (a spare started ahead of a browser is not one yet)."""
        sessions = {
            int(p) for p in re.findall(r"session \d+ opened: console pid (\d+)", self.server_log())
        }
        return [pid for pid in self.children() if pid in sessions]

    def spares(self) -> list[int]:
        """Consoles started ahead of any browser (not sessions)."""
        log = self.server_log()
        sessions = {int(p) for p in re.findall(r"session \d+ opened: console pid (\d+)", log)}
        started = {int(p) for p in re.findall(r"spare console pid (\d+) started", log)}
        return [pid for pid in self.children() if pid in started - sessions]

    def children(self) -> list[int]:
        """Every console process the server runs now (sessions and spares), remembered for
        the orphan check at `stop`."""
        found = []
        try:
            children = psutil.Process(self.process.pid).children()
        except psutil.NoSuchProcess:
            return []
        for child in children:
            try:
                words = child.cmdline()
                if "rocmtui" in words and "monitor" not in words and _alive(child.pid):
                    found.append(child.pid)
            except psutil.Error:
                continue
        self.seen.update(found)
        return found

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM; then no console it ever ran may be left (each checked by pid)."""
        self.children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._err.close()
        if self.process.stdout is not None:
            self.process.stdout.close()
        left = [pid for pid in self.seen if psutil.pid_exists(pid) and _alive(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"consoles outlived the server: {left}"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class PageScreen:
    """The console as the page received it: every websocket byte replayed into pyte."""

    def __init__(self, page: Any) -> None:
        import pyte

        self.page = page
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)
        self.sockets = 0
        self.closed = 0
        page.on("websocket", self._attach)

    def _attach(self, ws: Any) -> None:
        query = parse_qs(urlparse(ws.url).query)
        width = int(query.get("width", ["80"])[0])
        height = int(query.get("height", ["24"])[0])
        self.screen.resize(height, width)
        self.sockets += 1
        ws.on("framereceived", self._received)
        ws.on("framesent", self._sent)
        ws.on("close", self._closed)

    def _closed(self, ws: Any) -> None:
        self.closed += 1

    def _received(self, payload: Any) -> None:
        if isinstance(payload, bytes):
            self.stream.feed(payload)

    def _sent(self, payload: Any) -> None:
        if isinstance(payload, str) and payload.startswith('["resize"'):
            size = json.loads(payload)[1]
            self.screen.resize(int(size["height"]), int(size["width"]))

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait(self, what: str, condition: Callable[[str], object], timeout: float = 60.0) -> str:
        """Pump the page's events until `condition(text)` holds; fail with the last screen."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.text()
            if condition(shown):
                return shown
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout:g}s waiting for {what}; page:\n{shown}")
            self.page.wait_for_timeout(100)

    def wait_text(self, pattern: str, timeout: float = 60.0) -> str:
        return self.wait(repr(pattern), lambda s: re.search(pattern, s, re.M), timeout)

    def focus(self) -> None:
        """Keys to the terminal, as a click would send them, without a click's own meaning
        (a click on a table row moves the console's focus there)."""
        self.page.locator(".xterm-helper-textarea").focus()

    def press(self, *keys: str) -> None:
        """Keys typed into the page (Playwright names: Enter, Tab, ?, r ...)."""
        for key in keys:
            self.page.keyboard.press(key)


def chromium_pids() -> list[int]:
    """Our chromium's main processes (descendants of this test process)."""
    me = psutil.Process()
    found = []
    for child in me.children(recursive=True):
        try:
            if child.name() == "chromium" and "--type=" not in " ".join(child.cmdline()):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def browser(playwright: Any) -> Any:
    """Debian's chromium, headless (no sandbox: tests run as root)."""
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
    )


def playwright_session() -> Iterator[Any]:
    """Playwright's driver for one test (stopped at the end, with every browser it ran)."""
    from tests.support.realparts import require

    require("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright
