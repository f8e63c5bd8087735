"""The WebDAV probe (nginx with the dav-ext module, holding sccache objects), over httpx.

`PROPFIND` with `Depth: 0` on the configured URL: 207 Multi-Status is `ok` (`slow` past the
slow threshold), and the `DAV` header, when sent, is recorded as the identity; 405 means the
server is up but cannot list (nginx without dav-ext), which is `degraded` and says
"misconfigured", not down; 401 is `auth`; 5xx and anything else is `degraded`; no answer is
`down`. Bounded by one overall deadline like every probe.
"""

from __future__ import annotations

from rocmtui.core.probes._http import FetchError, HttpClients, fetch
from rocmtui.core.probes._service import SLOW_SECONDS, ServiceProbe
from rocmtui.core.snapshots import ServiceSnapshot
from rocmtui.core.states import ServiceState
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_latency

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
    async with ServiceProbe(
        "webdav", url, deadline=deadline, previous=previous, now=now, clients=clients
    ) as probe:
        try:
            answer = await fetch(
                probe.client(url),
                "PROPFIND",
                url,
                probe.left(),
                headers={"Depth": "0", "Content-Type": "application/xml"},
                max_body=64 * 1024,
            )
        except FetchError as exc:
            return probe.verdict(ServiceState.DOWN, str(exc))
        dav = answer.headers.get("dav")
        probe.common = {
            "latency": answer.latency,
            "http_status": answer.status,
            "identity": one_line(f"DAV: {dav}", 60) if dav else None,
        }
        status = answer.status
        if status == 207:
            if not dav and b"multistatus" not in answer.body.lower():
                return probe.verdict(ServiceState.DEGRADED, "207 without a multistatus body")
            if not dav:
                probe.common["identity"] = "207 Multi-Status"
            if answer.latency > slow_after:
                return probe.verdict(
                    ServiceState.SLOW, f"answered in {fmt_latency(answer.latency)}"
                )
            return probe.verdict(ServiceState.OK)
        if status == 405:
            reason, state = MISCONFIGURED, ServiceState.DEGRADED
        elif status == 401:
            reason, state = "credentials required", ServiceState.AUTH
        elif status >= 500:
            reason, state = f"server error: HTTP {status}", ServiceState.DEGRADED
        else:
            where = answer.headers.get("location")
            reason = one_line(f"not WebDAV: HTTP {status}" + (f" to {where}" if where else ""))
            state = ServiceState.DEGRADED
        return probe.verdict(state, reason)
