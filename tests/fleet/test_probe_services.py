"""Registry and WebDAV probes against real servers: docker-registry, nginx with and without
dav-ext, and hostile listeners. Every bound is the deadline plus a generous margin."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable

import httpx
import pytest

from devfleet import DripServer, HungTcpListener, ServiceHandle
from rocmtui.core.probes import probe_registry, probe_webdav
from rocmtui.core.probes.webdav import MISCONFIGURED
from rocmtui.core.states import ServiceState

DEADLINE = 2.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion


async def timed(coro):  # type: ignore[no-untyped-def]
    """(result, seconds) of awaiting `coro`."""
    started = time.monotonic()
    result = await coro
    return result, time.monotonic() - started


def push_tiny_image(registry_url: str, repo: str) -> None:
    """Upload one blob and a manifest through the registry's own HTTP API (no engine needed)."""
    config = json.dumps(
        {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
    ).encode()
    digest = "sha256:" + hashlib.sha256(config).hexdigest()
    with httpx.Client(base_url=registry_url, timeout=10) as client:
        start = client.post(f"/v2/{repo}/blobs/uploads/")
        assert start.status_code == 202, start.text
        location = start.headers["location"]
        sep = "&" if "?" in location else "?"
        put = client.put(
            f"{location}{sep}digest={digest}",
            content=config,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert put.status_code == 201, put.text
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": len(config),
                "digest": digest,
            },
            "layers": [],
        }
        done = client.put(
            f"/v2/{repo}/manifests/v1",
            content=json.dumps(manifest),
            headers={"Content-Type": manifest["mediaType"]},
        )
        assert done.status_code == 201, done.text


@pytest.mark.fleet
async def test_registry_ok_counts_repositories(
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    registry = registry_factory()
    push_tiny_image(registry.url, "probe/one")
    push_tiny_image(registry.url, "probe/two")
    snap = await probe_registry(registry.url, deadline=DEADLINE)
    assert snap.state is ServiceState.OK, snap
    assert snap.kind == "registry" and snap.http_status == 200
    assert snap.identity == "registry/2.0"
    assert snap.repositories == 2
    assert snap.latency is not None and snap.last_ok_at == snap.probed_at
    # docker-registry has no Zot extras: nothing is invented for the missing endpoints
    assert dict(snap.extras).get("livez") is None


@pytest.mark.fleet
async def test_registry_stopped_is_down_and_keeps_last_ok(
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    registry = registry_factory()
    first = await probe_registry(registry.url, deadline=DEADLINE)
    assert first.state is ServiceState.OK
    registry.stop()
    snap, took = await timed(probe_registry(registry.url, deadline=DEADLINE, previous=first))
    assert snap.state is ServiceState.DOWN
    assert snap.reason == "connection refused"
    assert snap.last_ok_at == first.probed_at
    assert took < DEADLINE + MARGIN


@pytest.mark.fleet
async def test_registry_with_htpasswd_is_auth(
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    registry = registry_factory(htpasswd=True)
    snap = await probe_registry(registry.url, deadline=DEADLINE)
    assert snap.state is ServiceState.AUTH, snap
    assert snap.http_status == 401
    assert snap.reason == "credentials required"
    assert snap.repositories is None  # the catalog is not readable without credentials


@pytest.mark.fleet
async def test_webdav_is_not_a_registry(webdav_factory: Callable[..., ServiceHandle]) -> None:
    webdav = webdav_factory()
    snap = await probe_registry(webdav.url, deadline=DEADLINE)
    assert snap.state is ServiceState.DEGRADED
    assert snap.reason is not None and snap.reason.startswith("not a registry")


@pytest.mark.fleet
async def test_webdav_ok(webdav_factory: Callable[..., ServiceHandle]) -> None:
    webdav = webdav_factory()
    snap = await probe_webdav(webdav.url, deadline=DEADLINE)
    assert snap.state is ServiceState.OK, snap
    assert snap.http_status == 207
    assert snap.identity is not None
    assert snap.latency is not None


@pytest.mark.fleet
async def test_webdav_without_dav_ext_is_misconfigured(
    webdav_factory: Callable[..., ServiceHandle],
) -> None:
    webdav = webdav_factory(dav_ext=False)
    snap = await probe_webdav(webdav.url, deadline=DEADLINE)
    assert snap.state is ServiceState.DEGRADED
    assert snap.http_status == 405
    assert snap.reason == MISCONFIGURED
    assert "misconfigured" in snap.reason


@pytest.mark.fleet
async def test_webdav_stopped_is_down(webdav_factory: Callable[..., ServiceHandle]) -> None:
    webdav = webdav_factory()
    webdav.stop()
    snap = await probe_webdav(webdav.url, deadline=DEADLINE)
    assert snap.state is ServiceState.DOWN


@pytest.mark.parametrize("mode", ["headers", "body"])
async def test_drip_server_is_bounded(mode: str) -> None:
    with DripServer(mode=mode) as drip:
        (registry, webdav), took = await timed(_both(drip.url))
    for snap in (registry, webdav):
        assert snap.state is ServiceState.DOWN, snap
        assert snap.reason is not None and "no complete answer" in snap.reason
    # both probes ran concurrently, each under its own deadline
    assert took < DEADLINE + MARGIN


async def _both(url: str):  # type: ignore[no-untyped-def]
    import asyncio

    return await asyncio.gather(
        probe_registry(url, deadline=DEADLINE), probe_webdav(url, deadline=DEADLINE)
    )


async def test_hung_tcp_listener_is_bounded(hung_tcp_listener: HungTcpListener) -> None:
    (registry, webdav), took = await timed(_both(hung_tcp_listener.url + "/"))
    assert registry.state is ServiceState.DOWN and webdav.state is ServiceState.DOWN
    assert took < DEADLINE + MARGIN
    assert hung_tcp_listener.accepted >= 1  # the probe really connected, then waited


@pytest.mark.parametrize(
    ("location", "state"),
    [
        # C1 CSI and a UTF-8 right-to-left override: h11 accepts the bytes, we must clean them
        (b"/\x9b2J\xe2\x80\xae" + b"x" * 400, ServiceState.DEGRADED),
        # a raw ESC: h11 refuses the header; the error quoting it must be clean as well
        (b"/\x1b]52;c;aGk=\x07\x1b[2J", ServiceState.DOWN),
    ],
)
async def test_hostile_reply_becomes_one_clean_line(location: bytes, state: ServiceState) -> None:
    """A redirect whose Location carries terminal controls: not followed, and the reason that
    quotes it holds no control character at all."""
    import asyncio

    reply = b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        snap = await probe_registry(f"http://127.0.0.1:{port}", deadline=DEADLINE)
    assert snap.state is state, snap
    assert snap.reason is not None and len(snap.reason) <= 160
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in snap.reason)


@pytest.mark.fleet
async def test_monitor_clients_reuse_registry_details(
    registry_factory: Callable[..., ServiceHandle],
) -> None:
    """A long-lived client set asks the catalog every DETAILS_EVERY seconds, not every round;
    a one-shot probe always asks."""
    from rocmtui.core.probes import HttpClients

    registry = registry_factory()
    push_tiny_image(registry.url, "probe/one")
    clients = HttpClients()
    try:
        first = await probe_registry(registry.url, deadline=DEADLINE, clients=clients)
        push_tiny_image(registry.url, "probe/two")
        again = await probe_registry(registry.url, deadline=DEADLINE, clients=clients)
    finally:
        await clients.aclose()
    assert first.repositories == 1 and again.repositories == 1  # reused, not asked again
    assert again.probed_at >= first.probed_at and again.state is ServiceState.OK
    fresh = await probe_registry(registry.url, deadline=DEADLINE)
    assert fresh.repositories == 2


class CannedServer:
    """A real loopback HTTP server that answers every request with one fixed reply, after an
    optional delay: the registry answers the real registry cannot be made to give."""

    def __init__(self, reply: bytes | dict[str, bytes], delay: float = 0.0) -> None:
        self.reply, self.delay = reply, delay
        self.paths: list[str] = []

    def answer(self, request: bytes) -> bytes:
        path = request.split(b" ", 2)[1].decode()
        self.paths.append(path)
        if isinstance(self.reply, bytes):
            return self.reply
        return self.reply.get(path.split("?")[0], reply("404 Not Found"))

    async def __aenter__(self) -> str:
        import asyncio

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while request := await reader.readuntil(b"\r\n\r\n"):
                    await asyncio.sleep(self.delay)
                    writer.write(self.answer(request))
                    await writer.drain()
            writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


def reply(status: str, *headers: str) -> bytes:
    """An HTTP/1.1 reply with no body."""
    lines = [f"HTTP/1.1 {status}", *headers, "Content-Length: 0", "", ""]
    return "\r\n".join(lines).encode()


@pytest.mark.parametrize(
    ("answer", "delay", "state", "reason"),
    [
        (
            reply("200 OK", "Docker-Distribution-Api-Version: registry/2.0"),
            1.2,
            ServiceState.SLOW,
            "answered in 1.",
        ),
        (reply("503 Service Unavailable"), 0.0, ServiceState.DEGRADED, "server error: HTTP 503"),
        (reply("200 OK"), 0.0, ServiceState.DEGRADED, "not a registry"),
        (reply("401 Unauthorized"), 0.0, ServiceState.DEGRADED, "401 without WWW-Authenticate"),
        (
            reply("401 Unauthorized", 'WWW-Authenticate: Basic realm="zot"'),
            0.0,
            ServiceState.AUTH,
            "credentials required",
        ),
    ],
)
async def test_registry_answers(
    answer: bytes, delay: float, state: ServiceState, reason: str
) -> None:
    async with CannedServer(answer, delay) as url:
        snap = await probe_registry(url, deadline=DEADLINE)
    assert snap.state is state, snap
    assert snap.reason is not None and snap.reason.startswith(reason)


async def test_webdav_slow_and_server_error() -> None:
    dav = reply("207 Multi-Status", "DAV: 1,2")
    async with CannedServer(dav, 1.2) as url:
        snap = await probe_webdav(url + "/", deadline=DEADLINE)
    assert snap.state is ServiceState.SLOW and snap.identity == "DAV: 1,2"
    async with CannedServer(reply("502 Bad Gateway")) as url:
        snap = await probe_webdav(url + "/", deadline=DEADLINE)
    assert snap.state is ServiceState.DEGRADED and snap.reason == "server error: HTTP 502"


ZOT_V2 = reply("200 OK", "Docker-Distribution-Api-Version: registry/2.0")


@pytest.mark.parametrize(
    ("readyz", "state", "extras"),
    [
        (reply("200 OK"), ServiceState.OK, {"livez": "ok", "readyz": "ok", "metrics": "available"}),
        (
            reply("503 Service Unavailable"),
            ServiceState.DEGRADED,
            {"livez": "ok", "readyz": "HTTP 503", "metrics": "available"},
        ),
    ],
)
async def test_zot_extras(readyz: bytes, state: ServiceState, extras: dict[str, str]) -> None:
    """Zot's /livez, /readyz and /metrics (a real Zot cannot run here: a loopback stand-in
    answers them), asked only because /livez exists."""
    server = CannedServer(
        {
            "/v2/": ZOT_V2,
            "/v2/_catalog": ZOT_V2,
            "/livez": reply("200 OK"),
            "/readyz": readyz,
            "/metrics": reply("200 OK"),
        }
    )
    async with server as url:
        snap = await probe_registry(url, deadline=DEADLINE)
    assert snap.state is state, snap
    assert dict(snap.extras) == extras
    if state is ServiceState.DEGRADED:
        assert snap.reason == "not ready: readyz HTTP 503"


async def test_a_plain_registry_is_asked_v2_livez_and_catalog_only() -> None:
    """No /livez (not Zot): /readyz and /metrics are never asked."""
    server = CannedServer({"/v2/": ZOT_V2})
    async with server as url:
        snap = await probe_registry(url, deadline=DEADLINE)
    assert snap.state is ServiceState.OK and snap.extras == ()
    assert sorted(p.split("?")[0] for p in server.paths) == ["/livez", "/v2/", "/v2/_catalog"]


async def test_latency_counts_from_the_request_leaving() -> None:
    """A service's latency is the time from the request leaving (connecting, or sending on a
    kept connection) to the end of its answer, not the client's own work before that: a
    client's first request imports httpcore's backends, and the first round's registry
    latency read 70-110 ms against 10-20 ms after. Here the work before sending is a request
    hook that sleeps 0.4 s; the loopback server answers at once, then after 0.3 s."""
    import asyncio

    from rocmtui.core.probes._http import fetch

    async def busy_before_sending(request: httpx.Request) -> None:
        await asyncio.sleep(0.4)

    ok, hooks = reply("200 OK"), {"request": [busy_before_sending]}
    for delay, (low, high) in ((0.0, (0.0, 0.4)), (0.3, (0.3, 0.3 + DEADLINE))):
        async with CannedServer(ok, delay) as url, httpx.AsyncClient(event_hooks=hooks) as c:
            first = await fetch(c, "GET", url + "/v2/", DEADLINE)  # a new connection
            kept = await fetch(c, "GET", url + "/v2/", DEADLINE)  # the kept one
        for got in (first, kept):
            assert got.status == 200 and low <= got.latency < high, (delay, got.latency)
