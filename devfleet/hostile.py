"""Hostile servers for probe tests: things that accept and then never (or barely) answer.

Each runs on a daemon thread in the test process, listens on loopback or a unix socket only, and
`stop()` closes every socket it holds. Usable as context managers.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading
from pathlib import Path
from typing import Any

from devfleet import processes


class _Holder:
    """Accept connections on `sock` and hold them open, reading and discarding, never answering.

    Subclasses override `_on_accept` to do something nastier.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._srv = sock
        self._srv.setblocking(False)
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accepted = 0  # how many connections came in (tests may assert a probe connected)
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)
        self._thread.start()

    def _on_accept(self, conn: socket.socket) -> None:
        """Default: just keep the connection."""

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._srv, selectors.EVENT_READ)
        while not self._stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                if key.fileobj is self._srv:
                    try:
                        conn, _ = self._srv.accept()
                    except OSError:
                        continue
                    conn.setblocking(False)
                    with self._lock:
                        self._conns.append(conn)
                    self.accepted += 1
                    sel.register(conn, selectors.EVENT_READ)
                    self._on_accept(conn)
                else:
                    conn = key.fileobj  # type: ignore[assignment]
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        data = b""
                    if not data:  # the client gave up: forget it
                        sel.unregister(conn)
                        self._drop(conn)
        sel.close()

    def _drop(self, conn: socket.socket) -> None:
        with self._lock:
            if conn in self._conns:
                self._conns.remove(conn)
        with contextlib.suppress(OSError):
            conn.close()

    def stop(self) -> None:
        """Close the listener and every held connection; join the thread."""
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self._srv.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            with contextlib.suppress(OSError):
                c.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class HungUnixSocket(_Holder):
    """A unix socket that accepts and never answers: a dockerd that hangs.

    `path` defaults to a fresh short path under /tmp; `docker_host` is `unix://PATH`.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._own_dir = None if path else processes.short_dir("rth")
        self.path = Path(path) if path else self._own_dir / "hung.sock"  # type: ignore[operator]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        sock.listen(64)
        self.docker_host = f"unix://{self.path}"
        super().__init__(sock)

    def stop(self) -> None:
        """Close everything and remove the socket file."""
        super().stop()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        if self._own_dir is not None:
            with contextlib.suppress(OSError):
                self._own_dir.rmdir()


class HungTcpListener(_Holder):
    """A TCP listener on 127.0.0.1 that accepts and never answers (`url`, `port`, `address`)."""

    def __init__(self, port: int = 0) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        self.port = int(sock.getsockname()[1])
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}"
        self.docker_host = f"tcp://{self.address}"
        super().__init__(sock)


class DripServer(_Holder):
    """An HTTP server on 127.0.0.1 that sends one byte every `interval` seconds, forever.

    mode "headers" (default): the status line and headers trickle in and never end, so even a
    client that only wants the headers is held. mode "body": complete headers at once
    (`Content-Length` huge), then the body trickles.
    """

    def __init__(self, interval: float = 0.5, mode: str = "headers") -> None:
        if mode not in ("headers", "body"):
            raise ValueError(f"mode must be 'headers' or 'body', not {mode!r}")
        self.interval, self.mode = interval, mode
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.port = int(sock.getsockname()[1])
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}/"
        super().__init__(sock)

    def _on_accept(self, conn: socket.socket) -> None:
        threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _stream(self) -> Any:
        if self.mode == "body":
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000000\r\n\r\n"
            )
            yield head
            while True:
                yield b"."
        yield b"HTTP/1.1 200 OK\r\nX-Drip: "
        while True:
            yield b"."

    def _drip(self, conn: socket.socket) -> None:
        stream = self._stream()
        first = next(stream)
        # The first chunk: in body mode the whole header, in headers mode one byte at a time.
        pending = first if self.mode == "body" else b""
        chars = iter(first) if self.mode == "headers" else iter(())
        while not self._stop.is_set():
            try:
                if pending:
                    conn.sendall(pending)
                    pending = b""
                else:
                    nxt = next(chars, None)
                    conn.sendall(bytes([nxt]) if nxt is not None else next(stream))
            except OSError:
                return  # client went away (or we were stopped)
            if self._stop.wait(self.interval):
                return
