"""Which step of reaching an engine failed, and why, in words an operator can act on.

A remote node is reached in steps: the name is resolved (`dns`), a connection is made
(`connect`), the far end proves who it is (`host key`: the ssh host key, or for TLS the
engine's certificate), we prove who we are (`auth`: the ssh key, or our client certificate),
and the engine answers (`engine`: docker present and running there). `config` is a fault of
ours before any of that (an unreadable certificate, a context that does not exist). Each
failure is classified from what ssh printed or from the exception's chain, never from a
guess at the cause; what cannot be classified keeps its own words.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
from enum import StrEnum

from rocmtui.core.text.sanitize import one_line


class ReachStep(StrEnum):
    """The step of reaching an engine that failed (shown on screen and in JSON)."""

    DNS = "dns"
    CONNECT = "connect"
    HOST_KEY = "host key"
    AUTH = "auth"
    ENGINE = "engine"
    CONFIG = "config"


class ReachError(Exception):
    """Reaching the engine failed at `step`; `str()` is the one-line reason."""

    def __init__(self, step: ReachStep | None, reason: str) -> None:
        super().__init__(reason)
        self.step = step
        self.reason = reason


# ssh's own words (OpenSSH 9.x), most specific first; `{host}` is filled in.
_SSH_RULES: tuple[tuple[re.Pattern[str], ReachStep, str], ...] = tuple(
    (re.compile(pattern, re.I), step, words)
    for pattern, step, words in (
        (
            r"Could not resolve hostname|Name or service not known|name resolution|"
            r"No address associated",
            ReachStep.DNS,
            "cannot resolve {host}",
        ),
        (
            r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed",
            ReachStep.HOST_KEY,
            "host key of {host} CHANGED: not accepted; if the host was reinstalled, "
            "check its new key, then replace the old one in known_hosts",
        ),
        (
            r"No \S+ host key is known for|Host key verification failed",
            ReachStep.HOST_KEY,
            "host key of {host} unknown: not accepted without a person; check it and add it "
            "to known_hosts (e.g. `ssh {host}` once)",
        ),
        (
            r"Permission denied \(|Too many authentication failures|no matching host key type|"
            r"Authentication failed",
            ReachStep.AUTH,
            "login refused by {host}: {said}",
        ),
        (
            r"docker: (?:command )?not found|docker: No such file",
            ReachStep.ENGINE,
            "docker is not installed (or not on PATH) on {host}",
        ),
        (
            r"Cannot connect to the Docker daemon|failed to open the raw stream connection|"
            r"dial unix .*(?:no such file|connection refused)",
            ReachStep.ENGINE,
            "the engine on {host} is not running: {said}",
        ),
        (
            r"permission denied while trying to connect to the Docker daemon",
            ReachStep.ENGINE,
            "the ssh user on {host} may not use its engine (not in the docker group?)",
        ),
        (
            r"Connection timed out|Connection refused|No route to host|Network is unreachable|"
            r"kex_exchange_identification|Connection closed by|Connection reset|"
            r"not responding|banner exchange|Broken pipe|read from master failed",
            ReachStep.CONNECT,
            "{said}",
        ),
    )
)


def _last_words(text: str) -> str:
    """The line of ssh's output that says what happened (its last meaningful one)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("@")]
    lines = [ln for ln in lines if not ln.lower().startswith(("warning: permanently", "debug"))]
    return lines[-1] if lines else ""


def ssh_failure(text: str, host: str, returncode: int | None = None) -> ReachError:
    """What ssh's stderr (`text`) says went wrong reaching `host`."""
    said = _last_words(text).removeprefix("ssh: ")
    for pattern, step, words in _SSH_RULES:
        if pattern.search(text):
            return ReachError(step, one_line(words.format(host=host, said=said)))
    if returncode == 127:
        return ReachError(ReachStep.ENGINE, one_line(f"docker is not installed on {host}"))
    if said:
        return ReachError(None, one_line(f"ssh: {said}"))
    return ReachError(None, f"ssh to {host} exited {returncode}")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(seen) < 12:
        seen.append(cur)
        reason = getattr(cur, "reason", None)  # urllib3 keeps the real error here
        if isinstance(reason, BaseException) and reason is not cur:
            cur = reason
        else:
            cur = cur.__cause__ or cur.__context__
        if cur is not None and cur in seen:
            break
    # requests/urllib3 sometimes carry the ssl error only as text in the first arguments
    return seen


_TLS_PEER_REFUSED = re.compile(
    r"alert (?:bad certificate|certificate required|unknown ca|certificate expired|"
    r"certificate revoked|certificate unknown|access denied)",
    re.I,
)


def _tls_words(text: str, host: str) -> ReachError | None:
    if "certificate has expired" in text:
        return ReachError(ReachStep.HOST_KEY, f"the engine's TLS certificate has expired ({host})")
    if "not yet valid" in text:
        return ReachError(
            ReachStep.HOST_KEY, f"the engine's TLS certificate is not valid yet ({host})"
        )
    m = re.search(r"(?:Hostname|IP address) mismatch, certificate is not valid for '([^']*)'", text)
    if m:
        return ReachError(
            ReachStep.HOST_KEY,
            one_line(
                f"the engine's TLS certificate is not for {m.group(1)}: it names another host"
            ),
        )
    if re.search(r"unable to get local issuer|self[- ]signed certificate|unknown ca\b", text) and (
        "alert" not in text
    ):
        return ReachError(
            ReachStep.HOST_KEY,
            one_line(f"the engine's TLS certificate ({host}) is not signed by tls_ca"),
        )
    alert = _TLS_PEER_REFUSED.search(text)
    if alert:
        return ReachError(
            ReachStep.AUTH,
            one_line(f"the engine refused our client certificate ({alert.group(0)})"),
        )
    if "wrong version number" in text or "record layer failure" in text:
        return ReachError(
            ReachStep.ENGINE, one_line(f"{host} does not speak TLS there (a plain engine?)")
        )
    return None


def tls_failure(exc: BaseException, host: str) -> ReachError | None:
    """The TLS step that failed, when `exc` (or what caused it) is a TLS error (a handshake
    that timed out is not one: the link or the engine is silent, see `tcpstate`)."""
    chain = _chain(exc)
    if any(isinstance(item, TimeoutError) or "timed out" in str(item) for item in chain):
        return None
    for item in chain:
        if isinstance(item, ssl.SSLCertVerificationError):
            text = f"{item.verify_message or ''} {item}"
            return _tls_words(text, host) or ReachError(
                ReachStep.HOST_KEY, one_line(f"the engine's TLS certificate: {item.verify_message}")
            )
        if isinstance(item, ssl.SSLError):
            return _tls_words(str(item), host) or ReachError(None, one_line(f"TLS: {item}"))
    text = " ".join(str(item) for item in _chain(exc))
    if "SSL" in text or "certificate" in text:
        return _tls_words(text, host)
    return None


_CONNECT_ERRNOS = {
    errno.ECONNREFUSED: "connection refused",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "connection timed out",
}


def network_failure(exc: BaseException, host: str) -> ReachError | None:
    """A name that does not resolve, or a connection that cannot be made, in `exc`'s chain."""
    for item in _chain(exc):
        if isinstance(item, socket.gaierror):
            return ReachError(ReachStep.DNS, one_line(f"cannot resolve {host}: {item.strerror}"))
    for item in _chain(exc):
        if isinstance(item, OSError) and item.errno in _CONNECT_ERRNOS:
            return ReachError(ReachStep.CONNECT, f"{_CONNECT_ERRNOS[item.errno]} ({host})")
    text = " ".join(str(item) for item in _chain(exc))
    if "Name or service not known" in text or "Temporary failure in name resolution" in text:
        return ReachError(ReachStep.DNS, one_line(f"cannot resolve {host}"))
    return None
