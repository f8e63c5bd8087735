"""The monitor's /metrics under idle connections (issue 37): a real `rocmtui monitor` process,
held open by thousands of connections that never send a request.

Each idle connection held a thread of the monitor for good: a few thousand exhausted its
threads and its probe rounds failed. Now one thread serves every connection, idle ones are
closed after `IDLE_SECONDS` and at most `MAX_CONNECTIONS` are kept (the longest idle goes
first), so scrapes are answered and rounds go on. The figures (5,000 connections, scrape
p95, rounds on time) are bench/bench_monitor_idle.py's.
"""

from __future__ import annotations

import contextlib
import re
import socket
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import start_monitor
from rocmtui.core.hostmonitor.http import MAX_CONNECTIONS, MetricsServer
from rocmtui.core.hostmonitor.jobsview import JobsView
from rocmtui.core.hostmonitor.metrics import MetricsBook
from tests.support.exposition import FIGURES
from tests.support.jobs import engineless_fleet, wait_for
from tests.support.snapshots import recorded

IDLE = 2000  # connections that never send a byte


def scrape(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=timeout) as answer:
        return str(answer.read().decode())


def rounds(text: str) -> int:
    """Probe rounds done (0 before the first one is in)."""
    found = re.search(r"^rocmtui_probe_rounds_total (\S+)$", text, re.M)
    return int(float(found.group(1))) if found else 0


def threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^Threads:\s+(\d+)$", status, re.M)
    assert found
    return int(found.group(1))


def test_idle_connections_neither_hold_threads_nor_stop_rounds(tmp_path: Path) -> None:
    fleet = engineless_fleet(tmp_path, refresh_seconds=1.0)
    handle = start_monitor(tmp_path / "monitor", fleet)
    held: list[socket.socket] = []
    try:
        parts = urllib.parse.urlsplit(handle.url)
        address = (parts.hostname or "127.0.0.1", parts.port or 0)
        before = wait_for("the first round", lambda: rounds(scrape(handle.url)), 30)
        for _ in range(IDLE):
            held.append(socket.create_connection(address, timeout=10))
        assert rounds(scrape(handle.url)) >= before  # answered while they are held
        wait_for("two more probe rounds", lambda: rounds(scrape(handle.url)) >= before + 2, 30)
        # one serving thread, not one per connection (the monitor's own threads besides)
        assert threads(handle.pid) < 64, threads(handle.pid)
        # it keeps at most MAX_CONNECTIONS: the rest were closed already (idle ones are closed
        # after IDLE_SECONDS: the in-process tests below see that with a short one)
        open_now = sum(1 for s in held if _still_open(s))
        assert open_now <= MAX_CONNECTIONS, open_now
    finally:
        for s in held:
            s.close()
        handle.stop(grace=5.0)


def _still_open(sock: socket.socket) -> bool:
    """Whether the peer has not closed `sock` (a read that would block: still open)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


# --- the server in this process, on loopback: what a scraper and a stray client each get -------


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    book = MetricsBook(recorded.config(), "test")
    book.update(recorded.fleet(), JobsView(read_at=recorded.NOW), FIGURES)
    served = MetricsServer(("127.0.0.1", 0), book, lambda: 3, idle_seconds=1.0, max_connections=8)
    try:
        yield served
    finally:
        served.close()


def _address(server: MetricsServer) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(server.url)
    return parts.hostname or "127.0.0.1", parts.port or 0


def _exchange(sock: socket.socket, request: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send `request`; read one answer (status line, headers, body by Content-Length)."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        assert more, data
        data += more
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    size = int(headers.get("content-length", "0"))
    while len(body) < size and not request.startswith(b"HEAD"):
        more = sock.recv(65536)
        assert more
        body += more
    return lines[0], headers, body


def test_a_scraper_keeps_its_connection_and_strays_get_http_errors(server: MetricsServer) -> None:
    with socket.create_connection(_address(server), timeout=10) as sock:
        for _ in range(3):  # keep-alive: three scrapes on one connection
            status, headers, body = _exchange(sock, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == "HTTP/1.1 200 OK" and headers["connection"] == "keep-alive"
            assert b"rocmtui_consoles_attached 3.0" in body
            assert headers["content-type"].startswith("text/plain; version=0.0.4")
        status, headers, body = _exchange(sock, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 200 OK" and int(headers["content-length"]) > 0
        status, _, _ = _exchange(sock, b"GET /nope HTTP/1.1\r\n\r\n")
        assert status == "HTTP/1.1 404 Not Found"
    for request, status in (
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "405 Method Not Allowed"),
        (b"GARBAGE\r\n\r\n", "400 Bad Request"),
        (b"GET /" + b"a" * 9000, "431 Request Header Fields Too Large"),
        (b"GET / HTTP/1.0\r\n\r\n", "200 OK"),  # 1.0 without keep-alive: answered, closed
    ):
        with socket.create_connection(_address(server), timeout=10) as sock:
            said, headers, _ = _exchange(sock, request)
            assert said.endswith(status), (request[:20], said)
            assert headers["connection"] == "close"
            assert sock.recv(1) == b""  # and the server closed it


def test_idle_and_surplus_connections_are_closed(server: MetricsServer) -> None:
    held = [socket.create_connection(_address(server), timeout=10) for _ in range(20)]
    try:
        wait_for("the surplus closed", lambda: server.connections <= 8, 10, poll=0.05)
        # the newest are the ones kept; a scrape still gets through
        with socket.create_connection(_address(server), timeout=10) as sock:
            status, _, _ = _exchange(sock, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert status == "HTTP/1.1 200 OK"
        for sock in held:  # idle past idle_seconds: every one is closed by the server
            sock.settimeout(10)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1) == b""
        wait_for("no connection left", lambda: server.connections == 0, 10, poll=0.05)
    finally:
        for sock in held:
            sock.close()


def test_pipelined_requests_are_answered_in_order_and_a_flood_of_them_is_bounded(
    server: MetricsServer,
) -> None:
    """Requests sent back to back before any answer is read are answered one after another;
    5,000 of them in one write neither exhaust the server's stack nor stop it."""
    with socket.create_connection(_address(server), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 ") < 2 or not data.endswith(b"not found\n"):
            more = sock.recv(65536)
            assert more, data
            data += more
        assert data.index(b"HTTP/1.1 200 OK") < data.index(b"HTTP/1.1 404 Not Found"), data
    with socket.create_connection(_address(server), timeout=10) as sock:
        count = 5000
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n" * count)
        answered = 0
        data = b""
        while answered < count:
            more = sock.recv(1 << 20)
            assert more, answered
            data += more
            answered += data.count(b"HTTP/1.1 200 OK")
            data = (
                data[data.rfind(b"HTTP/1.1 200 OK") + 1 :] if b"HTTP/1.1 200 OK" in data else data
            )
        assert answered == count
    with socket.create_connection(_address(server), timeout=10) as sock:  # still serving
        assert _exchange(sock, b"GET /metrics HTTP/1.1\r\n\r\n")[0] == "HTTP/1.1 200 OK"
