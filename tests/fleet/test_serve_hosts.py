"""Issue 37, the served console: the gates a page of another site (DNS rebinding through the
documented `ssh -L` tunnel), a noisy client or a leaked journal would otherwise get through.
On the real server process (tests.support.serve.ServeProcess), its consoles checked by pid."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import psutil
import pytest

from rocmtui.serve.limits import MAX_COLUMNS, MAX_ROWS, LimitedChecks, StartRate, clamp_size
from tests.support.jobs import engineless_fleet, wait_for
from tests.support.serve import ServeProcess


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServeProcess]:
    args = getattr(request, "param", ())
    serving = ServeProcess(engineless_fleet(tmp_path), "--max-sessions", "8", *args)
    try:
        yield serving
    finally:
        serving.stop()


def _port(server: ServeProcess) -> int:
    return int(server.host.rsplit(":", 1)[1])


async def _status(http: aiohttp.ClientSession, server: ServeProcess, path: str, host: str) -> int:
    async with http.get(f"{server.url}{path.lstrip('/')}", headers={"Host": host},
                        allow_redirects=False) as answer:  # fmt: skip
        return answer.status


async def _open(
    http: aiohttp.ClientSession,
    server: ServeProcess,
    *,
    host: str | None = None,
    query: str = "width=100&height=30",
) -> aiohttp.ClientWebSocketResponse | int:
    """The page's websocket, as a browser sends it: Origin is the page's own (the Host)."""
    host = host or server.host
    headers = {"Host": host, "Origin": f"http://{host}"}
    url = server.url.replace("http", "ws", 1) + f"ws?{query}"
    try:
        return await http.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(30))
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status


async def _first_frame(ws: aiohttp.ClientWebSocketResponse) -> None:
    async for message in ws:
        if message.type == aiohttp.WSMsgType.BINARY:
            return
    raise AssertionError("the socket closed before the console drew")


@pytest.mark.parametrize("server", [("--allow-host", "snoc-strix.tailnet")], indirect=True)
async def test_every_route_refuses_a_host_outside_the_allowlist(server: ServeProcess) -> None:
    """DNS rebinding: a page of attacker.example, its name now pointing at 127.0.0.1, sends
    its own Host and Origin, which agree: refused on every route, and no console starts."""
    port = _port(server)
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/login", "/static/css/xterm.css", "/ws"):
            assert await _status(http, server, path, f"attacker.example:{port}") == 421, path
        assert await _open(http, server, host=f"attacker.example:{port}") == 421
        # the names a browser on this host or through the tunnel uses, whatever the port
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "[::1]:9000", "localhost"):
            assert await _status(http, server, "/", host) == 200, host
        assert await _status(http, server, "/", "snoc-strix.tailnet:8765") == 200  # added
    assert server.consoles() == []
    assert "host attacker.example" in server.server_log()


@pytest.mark.parametrize("server", [("--spares", "0")], indirect=True)
async def test_window_sizes_from_the_page_are_clamped(server: ServeProcess) -> None:
    """A query string asking for a million columns starts a console of the largest size, not
    a million-column screen (no spare: the console starts at the size the page asks)."""
    async with aiohttp.ClientSession() as http:
        ws = await _open(http, server, query="width=1000000&height=1000000")
        assert not isinstance(ws, int)
        await _first_frame(ws)
        (pid,) = server.consoles()
        environ = psutil.Process(pid).environ()
        assert (int(environ["COLUMNS"]), int(environ["ROWS"])) == (MAX_COLUMNS, MAX_ROWS)
        await ws.close()
    assert clamp_size(10**9, -5) == (MAX_COLUMNS, 1)
    assert clamp_size("x", "24") == (80, 24)  # type: ignore[arg-type]


async def test_session_starts_are_rate_limited_per_client(server: ServeProcess) -> None:
    """One client opening sockets as fast as it can is refused (429) past a burst, before any
    console starts; another client is not."""
    async with aiohttp.ClientSession() as http:
        answers = []
        for _ in range(40):
            ws = await _open(http, server)
            answers.append(ws if isinstance(ws, int) else 101)
            if not isinstance(ws, int):
                await ws.close()
        assert 429 in answers, answers
    wait_for("every console to end", lambda: not server.consoles(), 30)
    other = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=other) as http:
        ws = await _open(http, server)
        assert not isinstance(ws, int), ws
        await ws.close()
    wait_for("every console to end", lambda: not server.consoles(), 30)
    assert "too many console starts from 127.0.0.1" in server.server_log()


def test_an_idle_keep_alive_connection_is_closed(server: ServeProcess) -> None:
    """A connection that asked for one page and then says nothing is closed within seconds
    (aiohttp's default keeps it an hour: a few thousand of them hold the server's sockets)."""
    host, port = server.host.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: {server.host}\r\n\r\n".encode())
        sock.settimeout(60)
        received = b""
        started = time.monotonic()
        while chunk := sock.recv(65536):  # until the server closes it
            received += chunk
        assert received.startswith(b"HTTP/1.1 200"), received[:100]
        assert time.monotonic() - started < 60


def test_the_token_is_not_printed_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    """Under systemd stdout is the journal, which other people read: the token's file is
    named instead, and the token itself appears in no output."""
    server = ServeProcess(engineless_fleet(tmp_path), "--allow-actions")
    try:
        assert server.token is not None
        said = "\n".join(server.lines)
        assert server.token not in said and str(server.token_file) in said
        assert server.token not in server.server_log()
    finally:
        server.stop()


@pytest.mark.parametrize("server", [("--allow-actions",)], indirect=True)
async def test_logging_out_closes_that_logins_consoles(server: ServeProcess) -> None:
    """Two logins, each with a console: the one that logs out loses its console (the process
    ends); the other keeps its own."""
    sessions = []
    for _ in range(2):
        jar = aiohttp.CookieJar(unsafe=True)
        http = aiohttp.ClientSession(cookie_jar=jar)
        async with http.post(f"{server.url}login", data={"token": server.token}) as answer:
            assert answer.status == 200
        ws = await _open(http, server)
        assert not isinstance(ws, int)
        await _first_frame(ws)
        sessions.append((http, ws))
    try:
        before = set(wait_for("two consoles", lambda: len(server.consoles()) == 2, 30) and
                     server.consoles())  # fmt: skip
        (http, ws), (_, other) = sessions
        async with http.post(f"{server.url}logout", allow_redirects=False) as answer:
            assert answer.status == 303
        async for _message in ws:  # drained until the server closes it
            pass
        assert ws.closed and not other.closed
        wait_for("one console left", lambda: len(server.consoles()) == 1, 30)
        assert set(server.consoles()) < before  # the other login's console, still running
    finally:
        for http, ws in sessions:
            await ws.close()
            await http.close()


async def test_password_checks_run_a_few_at_a_time() -> None:
    """scrypt takes ~16 MB and tens of ms a check: a burst of logins waits its turn instead
    of taking every core and the server's memory at once."""
    running = most = 0

    def check(_: int) -> bool:
        nonlocal running, most
        running += 1
        most = max(most, running)
        time.sleep(0.05)  # stands in for scrypt's own time: the overlap is what is measured
        running -= 1
        return True

    checks = LimitedChecks(2)
    assert all(await asyncio.gather(*(checks.run(check, i) for i in range(12))))
    assert most == 2


def test_a_client_that_keeps_trying_while_refused_gets_no_start() -> None:
    """The bucket refills for a client that pauses, not for one hammering the door."""
    rate = StartRate(burst=2, per_second=0.2)
    assert rate.allow("a", now=0) and rate.allow("a", now=0) and not rate.allow("a", now=0)
    assert not any(rate.allow("a", now=t / 100) for t in range(1, 2000))  # 20 s of flood
    assert rate.allow("a", now=20 + 5.1)  # 5 s quiet: one start
    assert rate.allow("b", now=0)  # another client: its own bucket


async def _screenshot(ws: aiohttp.ClientWebSocketResponse) -> str:
    """The palette's Screenshot, typed into the console: the delivery key it announces. Typed
    again (after Escape) while none is announced: a console just adopted may still be
    starting when the first keys arrive."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for keys in ("\x1b", "\x10", "Screenshot", "\r"):  # Escape, ctrl+p, the command, Enter
            await ws.send_str(json.dumps(["stdin", keys]))
            pause = time.monotonic() + 1.5  # the palette opens, filters, runs
            while time.monotonic() < pause:
                with contextlib.suppress(TimeoutError):
                    message = await asyncio.wait_for(ws.receive(), 0.3)
                    if message.type == aiohttp.WSMsgType.TEXT:
                        kind, *rest = json.loads(message.data)
                        if kind == "deliver_file_start":
                            return str(rest[0])
    raise AssertionError("no delivery announced")


@pytest.mark.parametrize("server", [("--spares", "0")], indirect=True)
async def test_a_screenshot_is_fetched_once_and_never_held(server: ServeProcess) -> None:
    """The page fetches a screenshot it is told of; one nobody fetches is dropped within
    seconds (read to its end, so the console lets go of its bytes), not kept until the
    session ends."""
    async with aiohttp.ClientSession() as http:
        ws = await _open(http, server)
        assert not isinstance(ws, int)
        await _first_frame(ws)
        fetched = await _screenshot(ws)
        async with http.get(f"{server.url}download/{fetched}") as answer:
            assert answer.status == 200 and "<svg" in await answer.text()
        async with http.get(f"{server.url}download/{fetched}") as answer:
            assert answer.status == 404  # delivered once, then gone
        left = await _screenshot(ws)
        deadline = time.monotonic() + 60
        while "not fetched within 10 s was dropped" not in server.server_log():
            assert time.monotonic() < deadline, "the delivery was held"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.receive(), 0.2)  # the session stays served
        async with http.get(f"{server.url}download/{left}") as answer:
            assert answer.status == 404
        assert not ws.closed
        await ws.close()
