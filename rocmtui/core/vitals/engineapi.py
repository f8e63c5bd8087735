"""The engine API source: `/info` (DockerRootDir, NCPU, MemTotal) and `/system/df` (the build
cache), for every node, and alone for a node with nothing better (TLS, a context).

These change slowly and `/system/df` makes the engine walk its stores, so they are fetched at
most every `ENGINE_TTL` seconds per node, in the engine prober's abandonable threads (over the
node's kept ssh connection on an ssh node), and a fetch that outlives a round goes on for the
next one. `/system/df` is asked at the API version rocmtui already negotiated with that engine
(the node snapshot's `api_used`), with `type=build-cache` where the engine knows it (1.42+).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from msgspec import Struct

from rocmtui.core.probes.endpoints import Endpoint
from rocmtui.core.probes.engine_fail import EngineError
from rocmtui.core.probes.engine_prober import EngineProber
from rocmtui.core.text.sanitize import one_line, sanitize_line
from rocmtui.core.vitals.reading import Reading

ENGINE_TTL = 60.0  # seconds an engine's /info and /system/df answer is reused
RETRY_TTL = 10.0  # ... and a failure, before asking again


class EngineInfo(Struct, frozen=True):
    """What an engine said about its host and its build cache."""

    fetched_at: float  # monotonic
    data_root: str | None = None
    cpu_count: int | None = None
    mem_total_bytes: int | None = None
    build_cache_bytes: int | None = None
    error: str | None = None  # why the last fetch failed (the previous figures are kept)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def _version_at_least(version: str | None, wanted: tuple[int, int]) -> bool:
    try:
        major, minor = (int(x) for x in (version or "").split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= wanted


def ask_engine(client: Any, timeout: float, api_used: str | None) -> EngineInfo:
    """Blocking: /info then /system/df (an unreadable or odd answer leaves its figures None)."""
    api = client.api
    reply = api.get(f"{api.base_url}/info", timeout=timeout)
    reply.raise_for_status()
    info = reply.json()
    info = info if isinstance(info, dict) else {}
    root = info.get("DockerRootDir")
    prefix = f"/v{api_used}" if api_used else ""
    params = {"type": "build-cache"} if _version_at_least(api_used, (1, 42)) else None
    cache: int | None = None
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        df = api.get(f"{api.base_url}{prefix}/system/df", params=params, timeout=timeout)
        if df.status_code == 200:
            entries = df.json().get("BuildCache") or []
            cache = sum(_int(e.get("Size")) or 0 for e in entries if isinstance(e, dict))
    return EngineInfo(
        fetched_at=time.monotonic(),
        data_root=sanitize_line(root, 512) if isinstance(root, str) and root else None,
        cpu_count=_int(info.get("NCPU")),
        mem_total_bytes=_int(info.get("MemTotal")),
        build_cache_bytes=cache,
    )


class EngineSource:
    """Per-node cache of `ask_engine`, refreshed in the background (see the module doc)."""

    def __init__(self, engines: EngineProber) -> None:
        self.engines = engines
        self._info: dict[str, EngineInfo] = {}
        self._pending: dict[str, asyncio.Future[None]] = {}

    def cached(self, node: str) -> EngineInfo | None:
        """The last answer for `node` (None before the first)."""
        return self._info.get(node)

    async def info(
        self, node: str, endpoint: Endpoint, api_used: str | None, wait: float
    ) -> EngineInfo | None:
        """The node's engine facts: the cached ones, a fetch started when stale, waited for
        up to `wait` seconds when nothing is cached yet."""
        cached = self._info.get(node)
        now = time.monotonic()
        ttl = RETRY_TTL if cached is not None and cached.error else ENGINE_TTL
        pending = self._pending.get(node)
        loop = asyncio.get_running_loop()
        idle = pending is None or pending.done() or pending.get_loop() is not loop
        if (cached is None or now - cached.fetched_at >= ttl) and idle:
            pending = asyncio.ensure_future(self._fetch(node, endpoint, api_used))
            self._pending[node] = pending
        if wait > 0 and cached is None and pending is not None and not pending.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pending), wait)
        return self._info.get(node)

    async def _fetch(self, node: str, endpoint: Endpoint, api_used: str | None) -> None:
        timeout = 10.0
        try:
            got: EngineInfo = await self.engines.call(
                f"vitals-engine:{node}",
                endpoint,
                timeout,
                lambda client, _dialer: ask_engine(client, timeout, api_used),
            )
        except EngineError as exc:
            old = self._info.get(node) or EngineInfo(fetched_at=0.0)
            self._info[node] = EngineInfo(
                fetched_at=time.monotonic(),
                data_root=old.data_root,
                cpu_count=old.cpu_count,
                mem_total_bytes=old.mem_total_bytes,
                build_cache_bytes=old.build_cache_bytes,
                error=one_line(f"engine API: {exc}"),
            )
            return
        except Exception as exc:  # never let a background fetch die unheard
            self._info[node] = EngineInfo(
                fetched_at=time.monotonic(), error=one_line(f"engine API: {type(exc).__name__}")
            )
            return
        self._info[node] = got


def engine_reading(info: EngineInfo | None, why: str) -> Reading:
    """A reading of the engine's figures alone, `why` naming what this node cannot give."""
    reading = Reading()
    if info is not None:
        reading.data_root = info.data_root
        reading.cpu_count = info.cpu_count
        reading.mem_total_bytes = info.mem_total_bytes
        reading.build_cache_bytes = info.build_cache_bytes
    reading.missing.append(why)
    return reading
