"""The node_exporter source: one bounded GET of a node's /metrics a refresh.

The fetch goes through the probes' `_http.fetch`: an overall deadline (httpx's timeouts are
per phase), a client per origin, no redirects, no proxies, and a body cap (`MAX_BODY`): a body
past it is cut, parsed as far as it goes, and said so. node_exporter filters its collectors
by `collect[]` parameters, which shrinks its answer from ~150 KB to the few KB the vitals
read; an exporter that refuses the filter (a collector disabled there, or a proxy in front)
answers 400, and is asked unfiltered from then on.
"""

from __future__ import annotations

import time
import urllib.parse

from rocmtui.core.probes._http import FetchError, HttpClients, fetch
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.vitals import exposition
from rocmtui.core.vitals.reading import Reading

MAX_BODY = 4 * 1024 * 1024
COLLECTORS = ("cpu", "loadavg", "meminfo", "vmstat", "pressure", "filesystem")


class ExporterError(Exception):
    """The exporter gave nothing usable; `str()` is the one-line reason (its source named)."""


def filtered(url: str) -> str:
    """`url` asking only for the collectors the vitals read."""
    parts = urllib.parse.urlsplit(url)
    extra = urllib.parse.urlencode([("collect[]", c) for c in COLLECTORS])
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urllib.parse.urlunsplit(parts._replace(query=query))


class ExporterSource:
    """Reads node_exporters; remembers which refuse the collector filter."""

    def __init__(self, clients: HttpClients | None = None) -> None:
        self.clients = clients or HttpClients()
        self._unfiltered: set[str] = set()

    async def read(self, url: str, data_root: str | None, deadline: float) -> Reading:
        """A reading of the exporter at `url` within `deadline` s (raises ExporterError)."""
        started = time.monotonic()
        client = self.clients.get(url, deadline)
        ask = url if url in self._unfiltered else filtered(url)
        try:
            got = await fetch(client, "GET", ask, deadline, max_body=MAX_BODY + 1)
            if got.status == 400 and ask != url:
                self._unfiltered.add(url)
                left = deadline - (time.monotonic() - started)
                got = await fetch(client, "GET", url, left, max_body=MAX_BODY + 1)
        except FetchError as exc:
            raise ExporterError(one_line(f"node_exporter: {exc}")) from None
        if got.status != 200:
            raise ExporterError(one_line(f"node_exporter: HTTP {got.status}"))
        body = got.body
        cut = len(body) > MAX_BODY
        text = body[:MAX_BODY].decode("utf-8", "replace")
        lines = text.splitlines()
        if cut and lines:
            lines = lines[:-1]  # the last line is probably cut in two
        samples = exposition.parse(lines)
        if samples.count == 0:
            what = f"{samples.skipped} lines unreadable" if samples.skipped else "no samples"
            raise ExporterError(one_line(f"node_exporter: not metrics ({what})"))
        reading = exposition.to_reading(samples, data_root)
        if cut:
            reading.missing.append(f"node_exporter: answer over {MAX_BODY >> 20} MiB, cut")
        if samples.skipped:
            reading.missing.append(f"node_exporter: {samples.skipped} unreadable lines skipped")
        return reading

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        await self.clients.aclose()
