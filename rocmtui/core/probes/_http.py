"""HTTP plumbing for the service probes: a client per origin, and one bounded fetch.

httpx timeouts are per phase, with no total deadline (a server dripping one byte every 0.5 s
held a `timeout=2` request for 20 s), so every fetch here runs under `asyncio.wait_for` with
the probe's remaining time, and the body it reads is capped. One client per origin: a single
shared pool polling many hosts stalled the event loop. Redirects are never followed, proxies
and .netrc from the environment are never used, and plain-http clients skip loading a CA
bundle (~30 ms of CPU per client).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
import urllib.parse

import httpx
from msgspec import Struct

from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

MAX_BODY = 256 * 1024
# httpcore trace events that mark a request leaving (a new connection, or a kept one)
SENDING = (
    "connect_tcp.started",
    "connect_unix_socket.started",
    "send_request_headers.started",
)


class FetchError(Exception):
    """No usable HTTP answer; `str()` is the one-line reason."""


class Fetched(Struct, frozen=True):
    """A complete (or capped) HTTP answer."""

    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes
    latency: float  # seconds from sending to the end of the (capped) body


def origin(url: str) -> str:
    """scheme://host:port of `url`."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _no_sniffio() -> None:
    """Make a missing `sniffio` fail fast.

    httpcore runs `import sniffio` on every request; when it is not installed each failed
    import searches all of sys.path again (~40 stat calls), a third of the probes' CPU per
    refresh. A None entry in sys.modules is Python's own "known missing" marker.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


class HttpClients:
    """One `httpx.AsyncClient` per origin, reused across rounds until `aclose()`.

    `memo` keeps per-service facts that are refreshed on a slower cadence than the state
    (the registry's catalog and Zot extras).
    """

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}
        self.memo: dict[str, tuple[float, object]] = {}

    def get(self, url: str, timeout: float) -> httpx.AsyncClient:
        """The client for `url`'s origin (made on first use)."""
        key = origin(url)
        client = self._clients.get(key)
        if client is None or client.is_closed:
            _no_sniffio()
            client = httpx.AsyncClient(
                verify=key.startswith("https://"),
                follow_redirects=False,
                trust_env=False,
                timeout=httpx.Timeout(timeout),
                limits=httpx.Limits(max_connections=4, max_keepalive_connections=2),
                headers={"User-Agent": "rocmtui-probe"},
            )
            self._clients[key] = client
        return client

    async def aclose(self) -> None:
        """Close every client."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def describe_http_error(exc: BaseException, timeout: float) -> str:
    """A short reason for an httpx exception."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return f"no answer in {fmt_seconds(timeout)}"
    cur: BaseException | None = exc
    while cur is not None:
        if isinstance(cur, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cur, OSError) and cur.strerror:
            return one_line(cur.strerror.lower())
        cur = cur.__cause__ or cur.__context__
    if isinstance(exc, httpx.RemoteProtocolError):
        return one_line(f"bad HTTP answer: {exc}")
    if isinstance(exc, httpx.ConnectError):
        return one_line(f"cannot connect: {exc}" if str(exc) else "cannot connect")
    return one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


async def fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    timeout: float,
    headers: dict[str, str] | None = None,
    max_body: int = MAX_BODY,
) -> Fetched:
    """One request, headers and (capped) body, finished within `timeout` seconds in total."""
    started: list[float] = []

    async def trace(name: str, info: object) -> None:
        # the clock starts when the request leaves: connecting, or sending on a kept
        # connection. Before that, a client's first request imports httpcore's backends
        # (anyio), 60-90 ms that read as the first round's registry latency.
        if not started and name.endswith(SENDING):
            started.append(time.perf_counter())

    async def go() -> Fetched:
        asked = time.perf_counter()
        extensions = {"trace": trace}
        async with client.stream(method, url, headers=headers, extensions=extensions) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) >= max_body:
                    break
            return Fetched(
                status=response.status_code,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=bytes(body[:max_body]),
                latency=time.perf_counter() - (started[0] if started else asked),
            )

    if timeout <= 0:
        raise FetchError("no time left")
    try:
        return await asyncio.wait_for(go(), timeout)
    except TimeoutError:
        raise FetchError(f"no complete answer in {fmt_seconds(timeout)}") from None
    except Exception as exc:
        raise FetchError(describe_http_error(exc, timeout)) from None
