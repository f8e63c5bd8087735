"""The requests adapter that lets the docker SDK talk HTTP through an `SSHDialer`.

Imported only inside probe threads: it pulls in requests, urllib3 and the docker SDK.
"""

from __future__ import annotations

from typing import Any

import requests.adapters
import urllib3.connection
import urllib3.connectionpool
from docker.transport.basehttpadapter import BaseHTTPAdapter

from rocmtui.core.probes.ssh.dial import SSHDialer

SSH_BASE_URL = "http+docker://ssh"


class _SSHConnection(urllib3.connection.HTTPConnection):
    def __init__(self, dialer: SSHDialer, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._dialer = dialer
        self._dial_timeout = timeout

    def connect(self) -> None:
        """Dial a fresh ssh child; the HTTP connection runs over its socketpair."""
        self.sock = self._dialer.dial(self._dial_timeout)


class _SSHPool(urllib3.connectionpool.HTTPConnectionPool):
    def __init__(self, dialer: SSHDialer, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, maxsize=1)
        self._dialer = dialer
        self._dial_timeout = timeout

    def _new_conn(self) -> _SSHConnection:
        return _SSHConnection(self._dialer, self._dial_timeout)


class SSHDialAdapter(BaseHTTPAdapter):  # type: ignore[misc]
    """A requests adapter that reaches the engine through `SSHDialer`."""

    def __init__(self, dialer: SSHDialer, timeout: float) -> None:
        self._pool = _SSHPool(dialer, timeout)
        super().__init__()

    def get_connection(self, url: str, proxies: Any = None) -> _SSHPool:
        """Every request goes to the one pool (one ssh child at a time)."""
        return self._pool

    def request_url(self, request: Any, proxies: Any) -> str:
        """The path only: there is no real host name to proxy for."""
        return str(request.path_url)

    def close(self) -> None:
        """Close the pool's connections."""
        self._pool.close()
        requests.adapters.HTTPAdapter.close(self)
