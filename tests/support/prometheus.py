"""The monitor's metrics as Prometheus reads them (a scrape, a scrape config, a query), and
Alertmanager's config and webhook as the alert tests use them."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from devfleet import (
    ServiceHandle,
)
from tests.support.loopback import Handler, LoopbackHTTP, send


def scrape(handle: ServiceHandle, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(f"{handle.url}/metrics", timeout=timeout) as answer:
        return str(answer.read().decode())


DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def prometheus_config(
    monitor: ServiceHandle, alertmanager: ServiceHandle | None, rules: Path | None = None
) -> str:
    """deploy/prometheus/prometheus.yml, every second, scraping this test's monitor, with the
    shipped rules or the file `rules` (a test's copy of them)."""
    text = (DEPLOY / "prometheus.yml").read_text()
    text = re.sub(r"(scrape|evaluation)_interval: 15s", r"\1_interval: 1s", text)
    text = text.replace("- rocmtui-alerts.yml", f"- {rules or DEPLOY / 'rocmtui-alerts.yml'}")
    text = text.replace('"127.0.0.1:9464"', f'"{monitor.address}"')
    target = alertmanager.address if alertmanager else "127.0.0.1:1"
    return text.replace('"127.0.0.1:9093"', f'"{target}"')


def query(prometheus: ServiceHandle, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus.url}/api/v1/query?query={urllib.parse.quote(promql)}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        data = json.loads(answer.read())
    assert data["status"] == "success", data
    return list(data["data"]["result"])


class WebhookSink:
    """A loopback stand-in keeping every JSON body POSTed to it (Alertmanager's
    notifications)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self._http = LoopbackHTTP(self._answer)
        self.url = f"{self._http.url}/hook"

    def _answer(self, handler: Handler) -> None:
        if handler.command != "POST":
            send(handler, 405, {}, b"")
            return
        size = int(handler.headers.get("Content-Length") or 0)
        self.bodies.append(json.loads(handler.rfile.read(size)))
        send(handler, 200, {}, b"")

    def alerts(self) -> list[dict[str, Any]]:
        return [alert for body in list(self.bodies) for alert in body.get("alerts", [])]

    def stop(self) -> None:
        self._http.stop()


def alertmanager_config(sink: WebhookSink) -> str:
    """deploy/prometheus/alertmanager.yml, notifying the sink a second after an alert."""
    text = (DEPLOY / "alertmanager.yml").read_text()
    text = re.sub(r"url: \S+", f"url: {sink.url}", text)
    return text.replace("group_wait: 30s", "group_wait: 1s")
