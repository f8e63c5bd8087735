"""A counting proxy in front of an engine's unix socket: how many requests reach the engine.

Clients (the docker SDK, the docker CLI and buildx) connect to `proxy.docker_host`; every byte
goes to the engine's own socket and back unchanged. On the way in, each complete line that is
an HTTP request line (`GET /v1.41/info HTTP/1.1`) is counted, with its path (the API version
dropped): `proxy.requests` and `proxy.by_path`. A connection upgraded to a raw stream (buildx's
gRPC session) is binary after its request line; a binary line that happens to look like a
request line is not a practical worry.

Runs in daemon threads of the calling process; `stop()` closes every socket it holds.
"""

from __future__ import annotations

import collections
import contextlib
import re
import socket
import threading
from pathlib import Path
from typing import Any

from devfleet import processes

REQUEST_LINE = re.compile(rb"^(GET|HEAD|POST|PUT|DELETE|PATCH) (/\S*) HTTP/1\.[01]$")
VERSION = re.compile(r"^/v\d+\.\d+(?=/)")
MAX_LINE = 16 * 1024  # a longer "line" is a body or a stream, not a request line


class CountingProxy:
    """Forward `target` (an engine's unix socket) from a socket of our own, counting requests."""

    def __init__(self, target: Path, path: Path | None = None) -> None:
        self.target = Path(target)
        self._dir = None if path is not None else processes.short_dir("rtcount")
        self.path = path or Path(self._dir or ".") / "p.sock"
        self.docker_host = f"unix://{self.path}"
        self.requests = 0
        self.by_path: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._stop = threading.Event()
        self._srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._srv.bind(str(self.path))
        self._srv.listen(64)
        threading.Thread(target=self._accept, name="counting-proxy", daemon=True).start()

    def count(self) -> int:
        """Requests seen so far."""
        with self._lock:
            return self.requests

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(str(self.target))
            except OSError:
                client.close()
                upstream.close()
                continue
            with self._lock:
                self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, inbound: bool) -> None:
        pending = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if inbound:
                    pending = self._scan(pending + data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def _scan(self, data: bytes) -> bytes:
        """Count the request lines among the complete lines; return the incomplete rest."""
        *lines, rest = data.split(b"\r\n")
        for line in lines:
            match = REQUEST_LINE.match(line)
            if match:
                path = VERSION.sub("", match.group(2).decode("latin-1").split("?", 1)[0])
                with self._lock:
                    self.requests += 1
                    self.by_path[path] += 1
        return rest[-MAX_LINE:]

    def stop(self) -> None:
        """Close the listening socket and every connection; remove the socket file."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._srv.close()
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
        if self._dir is not None:
            with contextlib.suppress(OSError):
                self._dir.rmdir()

    def __enter__(self) -> CountingProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
