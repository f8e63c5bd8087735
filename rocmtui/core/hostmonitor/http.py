"""The monitor's `/metrics` over HTTP, in threads of its own.

The probe loop runs on the monitor's event loop; scrapes are served by a threading HTTP server
that only copies the bytes `MetricsBook` rendered after the last round, so neither waits for
the other. `--listen` takes `HOST:PORT` (`[::1]:PORT` for IPv6) and defaults to loopback: the
metrics name the fleet's nodes and services, and nothing here authenticates a scraper.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rocmtui.core.hostmonitor.metrics import CONTENT_TYPE, MetricsBook

DEFAULT_LISTEN = "127.0.0.1:9464"
INDEX = b"rocmtui monitor: metrics at /metrics\n"


class ListenError(ValueError):
    """A `--listen` value that is not HOST:PORT, or an address that cannot be bound."""


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` or `[V6]:PORT` as (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ListenError(f"--listen: expected HOST:PORT such as {DEFAULT_LISTEN}, not {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, handler)


class MetricsServer:
    """Serves `book` at /metrics on `address` until `close()`."""

    def __init__(self, address: tuple[str, int], book: MetricsBook, consoles: Callable[[], int]):
        self.book = book
        self.consoles = consoles
        outer = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "rocmtui-monitor"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, kind = outer.book.exposition(outer.consoles()), CONTENT_TYPE
                elif path == "/":
                    body, kind = INDEX, "text/plain; charset=utf-8"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Scrapes every few seconds are not news for the journal."""

        try:
            self.server = _Server(address, Handler)
        except OSError as exc:
            host, port = address
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise ListenError(f"cannot serve metrics on {shown}: {exc.strerror or exc}") from None
        bound = self.server.server_address
        name, number = str(bound[0]), int(bound[1])
        shown_host = f"[{name}]" if ":" in name else name
        self.url = f"http://{shown_host}:{number}/metrics"
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="metrics",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving (waits for the serving thread's poll, not for open scrapes)."""
        self.server.shutdown()
        self.server.server_close()
