"""Why an engine probe failed: the error, its one-line reason, and the step that failed.

`engine_failure` turns what the docker SDK (or the ssh child under it) raised into an
`EngineError` whose reason an operator can act on and whose `step` says where reaching the
engine stopped (`failure.ReachStep`). A timeout says nothing by itself about where: `LinkSteps`
finds out, without a guess. For an ssh engine it reads the kernel's view of the node's kept
connection (`tcpstate`: data out and unacknowledged means the link); for a tcp engine, every
connection to its address, orphans included.
"""

from __future__ import annotations

import errno
import socket
import urllib.parse

import requests.exceptions

from rocmtui.core import tcpstate
from rocmtui.core.probes.endpoints import Endpoint
from rocmtui.core.probes.failure import ReachStep, network_failure, tls_failure
from rocmtui.core.probes.ssh.dial import SSHDialer
from rocmtui.core.probes.ssh.master import SSHMasters
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds


class EngineError(Exception):
    """The engine did not answer properly; `str()` is the one-line reason, `step` the step of
    reaching it that failed (None when not known)."""

    def __init__(self, reason: str, step: ReachStep | None = None, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.step = step
        self.timed_out = timed_out  # the client's own timeout: the link or the engine, to see


_ERRNO_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENOENT: "no such socket",
    errno.EACCES: "permission denied",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


# what a unix socket's connect says about the socket itself: the reason names its path
_SOCKET_WORDS = frozenset(_ERRNO_WORDS[e] for e in (errno.ENOENT, errno.EACCES, errno.ECONNREFUSED))


def describe_error(exc: BaseException, timeout: float) -> str:
    """A short reason for an SDK/requests exception, found by walking its causes."""
    import docker.errors  # the caller already paid for the import

    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(seen) < 12:
        seen.append(cur)
        reason = getattr(cur, "reason", None)  # urllib3 MaxRetryError keeps the real one here
        cur = reason if isinstance(reason, BaseException) else (cur.__cause__ or cur.__context__)
    for item in seen:
        if isinstance(item, docker.errors.APIError):
            status = item.status_code or "?"
            return one_line(f"engine error {status}: {item.explanation or item}")
        if isinstance(item, requests.exceptions.Timeout | TimeoutError):
            return f"no answer in {fmt_seconds(timeout)}"
    for item in seen:
        if isinstance(item, OSError) and item.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[item.errno]
    for item in seen:
        name = type(item).__name__
        if name in ("RemoteDisconnected", "IncompleteRead") or (
            isinstance(item, ConnectionError) and not item.errno
        ):
            return "connection closed by the engine"
    return one_line(str(exc) or type(exc).__name__)


def host_of(endpoint: Endpoint) -> str:
    """The engine's host as the operator wrote it (for reasons)."""
    parsed = urllib.parse.urlsplit(endpoint.base_url)
    return parsed.hostname or endpoint.base_url


def engine_failure(
    exc: Exception, dialer: SSHDialer | None, timeout: float, host: str
) -> EngineError:
    """The engine error for `exc`, with the step that failed when it can be told."""
    if dialer is not None:
        said = dialer.failure()
        if said is not None:
            return EngineError(said.reason, said.step)
        return EngineError(describe_error(exc, timeout), ReachStep.ENGINE)
    known = tls_failure(exc, host) or network_failure(exc, host)
    if known is not None:
        return EngineError(known.reason, known.step)
    reason = describe_error(exc, timeout)
    if host.startswith("unix://") and reason in _SOCKET_WORDS:  # which socket: the fix is there
        return EngineError(f"{reason}: {one_line(host[len('unix://') :])}")
    if "HTTP request to an HTTPS server" in reason or "Client sent an HTTP request" in reason:
        return EngineError(
            f"{host} wants TLS: give the node tls_ca, tls_cert and tls_key", ReachStep.AUTH
        )
    step = ReachStep.ENGINE if reason.startswith("engine error") else None
    return EngineError(reason, step, timed_out=reason.startswith("no answer in"))


class LinkSteps:
    """After a timeout: was it the link (`connect`) or the engine (`engine`)?"""

    def __init__(self, masters: SSHMasters) -> None:
        self.masters = masters
        self._addresses: dict[str, tuple[str, int] | None] = {}  # tcp URL -> resolved address

    def after_timeout(self, endpoint: Endpoint, dialer: SSHDialer | None) -> ReachStep:
        """After a timeout: `connect` when our connection to the engine's host has data out
        unacknowledged (the link), else `engine` (connected, and the engine is silent)."""
        if dialer is not None:
            pid = dialer.master_pid or self.masters.pid_of(dialer.target, dialer.ssh_config)
            if pid is None:
                return ReachStep.CONNECT
            view = tcpstate.link_view([pid])
        else:
            address = self._addresses.get(endpoint.base_url)
            if address is None:
                return (
                    ReachStep.CONNECT if endpoint.transport in ("tls", "tcp") else ReachStep.ENGINE
                )
            # every connection to the engine, whoever holds it: one the client has closed on
            # its own timeout lingers as an orphan still retransmitting when the link is dead,
            # where an idle pooled socket of ours would say nothing
            view = tcpstate.link_view(None, remote=address)
        return ReachStep.CONNECT if view is None or view.down else ReachStep.ENGINE

    def remember_address(self, endpoint: Endpoint) -> None:
        """Resolve a tcp:// engine's address once (in the probe thread: it may ask DNS)."""
        if endpoint.transport not in ("tls", "tcp") or endpoint.base_url in self._addresses:
            return
        parsed = urllib.parse.urlsplit(endpoint.base_url)
        found: tuple[str, int] | None = None
        try:
            infos = socket.getaddrinfo(parsed.hostname or "", parsed.port or 2376, 0, 1)
            found = (str(infos[0][4][0]), int(infos[0][4][1]))
        except (OSError, IndexError, ValueError):
            found = None
        self._addresses[endpoint.base_url] = found
