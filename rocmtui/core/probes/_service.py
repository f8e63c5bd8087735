"""What the HTTP service probes (registry, WebDAV) share, so each states only its verdicts.

`ServiceProbe` is one probe of one service: it fixes the probe's one overall deadline when made,
opens its own `HttpClients` when the caller passed none (closed again on leaving the `async
with`), and (`verdict`) turns a state and reason into a `ServiceSnapshot` carrying the answer's
common fields and `last_ok_at` from the previous snapshot.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rocmtui.core.probes._common import remaining
from rocmtui.core.probes._http import HttpClients
from rocmtui.core.snapshots import ServiceSnapshot
from rocmtui.core.states import ServiceState

if TYPE_CHECKING:
    import httpx

SLOW_SECONDS = 1.0
GOOD_STATES = frozenset({ServiceState.OK, ServiceState.SLOW, ServiceState.AUTH})


class ServiceProbe:
    """One probe of one service, used as `async with ServiceProbe(...) as probe:`.

    `common` holds the fields every verdict after the first answer carries (latency, HTTP
    status, identity); `verdict()` adds them to each snapshot.
    """

    def __init__(
        self,
        kind: str,
        url: str,
        *,
        deadline: float,
        previous: ServiceSnapshot | None,
        now: float | None,
        clients: HttpClients | None,
    ) -> None:
        self.kind = kind
        self.url = url
        self.now = time.time() if now is None else now
        self.deadline = deadline
        self.deadline_at = time.monotonic() + deadline  # one deadline for every request
        self.previous = previous
        self.own = clients is None  # a one-shot probe: its clients die with it
        self.clients = clients or HttpClients()
        self.common: dict[str, object] = {}

    async def __aenter__(self) -> ServiceProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        # returns None, never swallows: a probe's own errors still reach its caller
        if self.own:
            await self.clients.aclose()

    def client(self, url: str) -> httpx.AsyncClient:
        """The HTTP client for `url`'s origin."""
        return self.clients.get(url, self.deadline)

    def left(self) -> float:
        """Seconds left of the probe's deadline."""
        return remaining(self.deadline_at)

    def verdict(
        self, state: ServiceState, reason: str | None = None, **fields: object
    ) -> ServiceSnapshot:
        """The snapshot saying `state` for `reason`, with `common` and `fields` (which win);
        `last_ok_at` is now when the state is a good one, else carried over from `previous`."""
        previous = self.previous
        good = state in GOOD_STATES
        return ServiceSnapshot(
            kind=self.kind,
            url=self.url,
            state=state,
            probed_at=self.now,
            last_ok_at=self.now if good else (previous.last_ok_at if previous else None),
            reason=reason,
            **(self.common | fields),  # type: ignore[arg-type]
        )
