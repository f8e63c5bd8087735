"""`rocmtui serve`'s gates against bad input, on the real server process (no browser needed to
forge what a browser never sends): a request without the token, a forged websocket Origin,
twenty sessions at once against a limit of eight, an idle session — each refused or cleaned up
(console processes checked by pid), and the server still serving the others. Plus its rules
(rocmtui/core/serveauth.py) and the refusals of its command line."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import psutil
import pytest

from rocmtui.core.config.fleetfile import ConfigError, load_config
from rocmtui.core.serveauth import (
    Listen,
    ServeToken,
    SessionBook,
    bind_problem,
    hash_password,
    origin_allowed,
    parse_listen,
    password_matches,
)
from tests.support.jobs import engineless_fleet, wait_for
from tests.support.realparts import require
from tests.support.serve import ServeProcess


def test_listen_addresses_and_which_binds_need_tls() -> None:
    assert parse_listen("127.0.0.1:8765") == Listen("127.0.0.1", 8765)
    assert parse_listen("[::1]:9000") == Listen("::1", 9000)
    for bad in ("8765", "host:", ":80", "h:99999", "h:x"):
        with pytest.raises(ValueError, match="expected HOST:PORT"):
            parse_listen(bad)
    assert parse_listen("localhost:1").loopback and parse_listen("127.0.0.9:1").loopback
    assert not parse_listen("0.0.0.0:1").loopback and not parse_listen("snoc-strix:1").loopback
    assert bind_problem(parse_listen("127.0.0.1:8765"), tls=False, insecure=False) is None
    outside = parse_listen("0.0.0.0:8765")
    assert "not a loopback address" in str(bind_problem(outside, tls=False, insecure=False))
    assert bind_problem(outside, tls=True, insecure=False) is None
    assert bind_problem(outside, tls=False, insecure=True) is None


def test_origin_must_be_this_server_as_the_browser_reached_it() -> None:
    assert origin_allowed("http://localhost:8765", "localhost:8765", "http")
    assert not origin_allowed("http://evil.example", "localhost:8765", "http")
    assert not origin_allowed("http://localhost:8765", "localhost:8765", "https")
    assert not origin_allowed(None, "localhost:8765", "http")
    assert not origin_allowed("null", "localhost:8765", "http")


def test_the_token_is_new_each_run_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    first = ServeToken.create(tmp_path / "state")
    mode = stat.S_IMODE(first.path.stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert first.path.read_text().strip() == first.value and len(first.value) >= 40
    second = ServeToken.create(tmp_path / "state")
    assert second.value != first.value and second.path == first.path
    assert second.matches(second.value + "\n") and not second.matches(first.value)
    first.remove()  # not its token any more: left alone
    assert second.path.exists()
    second.remove()
    assert not second.path.exists()


def test_sessions_are_this_runs_and_expire() -> None:
    book = SessionBook(lifetime=10)
    cookie = book.open(now=100)
    assert book.valid(cookie, now=105) and not book.valid(cookie, now=111)
    assert not book.valid("forged", now=105) and not book.valid(None)
    book.close(cookie)
    assert not book.valid(cookie, now=105)


def serve_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    config = engineless_fleet(tmp_path)
    return subprocess.run(
        [sys.executable, "-m", "rocmtui", "--config", str(config), "serve", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_bind_outside_loopback_without_tls_is_refused(tmp_path: Path) -> None:
    out = serve_cli(tmp_path, "--listen", "0.0.0.0:8765")
    assert out.returncode == 2, out.stderr
    assert "not a loopback address" in out.stderr and "--insecure" in out.stderr
    missing = tmp_path / "no-such-cert.pem"
    out = serve_cli(tmp_path, "--listen", "0.0.0.0:8765", "--tls-cert", str(missing),
                    "--tls-key", str(missing))  # fmt: skip
    assert out.returncode == 2 and str(missing) in out.stderr, out.stderr
    out = serve_cli(tmp_path, "--tls-cert", str(missing))
    assert out.returncode == 2 and "go together" in out.stderr
    out = serve_cli(tmp_path, "--listen", "nowhere")
    assert out.returncode == 2 and "expected HOST:PORT" in out.stderr


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServeProcess]:
    args = getattr(request, "param", ())
    serving = ServeProcess(engineless_fleet(tmp_path), "--max-sessions", "8", *args)
    try:
        yield serving
    finally:
        serving.stop()


async def open_socket(
    http: aiohttp.ClientSession, server: ServeProcess, origin: str | None = None
) -> aiohttp.ClientWebSocketResponse | int:
    """A websocket as the page opens it; the HTTP status when refused."""
    url = server.url.replace("http", "ws", 1) + "ws?width=100&height=30"
    headers = {"Origin": origin or server.url.rstrip("/")}
    try:
        return await http.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(30))
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status


async def first_frame(ws: aiohttp.ClientWebSocketResponse) -> bytes:
    """The console's first screen bytes (it started and drew)."""
    async for message in ws:
        if message.type == aiohttp.WSMsgType.BINARY:
            return bytes(message.data)
    raise AssertionError("the socket closed before the console drew")


async def test_a_forged_origin_is_refused_and_the_server_serves_on(server: ServeProcess) -> None:
    async with aiohttp.ClientSession() as http:
        for origin in ("http://evil.example", "null", f"http://{server.host}.evil.example"):
            assert await open_socket(http, server, origin) == 403
        assert server.consoles() == []
        ws = await open_socket(http, server)
        assert not isinstance(ws, int)
        await first_frame(ws)
        assert len(server.consoles()) == 1
        await ws.close()
    wait_for("the console to end", lambda: not server.consoles(), 30)
    assert server.server_log().count("websocket refused (403)") == 3


async def test_twenty_at_once_against_eight_then_all_cleaned_up(server: ServeProcess) -> None:
    # twenty clients (loopback addresses of their own): no client's start rate is the limit
    clients = [
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(f"127.0.0.{n}", 0)))
        for n in range(10, 30)
    ]
    try:
        await _twenty_at_once(server, clients)
    finally:
        await asyncio.gather(*(http.close() for http in clients))


async def _twenty_at_once(server: ServeProcess, clients: list[aiohttp.ClientSession]) -> None:
    async with aiohttp.ClientSession() as http:
        answers = await asyncio.gather(*(open_socket(c, server) for c in clients))
        opened = [a for a in answers if not isinstance(a, int)]
        refused = [a for a in answers if isinstance(a, int)]
        assert len(opened) == 8 and refused == [503] * 12, refused
        await asyncio.gather(*(first_frame(ws) for ws in opened))
        pids = server.consoles()
        assert len(pids) == 8
        await asyncio.gather(*(ws.close() for ws in opened[:4]))
        wait_for("four consoles to end", lambda: len(server.consoles()) == 4, 30)
        # the freed places serve others; the four still open were never disturbed
        again = await open_socket(http, server)
        assert not isinstance(again, int)
        await first_frame(again)
        assert all(not ws.closed for ws in opened[4:])
        await asyncio.gather(again.close(), *(ws.close() for ws in opened[4:]))
    wait_for("every console to end", lambda: not server.consoles(), 30)
    assert not [pid for pid in pids if psutil.pid_exists(pid)]


@pytest.mark.parametrize("server", [("--allow-actions",)], indirect=True)
async def test_with_actions_nothing_opens_without_the_token(server: ServeProcess) -> None:
    assert server.token is not None
    assert stat.S_IMODE(server.token_file.stat().st_mode) == 0o600
    assert server.token_file.read_text().strip() == server.token
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get(server.url, allow_redirects=False) as answer:
            assert answer.status == 303 and answer.headers["Location"] == "/login"
        assert await open_socket(http, server) == 401
        async with http.post(f"{server.url}login", data={"token": "guess"}) as answer:
            assert answer.status == 401 and "not the token" in await answer.text()
        async with http.post(
            f"{server.url}login", data={"token": server.token},
            headers={"Origin": "http://evil.example"},
        ) as answer:  # fmt: skip
            assert answer.status == 403
        assert server.consoles() == [] and not jar.filter_cookies(server.url)
        async with http.post(f"{server.url}login", data={"token": server.token}) as answer:
            assert answer.status == 200  # redirected to the console's page
            assert "textual-terminal" in await answer.text()
        ws = await open_socket(http, server)
        assert not isinstance(ws, int)
        await first_frame(ws)
        (pid,) = server.consoles()
        assert "--read-only" not in psutil.Process(pid).cmdline()
        await ws.close()
    assert server.token not in server.server_log()  # never in a log line (no URL carries it)


@pytest.mark.parametrize("server", [("--idle-timeout", "6")], indirect=True)
async def test_an_idle_session_is_closed_and_its_console_ends(server: ServeProcess) -> None:
    async with aiohttp.ClientSession() as http:
        ws = await open_socket(http, server)
        assert not isinstance(ws, int)
        (pid,) = wait_for("the console", server.consoles, 10)
        assert "--read-only" in psutil.Process(pid).cmdline()
        async for _message in ws:  # drained until the server closes it
            pass
        assert ws.closed
    wait_for("the idle console to end", lambda: not psutil.pid_exists(pid), 30)
    assert "idle for 6 s: closed" in server.server_log()


def test_serve_users_hold_hashes_never_passwords(tmp_path: Path) -> None:
    stored = hash_password("correct horse battery")
    assert stored.startswith("scrypt$16384$8$1$") and "correct" not in stored
    assert password_matches("correct horse battery", stored)
    assert not password_matches("correct horse batterY", stored)
    assert not password_matches("x", "scrypt$99999999$8$1$AAAA$AAAA")  # hostile cost: refused
    config = engineless_fleet(tmp_path)
    text = config.read_text()
    config.write_text(f'[serve]\nusers = {{ alice = "{stored}" }}\n\n' + text)
    assert load_config(config).serve_users == {"alice": stored}
    config.write_text('[serve]\nusers = { bob = "hunter2" }\n\n' + text)
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert raised.value.line == 2 and "never a password" in str(raised.value)
    assert "serve.users.bob" in str(raised.value) and "hunter2" not in str(raised.value)
    config.write_text('[serve.users]\ncarol = "x"\nbob = "hunter2"\n\n' + text)
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert raised.value.line == 2 and "serve.users.carol" in str(raised.value)
    out = subprocess.run(
        [sys.executable, "-m", "rocmtui", "serve", "--hash-password"],
        input="a long enough password\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0 and password_matches("a long enough password", out.stdout.strip())


async def test_a_fleet_file_user_logs_in_with_a_password(tmp_path: Path) -> None:
    config = engineless_fleet(tmp_path)
    stored = hash_password("correct horse battery")
    config.write_text(f'[serve]\nusers = {{ alice = "{stored}" }}\n\n' + config.read_text())
    server = ServeProcess(config, "--allow-actions")
    try:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            async with http.get(f"{server.url}login") as answer:
                assert 'id="user"' in await answer.text()
            wrong = {"user": "alice", "token": "wrong horse battery"}
            async with http.post(f"{server.url}login", data=wrong) as answer:
                assert answer.status == 401
            nobody = {"user": "mallory", "token": "correct horse battery"}
            async with http.post(f"{server.url}login", data=nobody) as answer:
                assert answer.status == 401
            assert await open_socket(http, server) == 401
            right = {"user": "alice", "token": "correct horse battery"}
            async with http.post(f"{server.url}login", data=right) as answer:
                assert answer.status == 200 and "textual-terminal" in await answer.text()
            ws = await open_socket(http, server)
            assert not isinstance(ws, int)
            await first_frame(ws)
            await ws.close()
        assert "login from 127.0.0.1: user alice" in server.server_log()
    finally:
        server.stop()


async def test_a_spare_console_waits_for_the_next_browser(server: ServeProcess) -> None:
    (spare,) = wait_for("a spare console", server.spares, 30)
    assert server.consoles() == []  # not a session: no limit or idle timeout counts it
    async with aiohttp.ClientSession() as http:
        ws = await open_socket(http, server)
        assert not isinstance(ws, int)
        await first_frame(ws)
        assert server.consoles() == [spare]  # the browser got the console already started
        (behind,) = wait_for("the next spare", server.spares, 30)
        assert behind != spare
        await ws.close()
    wait_for("the session's console to end", lambda: not psutil.pid_exists(spare), 30)
    assert server.spares() == [behind]  # the spare waits on; stop() checks it ends too


async def test_a_killed_server_leaves_no_console_nor_monitor(tmp_path: Path) -> None:
    server = ServeProcess(engineless_fleet(tmp_path))
    try:
        async with aiohttp.ClientSession() as http:
            ws = await open_socket(http, server)
            assert not isinstance(ws, int)
            await first_frame(ws)
            wait_for("a spare beside the session", server.spares, 30)
            everything = [c.pid for c in psutil.Process(server.process.pid).children()]
            assert len(everything) == 3  # the session's console, the spare, the monitor
            server.process.kill()  # SIGKILL: no shutdown of its own runs
            server.process.wait()
            gone = lambda: not [p for p in everything if psutil.pid_exists(p) and _running(p)]  # noqa: E731
            wait_for("every child of the killed server to end", gone, 30)
    finally:
        server.stop()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 made by openssl (the test's own CA: itself)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


async def test_tls_serves_https_and_wss_with_a_secure_cookie(tmp_path: Path) -> None:
    import ssl

    require("openssl")
    cert, key = self_signed(tmp_path)
    args = ("--allow-actions", "--tls-cert", str(cert), "--tls-key", str(key))
    server = ServeProcess(engineless_fleet(tmp_path), *args)
    try:
        assert server.url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(cert))
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(
            cookie_jar=jar, connector=aiohttp.TCPConnector(ssl=trust)
        ) as http:
            assert server.token is not None
            async with http.post(
                f"{server.url}login", data={"token": server.token}, allow_redirects=False
            ) as answer:
                assert answer.status == 303
                cookie = answer.headers["Set-Cookie"]
                assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
            async with http.get(server.url) as answer:
                assert f'data-session-websocket-url="wss://{server.host}/ws"' in await answer.text()
            url = f"wss://{server.host}/ws?width=100&height=30"
            ws = await http.ws_connect(url, headers={"Origin": server.url.rstrip("/")})
            await first_frame(ws)
            await ws.close()
            http_origin = server.url.rstrip("/").replace("https", "http")
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url, headers={"Origin": http_origin})
            assert refused.value.status == 403
    finally:
        server.stop()
