"""Figures for the monitor's /metrics under idle connections (issue 37), on loopback.

    python bench/bench_monitor_idle.py [--idle 5000] [--window 20] [--quick]

`rocmtui monitor` on a fleet file of one node whose engine socket does not exist (each round
is quick and needs no dev fleet: what is measured is the metrics server beside the rounds),
refresh 1 s. A flood of `--idle` connections that never send a byte is opened to /metrics
(all connecting at once, established from the client's side within 60 s: a server may not
have accepted them yet) and left open for `--window` seconds, while /metrics is scraped back
to back.
The monitor keeps at most 256 and closes the rest (idle ones after 75 s); the anchor keeps
every one (a thread each).

1. Scrape p95 during the flood: target < 50 ms. Anchor: prometheus-client's own HTTP server
   (`start_http_server`, a thread per connection, as the monitor's was) serving the same
   exposition under the same flood.
2. Probe rounds on time during the flood: rounds done / rounds due (window / refresh); target
   >= 0.9. Anchor: the same monitor's rounds in a window without the flood.
3. The monitor's threads at the end of the flood (information: bounded, beside the anchor
   server's).

Loopback only; every process started here is stopped by pid. Nothing asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from bench_monitor import ANCHOR_SERVER

from devfleet import start_monitor
from devfleet.processes import free_port

REFRESH = 1.0


def engineless(tmp: Path) -> Path:
    """A fleet file of one node whose engine socket does not exist (probed `down` at once)."""
    out = tmp / "fleet.toml"
    out.write_text(
        f'refresh_seconds = {REFRESH}\n[[nodes]]\nname = "n1"\n'
        f'docker_host = "unix://{tmp}/no.sock"\ngfx = "gfx1201"\n'
    )
    return out


OPEN_SECONDS = 60.0  # the flood's connections are opened within this, however slow the server


class Flood:
    """Up to `count` idle connections to `address`, all connecting at once (non-blocking, so a
    server slow to accept does not slow the opening of the others: the kernel retries their
    handshakes) and given `OPEN_SECONDS` to be established; then left alone: none sends a
    byte. `held()` says how many the server has not closed."""

    def __init__(self, address: tuple[str, int], count: int) -> None:
        self.address = address
        self.count = count
        self.socks: list[socket.socket] = []
        self.failed = 0

    def start(self) -> None:
        connecting: dict[int, socket.socket] = {}
        poller = select.poll()
        for _ in range(self.count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            code = sock.connect_ex(self.address)
            if code not in (0, errno.EINPROGRESS):
                sock.close()
                self.failed += 1
                continue
            connecting[sock.fileno()] = sock
            poller.register(sock, select.POLLOUT)
        deadline = time.monotonic() + OPEN_SECONDS
        while connecting and time.monotonic() < deadline:
            for fd, _ in poller.poll(500):
                sock = connecting.pop(fd)
                poller.unregister(fd)
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    self.socks.append(sock)
                else:
                    sock.close()
                    self.failed += 1
        for sock in connecting.values():  # not established in time
            sock.close()
            self.failed += 1

    def held(self) -> int:
        """Connections the server has not closed."""
        return sum(1 for sock in self.socks if not _closed(sock))

    def stop(self) -> None:
        for sock in self.socks:
            sock.close()


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def scrapes_for(url: str, seconds: float) -> tuple[list[float], int]:
    """Seconds each back-to-back scrape took for `seconds`, and how many failed."""
    times: list[float] = []
    failed = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                answer.read()
            times.append(time.perf_counter() - started)
        except OSError:
            failed += 1
        time.sleep(0.02)
    return times, failed


def rounds(url: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as answer:
        found = re.search(rb"(?m)^rocmtui_probe_rounds_total (\S+)", answer.read())
    return float(found.group(1)) if found else 0.0


def threads(pid: int) -> int:
    found = re.search(r"(?m)^Threads:\s+(\d+)$", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) if found else -1


def measure(idle: int, window: float, tmp: Path) -> list[common.Row]:
    env = {"ROCMTUI_STATE_DIR": str(tmp / "state")}
    monitor = start_monitor(tmp / "monitor", engineless(tmp), env)
    anchor: subprocess.Popen[str] | None = None
    try:
        url = f"{monitor.url}/metrics"
        deadline = time.monotonic() + 60
        while rounds(url) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("the monitor finished no 2 rounds in 60 s")
            time.sleep(0.2)
        calm_before = rounds(url)
        calm_times, _ = scrapes_for(url, window)
        calm_rounds = rounds(url) - calm_before
        parts = urllib.parse.urlsplit(url)
        flood = Flood((parts.hostname or "127.0.0.1", parts.port or 0), idle)
        try:
            flood.start()
            before = rounds(url)
            ours, ours_failed = scrapes_for(url, window)
            ours_rounds = rounds(url) - before
            ours_threads = threads(monitor.pid)
            ours_held = flood.held()
        finally:
            flood.stop()
        with urllib.request.urlopen(url, timeout=10) as answer:
            saved = tmp / "exposition.txt"
            saved.write_bytes(answer.read())
        port = free_port()
        anchor = subprocess.Popen(
            [sys.executable, "-c", ANCHOR_SERVER, str(saved), str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert anchor.stdout is not None and anchor.stdout.readline().strip() == "ready"
        anchor_url = f"http://127.0.0.1:{port}/metrics"
        theirs_flood = Flood(("127.0.0.1", port), idle)
        try:
            theirs_flood.start()
            theirs, theirs_failed = scrapes_for(anchor_url, window)
            theirs_threads = threads(anchor.pid)
            theirs_held = theirs_flood.held()
        finally:
            theirs_flood.stop()
    finally:
        if anchor is not None:
            anchor.kill()
            anchor.wait()
        monitor.stop(5.0)
    due = window / REFRESH
    p95 = common.p95(ours) * 1000 if ours else None
    anchor_p95 = common.p95(theirs) * 1000 if theirs else None
    return [
        common.row(
            f"/metrics scrape p95 with {idle:,} idle connections held", p95, anchor_p95,
            unit="ms", anchor_name="prometheus-client start_http_server, same flood",
            target="< 50 ms", ok=p95 is not None and p95 < 50 and not ours_failed,
            note=f"{len(ours)} scrapes in {window:g} s, {ours_failed} failed (anchor: "
            f"{len(theirs)}, {theirs_failed} failed); calm p95 "
            f"{common.p95(calm_times) * 1000:.1f} ms; opened {len(flood.socks):,} (anchor "
            f"{len(theirs_flood.socks):,} in {OPEN_SECONDS:g} s), still open at the end "
            f"{ours_held:,} (anchor {theirs_held:,}); machine shared and loaded",
        ),
        common.row(
            f"probe rounds done / due with {idle:,} idle connections held", ours_rounds / due,
            calm_rounds / due, unit="ratio", anchor_name="same monitor, no flood",
            target=">= 0.9", ok=ours_rounds / due >= 0.9, lower_is_better=False,
            note=f"{ours_rounds:g} rounds in {window:g} s at refresh {REFRESH:g} s "
            f"(no flood: {calm_rounds:g}); one engineless node",
        ),
        common.row(
            f"monitor threads with {idle:,} idle connections held", ours_threads,
            theirs_threads, unit="threads", anchor_name="prometheus-client start_http_server",
            target="bounded", ok=None,
            note="read from /proc/PID/status at the end of the flood",
        ),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=5000)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    window = 10.0 if args.quick or common.quick() else args.window
    with tempfile.TemporaryDirectory(prefix="rt-idle-", dir="/tmp") as tmp:
        rows = measure(args.idle, window, Path(tmp))
    common.emit(rows)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
