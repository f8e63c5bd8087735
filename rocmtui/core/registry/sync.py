"""One manifest HEAD over the standard library, under an overall deadline.

The job supervisor asks the registry, once, what a push left there when bake ends: a handful of
requests from a process that should import little. `http.client` timeouts are per socket
operation, so the request runs in a daemon thread the caller abandons at the deadline (a server
dripping its headers cannot hold the supervisor). Same Accept header, same answers and the same
states as the async client (`client.ManifestAnswer`).
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse

from rocmtui.core.registry.client import Lookup, ManifestAnswer, challenge_reason
from rocmtui.core.registry.media import ACCEPT_ALL, normal_type
from rocmtui.core.registry.refs import DIGEST_RE
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds


def head_manifest(base_url: str, repository: str, reference: str, timeout: float) -> ManifestAnswer:
    """HEAD `/v2/REPOSITORY/manifests/REFERENCE` naming all four kinds; never raises."""
    result: list[ManifestAnswer] = []

    def go() -> None:
        try:
            result.append(_head(base_url, repository, reference, timeout))
        except Exception as exc:  # any failure of the connection is a state, never a crash
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            result.append(
                ManifestAnswer(Lookup.UNREACHABLE, reason=one_line(reason or type(exc).__name__))
            )

    thread = threading.Thread(target=go, name="registry-head", daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        return ManifestAnswer(
            Lookup.TIMEOUT, reason=f"no complete answer in {fmt_seconds(timeout)}"
        )
    return result[0]


def _head(base_url: str, repository: str, reference: str, timeout: float) -> ManifestAnswer:
    parts = urllib.parse.urlsplit(base_url)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        conn.request(
            "HEAD",
            f"{parts.path.rstrip('/')}/v2/{repository}/manifests/{reference}",
            headers={"Accept": ACCEPT_ALL, "User-Agent": "rocmtui-supervisor"},
        )
        response = conn.getresponse()
        response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    status = response.status
    if status in (401, 403):
        return ManifestAnswer(
            Lookup.AUTH, reason=challenge_reason(status, headers.get("www-authenticate"))
        )
    if status == 404:
        return ManifestAnswer(Lookup.NOT_FOUND, reason="tag not in the registry")
    if status != 200:
        return ManifestAnswer(Lookup.ERROR, reason=f"registry answered HTTP {status}")
    digest = headers.get("docker-content-digest", "").strip().lower()
    if not DIGEST_RE.match(digest):
        return ManifestAnswer(Lookup.ERROR, reason="answer names no Docker-Content-Digest")
    length = headers.get("content-length", "")
    return ManifestAnswer(
        Lookup.FOUND,
        digest=digest,
        media_type=normal_type(headers.get("content-type")),
        size=int(length) if length.isdigit() else None,
    )
