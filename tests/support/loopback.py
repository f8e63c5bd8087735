"""The one loopback HTTP stand-in (test support, never in the installed package): a threaded
server on 127.0.0.1, on a port the kernel picks, that hands every GET, HEAD and POST to an
`answer` function. The stand-ins for what cannot run here (upstream release APIs, a registry's
bearer challenge or 500, a registry that drips, Alertmanager's webhook receiver) are each one
such function.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Mapping

Handler = http.server.BaseHTTPRequestHandler


class LoopbackHTTP:
    """Serves `answer(handler)` for each request until `stop()`, which sets `stopping` first so
    that an answer which hangs or drips on purpose can end."""

    def __init__(self, answer: Callable[[Handler], None]) -> None:
        self.stopping = threading.Event()

        class _Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                answer(self)

            do_GET = do_HEAD = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self._server = _Server(("127.0.0.1", 0), _Handler)
        self.port = self._server.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket (answers waiting on `stopping` end)."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def send(handler: Handler, status: int, headers: Mapping[str, str], body: bytes) -> None:
    """One whole answer: `Content-Length` unless `headers` has one; no body to a HEAD."""
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    if not any(name.lower() == "content-length" for name in headers):
        handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the default 5 drops connections a client opens at once
