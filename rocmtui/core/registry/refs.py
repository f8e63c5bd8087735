"""Image references as bake prints them (`127.0.0.1:5000/rocm-bake/pytorch:2.15.0-gfx950`),
parsed and checked against the distribution spec, and matched to the fleet's registry.

A tag bake resolves may still be one the registry cannot hold (`2.15.0+local`, 129 characters,
a repository with capitals): that is a state of its cell with the reason, never a request.
"""

from __future__ import annotations

import re
import urllib.parse

from msgspec import Struct

#: The distribution spec's tag and repository grammar.
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
REPOSITORY_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
DOCKER_HUB = "docker.io"


class BadReference(ValueError):
    """A reference the registry cannot hold; `str()` says why in one line."""


class ImageRef(Struct, frozen=True):
    """`host/repository:tag`, as a registry is asked for it."""

    host: str  # `127.0.0.1:5000`; docker.io when the reference names none
    repository: str  # `rocm-bake/pytorch`
    tag: str

    def __str__(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"

    @property
    def repo_key(self) -> str:
        """`host/repository`: one registry repository."""
        return f"{self.host}/{self.repository}"


def parse_ref(text: str) -> ImageRef:
    """Parse a tagged reference; BadReference when it is not one the registry can hold."""
    ref = text.strip()
    if not ref:
        raise BadReference("empty image reference")
    if "@" in ref:
        raise BadReference(f"{ref!r} names a digest, not a tag")
    first, sep, rest = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        host, path = first.lower(), rest
    else:
        host, path = DOCKER_HUB, ref
    name, colon, tag = path.rpartition(":")
    if not colon or "/" in tag:
        name, tag = path, "latest"
    if not REPOSITORY_RE.match(name) or len(name) > 255:
        raise BadReference(f"repository {name!r} is not valid for the distribution spec")
    if not TAG_RE.match(tag):
        raise BadReference(
            f"tag {tag!r} is not valid for the distribution spec "
            "([A-Za-z0-9_][A-Za-z0-9_.-], at most 128 characters)"
        )
    return ImageRef(host=host, repository=name, tag=tag)


def url_host(url: str) -> str:
    """`host:port` of a registry URL, the way image references name it (default ports left out,
    as `docker push` names them)."""
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal keeps its brackets in a reference
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def registry_url_for(host: str, fleet_registry_url: str) -> str | None:
    """The URL to ask about images on `host`: the fleet's registry when the reference names it
    (scheme and port from the fleet file), else None: rocmtui asks only the fleet's registry."""
    if host.lower() == url_host(fleet_registry_url):
        return fleet_registry_url.rstrip("/")
    return None
