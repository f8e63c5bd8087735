"""The monitor's `/metrics` over HTTP: one thread, a selector loop, bounded connections.

The probe loop runs on the monitor's event loop; scrapes are served by a thread of their own
that only copies the bytes `MetricsBook` rendered after the last round (plus the moment's few
lines), so neither waits for the other. One thread serves every connection with a selector:
a thread per connection (http.server's) let a few thousand idle connections hold as many
threads, and the monitor's own rounds then failed to start theirs. A connection idle for
`IDLE_SECONDS` is closed, at most `MAX_CONNECTIONS` are kept (a new one closes the longest
idle), and a request is at most `MAX_REQUEST` bytes of head: whatever a client does, the
server's memory and threads stay bounded and a scraper is answered. HTTP/1.1 keep-alive is
kept for scrapers that reuse their connection (Prometheus does).

`--listen` takes `HOST:PORT` (`[::1]:PORT` for IPv6) and defaults to loopback: the metrics
name the fleet's nodes and services, and nothing here authenticates a scraper.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from rocmtui.core.hostmonitor.metrics import CONTENT_TYPE, MetricsBook

DEFAULT_LISTEN = "127.0.0.1:9464"
INDEX = b"rocmtui monitor: metrics at /metrics\n"
# a connection that sends nothing for this long is closed: above Prometheus' default 1 m scrape
# interval (deploy/prometheus scrapes every 15 s), so a scraper's kept connection is never
# closed just as its next scrape is sent; the count bound is what protects the monitor
IDLE_SECONDS = 75.0
MAX_CONNECTIONS = 256  # kept open at once; a new one beyond closes the longest idle
MAX_REQUEST = 8192  # bytes of request line and headers; more is a 431 and a close
BACKLOG = 1024  # connections the kernel queues before the loop accepts them
log = logging.getLogger(__name__)


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


class _Connection:
    """One client: what it sent that is not answered yet, what is left to send to it."""

    __slots__ = ("close_after", "last", "out", "pending", "sock")

    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.pending = b""
        self.out = b""
        self.close_after = False
        self.last = now


Answer = tuple[bytes, bool]  # the bytes to send, whether to close once they are sent


def _response(
    status: str, body: bytes, kind: str = "text/plain", *, close: bool, head: bool = False
) -> Answer:
    lines = [
        f"HTTP/1.1 {status}",
        "Server: rocmtui-monitor",
        f"Content-Type: {kind}",
        f"Content-Length: {len(body)}",
        f"Connection: {'close' if close else 'keep-alive'}",
    ]
    if status.startswith("405"):
        lines.append("Allow: GET, HEAD")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (b"" if head else body), close


class MetricsServer:
    """Serves `book` at /metrics on `address` until `close()`."""

    def __init__(
        self,
        address: tuple[str, int],
        book: MetricsBook,
        consoles: Callable[[], int],
        *,
        idle_seconds: float = IDLE_SECONDS,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.book = book
        self.consoles = consoles
        self.idle_seconds = idle_seconds
        self.max_connections = max_connections
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(address)
            listener.listen(BACKLOG)
        except OSError as exc:
            listener.close()
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise ListenError(f"cannot serve metrics on {shown}: {exc.strerror or exc}") from None
        listener.setblocking(False)
        self._listener = listener
        bound = listener.getsockname()
        name, number = str(bound[0]), int(bound[1])
        shown_host = f"[{name}]" if ":" in name else name
        self.url = f"http://{shown_host}:{number}/metrics"
        self._conns: OrderedDict[int, _Connection] = OrderedDict()  # longest idle first
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="metrics", daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._conns)

    def close(self) -> None:
        """Stop serving and close every connection (waits for the loop, a second at most)."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5.0)
        for conn in list(self._conns.values()):
            self._drop(conn)
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # ------------------------------------------------------------------ the loop

    def _serve(self) -> None:
        while not self._stopping:
            try:
                self._turn()
            except Exception:  # a bug here must not end the metrics for good
                log.exception("serving the metrics failed")

    def _turn(self) -> None:
        timeout = min(1.0, self.idle_seconds)
        for key, mask in self._selector.select(timeout):
            now = time.monotonic()
            if key.data is None:
                self._accept(now)
            elif key.data == "wake":
                with contextlib.suppress(OSError):
                    self._wake_r.recv(64)
            else:
                conn: _Connection = key.data
                if mask & selectors.EVENT_READ:
                    self._read(conn, now)
                writable = mask & selectors.EVENT_WRITE and conn.sock.fileno() >= 0
                if writable and self._flush(conn, now):
                    self._answer(conn, now)  # requests pipelined behind the one sent
        self._reap(time.monotonic())

    def _accept(self, now: float) -> None:
        for _ in range(64):  # a burst at a time: the other connections get their turn
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors: close the longest idle
                log.warning("metrics: cannot accept a connection: %s", exc)
                self._evict()
                return
            while len(self._conns) >= self.max_connections:
                self._evict()
            sock.setblocking(False)
            conn = _Connection(sock, now)
            self._conns[sock.fileno()] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _evict(self) -> None:
        if self._conns:
            self._drop(next(iter(self._conns.values())))

    def _reap(self, now: float) -> None:
        while self._conns:
            oldest = next(iter(self._conns.values()))
            if now - oldest.last < self.idle_seconds:
                return
            self._drop(oldest)

    def _touch(self, conn: _Connection, now: float) -> None:
        conn.last = now
        self._conns.move_to_end(conn.sock.fileno())

    def _drop(self, conn: _Connection) -> None:
        fd = conn.sock.fileno()
        if fd >= 0:
            self._conns.pop(fd, None)
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(conn.sock)
        conn.sock.close()

    def _read(self, conn: _Connection, now: float) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        if not data:
            self._drop(conn)
            return
        self._touch(conn, now)
        conn.pending += data
        self._answer(conn, now)

    def _answer(self, conn: _Connection, now: float) -> None:
        """Answer the whole requests at the head of `pending`, one after another while each
        answer goes out at once (a loop, not a recursion: a client may pipeline thousands);
        once an answer waits for the socket, nothing more is read or answered until it is
        sent."""
        while not conn.out and conn.sock.fileno() >= 0:
            end = conn.pending.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.pending) <= MAX_REQUEST:
                    return
                conn.pending = b""
                answer = _response("431 Request Header Fields Too Large", b"", close=True)
            else:
                head, conn.pending = conn.pending[:end], conn.pending[end + 4 :]
                answer = self._respond(head)
            conn.out, conn.close_after = answer
            if not self._flush(conn, now):
                return

    def _respond(self, head: bytes) -> Answer:
        lines = head.decode("latin-1").split("\r\n")
        words = lines[0].split()
        if len(words) != 3 or not words[2].startswith("HTTP/1."):
            return _response("400 Bad Request", b"", close=True)
        method, target, version = words
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip().lower()
        wants = headers.get("connection", "")
        close = wants == "close" or (version == "HTTP/1.0" and wants != "keep-alive")
        if headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers:
            close = True  # a body this server never reads: answer, then close
        if method not in ("GET", "HEAD"):
            return _response("405 Method Not Allowed", b"", close=True)
        path = target.split("?", 1)[0]
        head_only = method == "HEAD"
        if path == "/metrics":
            try:
                body = self.book.exposition(self.consoles())
            except Exception:
                log.exception("metrics: rendering a scrape failed")
                return _response("500 Internal Server Error", b"", close=True)
            return _response("200 OK", body, CONTENT_TYPE, close=close, head=head_only)
        if path == "/":
            kind = "text/plain; charset=utf-8"
            return _response("200 OK", INDEX, kind, close=close, head=head_only)
        return _response("404 Not Found", b"not found\n", close=close, head=head_only)

    def _flush(self, conn: _Connection, now: float) -> bool:
        """Send what is left of the answer; True when all of it went and the connection
        stays open for the next request."""
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._drop(conn)
            return False
        conn.out = conn.out[sent:]
        if sent:
            self._touch(conn, now)
        if conn.out:  # the rest when the socket can take it; read nothing meanwhile
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
            return False
        if conn.close_after:
            self._drop(conn)
            return False
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        return True
