"""The WebDAV probe (nginx with the dav-ext module, holding sccache objects), over httpx.

`PROPFIND` with `Depth: 0` on the configured URL: 207 Multi-Status is `ok` (`slow` past the
slow threshold), and the `DAV` header, when sent, is recorded as the identity; 405 means the
server is up but cannot list (nginx without dav-ext), which is `degraded` and says
"misconfigured", not down; 401 is `auth`; 5xx and anything else is `degraded`; no answer is
`down`. Bounded by one overall deadline like every probe.
"""

from __future__ import annotations

import time

from rocmtui.core.probes._common import one_line, remaining
from rocmtui.core.probes._http import FetchError, HttpClients, fetch
from rocmtui.core.probes.registry import SLOW_SECONDS, service_snapshot
from rocmtui.core.snapshots import ServiceSnapshot
from rocmtui.core.states import ServiceState

MISCONFIGURED = "misconfigured: PROPFIND not allowed (dav-ext module missing?)"
_PROPFIND_BODY = (
    b'<?xml version="1.0" encoding="utf-8"?>'
    b'<propfind xmlns="DAV:"><prop><resourcetype/></prop></propfind>'
)


async def probe_webdav(
    url: str,
    *,
    deadline: float,
    previous: ServiceSnapshot | None = None,
    now: float | None = None,
    clients: HttpClients | None = None,
    slow_after: float = SLOW_SECONDS,
) -> ServiceSnapshot:
    """The WebDAV server's health within `deadline` seconds (never raises)."""
    now = time.time() if now is None else now
    deadline_at = time.monotonic() + deadline
    own = clients is None
    clients = clients or HttpClients()
    try:
        client = clients.get(url, deadline)
        try:
            answer = await fetch(
                client,
                "PROPFIND",
                url,
                remaining(deadline_at),
                headers={"Depth": "0", "Content-Type": "application/xml"},
                max_body=64 * 1024,
            )
        except FetchError as exc:
            return service_snapshot(
                "webdav", url, ServiceState.DOWN, now, previous, reason=str(exc)
            )
        dav = answer.headers.get("dav")
        common: dict[str, object] = {
            "latency": answer.latency,
            "http_status": answer.status,
            "identity": one_line(f"DAV: {dav}", 60) if dav else None,
        }
        status = answer.status
        if status == 207:
            if not dav and b"multistatus" not in answer.body.lower():
                return service_snapshot(
                    "webdav",
                    url,
                    ServiceState.DEGRADED,
                    now,
                    previous,
                    reason="207 without a multistatus body",
                    **common,
                )
            if not dav:
                common["identity"] = "207 Multi-Status"
            if answer.latency > slow_after:
                return service_snapshot(
                    "webdav",
                    url,
                    ServiceState.SLOW,
                    now,
                    previous,
                    reason=f"answered in {answer.latency:.1f}s",
                    **common,
                )
            return service_snapshot("webdav", url, ServiceState.OK, now, previous, **common)
        if status == 405:
            reason = MISCONFIGURED
            state = ServiceState.DEGRADED
        elif status == 401:
            reason, state = "credentials required", ServiceState.AUTH
        elif status >= 500:
            reason, state = f"server error: HTTP {status}", ServiceState.DEGRADED
        else:
            where = answer.headers.get("location")
            reason = one_line(f"not WebDAV: HTTP {status}" + (f" to {where}" if where else ""))
            state = ServiceState.DEGRADED
        return service_snapshot("webdav", url, state, now, previous, reason=reason, **common)
    finally:
        if own:
            await clients.aclose()
