"""Figures for `rocmtui serve` (issue 30), on a real local fleet, in Debian's headless chromium
(Playwright's Python API; never a downloaded browser).

    python bench/bench_serve.py [--fleet-dir DIR] [--loads 5] [--keys 40] [--window 60]

1. Page load to the fleet shown (the three nodes `ok` and GFX_ARCH on the page), beside
   textual-serve's own demo (`Server("python -m textual")`, its README's example) loaded to its
   first screen ("What is Textual?"), alternating, in the same run: target <= 2 s.
2. Key in the browser -> the screen's next websocket frame, painted (a requestAnimationFrame
   after it), measured inside the page (performance.now() at keydown, capture phase): p95
   < 100 ms on loopback. Same measure on the demo, as context.
3. Memory (USS) and CPU of one idle session's console, with 8 sessions open, over a window.
4. Engine requests per minute with 8 sessions open vs 1 (counting proxies in front of every
   engine, devfleet/counting.py; windows a multiple of the monitor's 30 s `buildx ls` period):
   target equal within 5% (the consoles attach to one monitor).
Nothing asserts; rows go to the table (and BENCH_RESULTS).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common
from bench_console import base_env
from bench_monitor import engine_sockets, proxied

from devfleet import CountingProxy, start_monitor
from tests.support.serve import CHROMIUM, PageScreen, ServeProcess

NODES = ("snoc-strix", "snoc-think", "snoc-gaming")
LATENCY_JS = """
window.__lat = []; window.__pending = null;
document.addEventListener('keydown', () => { window.__pending = performance.now(); }, true);
const Native = window.WebSocket;
class Timed extends Native {
  constructor(url, protocols) {
    super(url, protocols);
    this.addEventListener('message', (event) => {
      const t = window.__pending;
      if (t !== null && typeof event.data !== 'string') {
        window.__pending = null;
        requestAnimationFrame(() => window.__lat.push(performance.now() - t));
      }
    });
  }
}
window.WebSocket = Timed;
"""
DEMO = """
import sys
from textual_serve.server import Server
Server(sys.argv[1], host="127.0.0.1", port=int(sys.argv[2]), title="demo").serve()
"""


def fleet_ready(text: str) -> bool:
    return all(re.search(rf"ok +{node}\b", text) for node in NODES) and bool(
        re.search(r"(?m)^ *GFX_ARCH +\S+ +gfx950\b", text)
    )


def demo_ready(text: str) -> bool:
    return "What is Textual?" in text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_demo() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = f"{sys.executable} -m textual"
    demo = subprocess.Popen(
        [sys.executable, "-c", DEMO, command, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return demo, f"http://127.0.0.1:{port}/"
        time.sleep(0.05)  # the other process's port: nothing to wait on
    demo.kill()
    raise RuntimeError("textual-serve's demo did not listen")


def load(browser: Any, url: str, ready: Any, timeout: float = 60) -> tuple[float, Any]:
    """Seconds from navigation to `ready(screen text)`; the page (left open)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(LATENCY_JS)
    screen = PageScreen(page)
    start = time.monotonic()
    page.goto(url)
    while not ready(screen.text()):
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"{url}: not ready after {timeout} s:\n{screen.text()}")
        page.wait_for_timeout(10)
    return time.monotonic() - start, page


def key_latencies(page: Any, keys: int) -> list[float]:
    page.locator(".xterm-helper-textarea").focus()
    page.evaluate("window.__lat = []")
    for index in range(keys):
        page.keyboard.press("ArrowDown" if index % 2 == 0 else "ArrowUp")
        page.wait_for_timeout(150)  # a person's pace between keys
    page.wait_for_timeout(300)
    return [float(v) for v in page.evaluate("window.__lat")]


def rate(proxies: dict[str, CountingProxy], seconds: float, page: Any) -> float:
    """Engine requests per minute over `seconds` (the browser's events pumped meanwhile)."""
    before = sum(p.count() for p in proxies.values())
    page.wait_for_timeout(seconds * 1000)  # the measuring window
    return (sum(p.count() for p in proxies.values()) - before) / seconds * 60


def run(fleet_file: Path, tmp: Path, loads: int, keys: int, window: float) -> list[common.Row]:
    from playwright.sync_api import sync_playwright

    proxies = {h: CountingProxy(Path(p)) for h, p in engine_sockets(fleet_file).items()}
    config = proxied(fleet_file, tmp / "counted.toml", proxies)
    env = base_env(tmp / "state")
    monitor = start_monitor(
        tmp / "monitor", config, {"ROCMTUI_STATE_DIR": env["ROCMTUI_STATE_DIR"]}
    )
    server = ServeProcess(config, "--idle-timeout", "0", "--max-sessions", "8", env=env)
    demo, demo_url = start_demo()
    rows: list[common.Row] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
            )
            ours, theirs = [], []
            ours_lat: list[float] = []
            theirs_lat: list[float] = []
            for _ in range(loads):
                took, page = load(browser, server.url, fleet_ready)
                ours.append(took)
                ours_lat += key_latencies(page, keys)
                page.close()
                took, page = load(browser, demo_url, demo_ready)
                theirs.append(took)
                theirs_lat += key_latencies(page, keys)
                page.close()
            mine, anchor = common.median(ours), common.median(theirs)
            rows.append(common.row(
                "serve: page load to the fleet shown (s)", mine, anchor, unit="s",
                anchor_name="textual-serve's demo app to its first screen", target="<= 2 s",
                ok=max(ours) <= 2.0,
                note=f"median of {loads} (worst {max(ours):.2f} s); anchor's worst "
                f"{max(theirs):.2f} s",
            ))  # fmt: skip
            p95, anchor_p95 = common.p95(ours_lat), common.p95(theirs_lat)
            rows.append(common.row(
                "serve: key in the browser -> screen, p95 (ms)", p95, anchor_p95, unit="ms",
                anchor_name="textual-serve's demo app, same keys", target="< 100 ms",
                ok=p95 < 100, note=f"{len(ours_lat)} keys (arrow down/up in a table); median "
                f"{common.median(ours_lat):.1f} ms; loopback; keydown to the painted frame",
            ))  # fmt: skip

            pages = [load(browser, server.url, fleet_ready)[1]]
            time.sleep(3)
            one = rate(proxies, window, pages[0])
            for _ in range(7):
                pages.append(load(browser, server.url, fleet_ready)[1])
            consoles = server.consoles()
            pages[0].wait_for_timeout(5000)  # the 7 new consoles settle
            procs = [psutil.Process(pid) for pid in consoles]
            cpu0 = [sum(p.cpu_times()[:2]) for p in procs]
            serve0 = sum(psutil.Process(server.process.pid).cpu_times()[:2])
            start = time.monotonic()
            eight = rate(proxies, window, pages[0])
            spent = time.monotonic() - start
            cpu = [
                (sum(p.cpu_times()[:2]) - c) / spent * 100 for p, c in zip(procs, cpu0, strict=True)
            ]
            serve_cpu = (sum(psutil.Process(server.process.pid).cpu_times()[:2]) - serve0) / spent
            uss = [p.memory_full_info().uss / 2**20 for p in procs]
            rss = [p.memory_info().rss / 2**20 for p in procs]
            rows.append(common.row(
                "serve: memory of one idle session's console (USS MB)", common.median(uss),
                unit="MB", note=f"median of {len(procs)} with 8 open; RSS median "
                f"{common.median(rss):.0f} MB (shared pages counted in each)",
            ))  # fmt: skip
            rows.append(common.row(
                "serve: CPU of one idle session's console (% of a core)", common.median(cpu),
                unit="%", note=f"median of {len(procs)} over {spent:.0f} s, 8 open, 2 s refresh; "
                f"serve itself {serve_cpu * 100:.2f}% for all 8",
            ))  # fmt: skip
            rows.append(common.row(
                "serve: engine requests/min, 8 sessions vs 1", eight, one, unit="/min",
                anchor_name="the same with 1 session", target="equal within 5%",
                ok=abs(eight - one) <= 0.05 * one,
                note=f"{window:.0f} s windows; every console attached to one monitor",
            ))  # fmt: skip
            browser.close()
    finally:
        os.killpg(demo.pid, signal.SIGTERM)  # the demo server and the apps it started
        demo.wait(timeout=10)
        server.stop()
        monitor.stop(grace=5.0)
        for proxy in proxies.values():
            proxy.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fleet-dir", type=Path)
    parser.add_argument("--loads", type=int, default=3 if common.quick() else 5)
    parser.add_argument("--keys", type=int, default=20 if common.quick() else 40)
    parser.add_argument("--window", type=float, default=30.0 if common.quick() else 60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        tmp = Path(folder)
        with common.fleet_at(args.fleet_dir, tmp) as fleet_file:
            rows = run(fleet_file, tmp, args.loads, args.keys, args.window)
    common.emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
