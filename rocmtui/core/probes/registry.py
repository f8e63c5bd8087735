"""The registry probe (Zot or any OCI distribution registry), over httpx.

`GET /v2/` decides the state: 200 with `Docker-Distribution-Api-Version: registry/2.0` is `ok`
(`slow` past the slow threshold); 401 with `WWW-Authenticate` is `auth` (up, credentials
needed; Zot delays failed logins, so bad credentials look slow); 5xx, a missing identity
header or any other answer is `degraded`; no answer is `down`. When up, the catalog gives the
repository count and Zot's `/livez`, `/readyz` and `/metrics` are recorded in `extras` when
they exist (a monitor refreshes those every `DETAILS_EVERY` seconds, not every round).
Every request is bounded by the probe's one overall deadline.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from rocmtui.core.probes._common import remaining
from rocmtui.core.probes._http import Fetched, FetchError, HttpClients, fetch
from rocmtui.core.probes._service import SLOW_SECONDS, ServiceProbe
from rocmtui.core.snapshots import ServiceSnapshot
from rocmtui.core.states import ServiceState
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_latency

if TYPE_CHECKING:
    import httpx

IDENTITY_HEADER = "docker-distribution-api-version"
IDENTITY = "registry/2.0"
CATALOG_PAGE = 1000
DETAILS_EVERY = 30.0  # seconds a monitor reuses the catalog count and Zot extras


def _catalog_count(answer: Fetched) -> int | None:
    if answer.status != 200:
        return None
    try:
        data = json.loads(answer.body)
    except ValueError:
        return None
    repos = data.get("repositories") if isinstance(data, dict) else None
    return len(repos) if isinstance(repos, list) else None


def _extra(name: str, answer: Fetched | BaseException) -> tuple[str, str] | None:
    """One Zot extra: None when the endpoint does not exist (plain distribution)."""
    if isinstance(answer, BaseException):
        return None
    if answer.status == 404:
        return None
    if name == "metrics":
        return (name, "available" if answer.status == 200 else f"HTTP {answer.status}")
    word = "ok" if answer.status == 200 else f"HTTP {answer.status}"
    return (name, word)


async def _fetch_details(
    client: httpx.AsyncClient, base: str, deadline_at: float
) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    """The catalog and Zot's extras in whatever time is left. `/readyz` and `/metrics` are
    asked only when `/livez` exists, so a plain distribution registry costs two requests."""

    def get(path: str, cap: int) -> Awaitable[Fetched]:
        return fetch(client, "GET", base + path, remaining(deadline_at), max_body=cap)

    catalog, livez = await asyncio.gather(
        get(f"/v2/_catalog?n={CATALOG_PAGE}", 1 << 20),
        get("/livez", 1 << 16),
        return_exceptions=True,
    )
    answers: dict[str, Fetched | BaseException] = {"livez": livez}
    if isinstance(livez, Fetched) and livez.status != 404:  # Zot: ask the other two too
        readyz, metrics = await asyncio.gather(
            get("/readyz", 1 << 16), get("/metrics", 1 << 16), return_exceptions=True
        )
        answers |= {"readyz": readyz, "metrics": metrics}
    repos = _catalog_count(catalog) if isinstance(catalog, Fetched) else None
    extras = tuple(e for n, a in answers.items() if (e := _extra(n, a)))
    return repos, extras


async def _details(
    client: httpx.AsyncClient, base: str, deadline_at: float, clients: HttpClients, fresh: bool
) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    """`_fetch_details`, reused from `clients.memo` for `DETAILS_EVERY` seconds (a
    long-lived monitor asks /v2/ every refresh but the four detail URLs only every 30 s)."""
    key = f"registry-details:{base}"
    memo = clients.memo.get(key)
    if not fresh and memo is not None and time.monotonic() - memo[0] < DETAILS_EVERY:
        return memo[1]  # type: ignore[return-value]
    details = await _fetch_details(client, base, deadline_at)
    clients.memo[key] = (time.monotonic(), details)
    return details


async def probe_registry(
    url: str,
    *,
    deadline: float,
    previous: ServiceSnapshot | None = None,
    now: float | None = None,
    clients: HttpClients | None = None,
    slow_after: float = SLOW_SECONDS,
) -> ServiceSnapshot:
    """The registry's health within `deadline` seconds (never raises)."""
    async with ServiceProbe(
        "registry", url, deadline=deadline, previous=previous, now=now, clients=clients
    ) as probe:
        base = url.rstrip("/")
        client = probe.client(base)
        try:
            answer = await fetch(client, "GET", f"{base}/v2/", probe.left())
        except FetchError as exc:
            return probe.verdict(ServiceState.DOWN, str(exc))
        identity = answer.headers.get(IDENTITY_HEADER)
        probe.common = {
            "latency": answer.latency,
            "http_status": answer.status,
            "identity": one_line(identity, 60) if identity else None,
        }
        if answer.status == 401:
            if answer.headers.get("www-authenticate"):
                return probe.verdict(ServiceState.AUTH, "credentials required")
            return probe.verdict(ServiceState.DEGRADED, "401 without WWW-Authenticate")
        if answer.status >= 500:
            return probe.verdict(ServiceState.DEGRADED, f"server error: HTTP {answer.status}")
        if answer.status != 200:
            where = answer.headers.get("location")
            said = f"HTTP {answer.status}" + (f" to {where}" if where else "")
            return probe.verdict(ServiceState.DEGRADED, one_line(f"not a registry: {said}"))
        if (identity or "").strip() != IDENTITY:
            said = f"{IDENTITY_HEADER} is {identity or 'missing'}"
            return probe.verdict(ServiceState.DEGRADED, one_line(f"not a registry: {said}"))
        repos, extras = await _details(
            client, base, probe.deadline_at, probe.clients, fresh=probe.own
        )
        state, reason = ServiceState.OK, None
        if answer.latency > slow_after:
            state, reason = ServiceState.SLOW, f"answered in {fmt_latency(answer.latency)}"
        if any(word != "ok" for name, word in extras if name in ("livez", "readyz")):
            bad = ", ".join(f"{n} {w}" for n, w in extras if n != "metrics" and w != "ok")
            state, reason = ServiceState.DEGRADED, one_line(f"not ready: {bad}")
        return probe.verdict(state, reason, repositories=repos, extras=extras)
