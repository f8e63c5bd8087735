"""Helpers for registry tests (no tests here): images written straight into a real registry
through its /v2/ API (no docker needed), and a stand-in registry for the answers a real one
cannot be made to give here (a bearer challenge, a 500).

`push_image` uploads a config blob (with labels) and one layer, then PUTs a manifest under a
tag; `push_index` makes an OCI index (or a Docker manifest list) of such manifests — the
"manifest list instead of a manifest" a matrix must read through.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rocmtui.core.registry.media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from tests.support.loopback import Handler, LoopbackHTTP, send


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _request(
    method: str, url: str, data: bytes | None = None, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def put_blob(base: str, repository: str, data: bytes) -> str:
    """Upload one blob (monolithic POST then PUT); returns its digest."""
    digest = _digest(data)
    status, headers, _ = _request("POST", f"{base}/v2/{repository}/blobs/uploads/")
    assert status == 202, status
    location = headers["location"]
    if location.startswith("/"):
        location = base + location
    sep = "&" if "?" in location else "?"
    status, _, body = _request(
        "PUT",
        f"{location}{sep}digest={digest}",
        data,
        {"Content-Type": "application/octet-stream"},
    )
    assert status == 201, (status, body)
    return digest


def put_manifest(base: str, repository: str, reference: str, body: bytes, media_type: str) -> str:
    """PUT a manifest under a tag (or its digest); returns the digest the registry says."""
    status, headers, text = _request(
        "PUT", f"{base}/v2/{repository}/manifests/{reference}", body, {"Content-Type": media_type}
    )
    assert status == 201, (status, text)
    return headers.get("docker-content-digest") or _digest(body)


@dataclass(frozen=True)
class Pushed:
    """What push_image made."""

    digest: str  # the manifest's
    media_type: str
    size: int  # manifest bytes
    config_digest: str
    body: bytes


def push_image(
    base: str,
    repository: str,
    tag: str | None,
    labels: Mapping[str, str] | None = None,
    *,
    media_type: str = DOCKER_MANIFEST,
    arch: str = "amd64",
    created: str = "2026-12-01T10:00:00Z",
    salt: str = "",
) -> Pushed:
    """One small image (config with `labels`, one layer) under `tag` (None: by digest only)."""
    config = json.dumps(
        {
            "architecture": arch,
            "os": "linux",
            "created": created,
            "config": {"Labels": dict(labels) if labels is not None else None},
            "rootfs": {"type": "layers", "diff_ids": []},
            "salt": salt,
        },
        sort_keys=True,
    ).encode()
    layer = f"layer of {repository}:{tag} {salt}".encode()
    config_digest = put_blob(base, repository, config)
    layer_digest = put_blob(base, repository, layer)
    oci = media_type == OCI_MANIFEST
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": media_type,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json"
                if oci
                else "application/vnd.docker.container.image.v1+json",
                "size": len(config),
                "digest": config_digest,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip"
                    if oci
                    else "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": len(layer),
                    "digest": layer_digest,
                }
            ],
        },
        indent=3,
    ).encode()
    digest = put_manifest(base, repository, tag or _digest(manifest), manifest, media_type)
    return Pushed(digest, media_type, len(manifest), config_digest, manifest)


def push_index(
    base: str,
    repository: str,
    tag: str,
    children: Iterable[tuple[Pushed, str]],
    *,
    media_type: str = OCI_INDEX,
) -> Pushed:
    """An index (or Docker manifest list) of (image, "linux/amd64") entries under `tag`."""
    entries = []
    for image, platform in children:
        os_name, arch = platform.split("/", 1)
        entries.append(
            {
                "mediaType": image.media_type,
                "size": image.size,
                "digest": image.digest,
                "platform": {"os": os_name, "architecture": arch},
            }
        )
    body = json.dumps({"schemaVersion": 2, "mediaType": media_type, "manifests": entries}).encode()
    digest = put_manifest(base, repository, tag, body, media_type)
    return Pushed(digest, media_type, len(body), "", body)


assert DOCKER_LIST  # re-exported for tests that make a Docker manifest list


class StandInRegistry:
    """A stand-in for a registry that answers what the real one here cannot be made to: every
    request gets `status` with `headers` (a 401 bearer challenge, a 500) — or, with `tags`, a
    tag list paged by `n` and `last` with a `Link` header, as the distribution spec says and Zot
    does (the CNCF registry 2.8 installed here ignores `n` for tags). Loopback only."""

    def __init__(
        self,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        tags: Iterable[str] | None = None,
    ) -> None:
        self._fixed = (status, dict(headers or {}), body)
        self._tags = sorted(tags) if tags is not None else None
        self.requests: list[tuple[str, str]] = []
        self._http = LoopbackHTTP(self._answer)
        self.port, self.url = self._http.port, self._http.url

    def _page(self, path: str) -> tuple[int, dict[str, str], bytes]:
        url = urllib.parse.urlsplit(path)
        query = urllib.parse.parse_qs(url.query)
        n = int(query.get("n", ["100"])[0])
        last = query.get("last", [""])[0]
        rest = [t for t in self._tags or [] if t > last]
        page, more = rest[:n], rest[n:]
        extra = {"Content-Type": "application/json"}
        if more:
            extra["Link"] = f'<{url.path}?n={n}&last={page[-1]}>; rel="next"'
        name = url.path.removeprefix("/v2/").removesuffix("/tags/list")
        return 200, extra, json.dumps({"name": name, "tags": page}).encode()

    def _answer(self, handler: Handler) -> None:
        self.requests.append((handler.command, handler.path))
        if self._tags is not None and "/tags/list" in handler.path:
            send(handler, *self._page(handler.path))
        else:
            send(handler, *self._fixed)

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._http.stop()

    def __enter__(self) -> StandInRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FaultyProxy:
    """A stand-in in front of a real registry: every request is passed to `real` except those
    for a repository named in `faults`, which gets the fault instead — "401" (a bearer
    challenge), "500", or "drip" (headers one byte every 0.3 s, never finished). So one
    registry can fail for some repositories while the rest of a matrix fills. Loopback only."""

    def __init__(self, real: str, faults: Mapping[str, str]) -> None:
        self._real, self._faults = real, dict(faults)
        self._http = LoopbackHTTP(self._answer)
        self.stopping = self._http.stopping
        self.port, self.url, self.address = self._http.port, self._http.url, self._http.address

    def _answer(self, handler: Handler) -> None:
        path = handler.path
        fault = next(
            (f for repo, f in self._faults.items() if path.startswith(f"/v2/{repo}/")), None
        )
        if fault == "401":
            challenge = 'Bearer realm="https://auth.example/token",service="zot"'
            send(handler, 401, {"WWW-Authenticate": challenge}, b"")
        elif fault == "500":
            send(
                handler,
                500,
                {"Content-Type": "application/json"},
                b'{"errors":[{"code":"UNKNOWN"}]}',
            )
        elif fault == "drip":
            handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for byte in b"X-Slow: " + b"x" * 200:
                if self.stopping.wait(0.3):
                    return
                try:
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                except OSError:
                    return
        else:
            headers = {k: v for k, v in handler.headers.items() if k.lower() in ("accept",)}
            status, answer, body = _request(handler.command, self._real + path, None, headers)
            hop = ("connection", "transfer-encoding", "date", "server")
            keep = {k: v for k, v in answer.items() if k not in hop}
            if handler.command != "HEAD":
                keep.pop("content-length", None)
            send(handler, status, keep, body)

    def stop(self) -> None:
        """Stop serving (dripping answers end)."""
        self._http.stop()

    def __enter__(self) -> FaultyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
