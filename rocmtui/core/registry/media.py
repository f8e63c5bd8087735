"""Manifest media types and what a manifest says (pure: no I/O).

The digest a registry answers depends on the media types asked for: an OCI index, a Docker
manifest list and a single-platform manifest each have their own, and a registry asked with no
Accept header converts a Docker manifest to schema 1 under yet another digest (seen with the
CNCF registry 2.8). So every request names all four modern kinds, the answer's kind is kept,
and digests are only ever compared between answers of the same kind.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
KINDS = (OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST)
LISTS = frozenset({OCI_INDEX, DOCKER_LIST})
ACCEPT_ALL = ", ".join(KINDS)
KIND_WORDS = {
    OCI_INDEX: "OCI index",
    OCI_MANIFEST: "OCI manifest",
    DOCKER_LIST: "Docker manifest list",
    DOCKER_MANIFEST: "Docker manifest",
}
#: What a manifest list entry for an attestation (not an image) says its platform is.
_ATTESTATION_TYPE = "attestation-manifest"


def kind_word(media_type: str | None) -> str:
    """`Docker manifest`, `OCI index` ...; the raw type (shortened) for anything else."""
    if not media_type:
        return "unknown kind"
    return KIND_WORDS.get(media_type.split(";")[0].strip(), media_type[:60])


def normal_type(content_type: str | None) -> str | None:
    """A Content-Type header's media type alone (parameters dropped)."""
    if not content_type:
        return None
    return content_type.split(";")[0].strip().lower() or None


class BadManifest(ValueError):
    """A manifest that cannot be read; `str()` says why in one line."""


class Child(Struct, frozen=True):
    """One entry of an index or manifest list."""

    digest: str
    media_type: str | None
    platform: str  # `linux/amd64`, `unknown/unknown` for attestations
    size: int
    attestation: bool = False


class Manifest(Struct, frozen=True):
    """What a manifest says: its children (a list) or its config and layer sizes (an image)."""

    media_type: str
    children: tuple[Child, ...] = ()
    config_digest: str | None = None
    config_size: int = 0
    layers_size: int = 0

    @property
    def is_list(self) -> bool:
        """An index or manifest list (several platforms, or an image and its attestations)."""
        return self.media_type in LISTS

    @property
    def image_size(self) -> int:
        """Config plus layers, as pushed (compressed)."""
        return self.config_size + self.layers_size


def _table(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _size(entry: Mapping[str, Any]) -> int:
    value = entry.get("size")
    return value if isinstance(value, int) and value >= 0 else 0


def parse_manifest(body: bytes, content_type: str | None) -> Manifest:
    """Parse a manifest body; its kind from the body's own `mediaType`, else the header."""
    try:
        data = json.loads(body)
    except ValueError:
        raise BadManifest("manifest is not JSON") from None
    if not isinstance(data, dict):
        raise BadManifest("manifest is not a JSON object")
    kind = data.get("mediaType") if isinstance(data.get("mediaType"), str) else None
    kind = normal_type(kind) or normal_type(content_type)
    if kind is None:  # OCI allows leaving it out: tell by shape
        kind = OCI_INDEX if isinstance(data.get("manifests"), list) else OCI_MANIFEST
    if kind in LISTS:
        entries = data.get("manifests")
        if not isinstance(entries, list):
            raise BadManifest(f"{kind_word(kind)} without a manifests list")
        children = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
                continue
            platform = _table(entry.get("platform"))
            annotations = _table(entry.get("annotations"))
            words = [str(platform.get("os") or "unknown"), str(platform.get("architecture") or "")]
            if platform.get("variant"):
                words.append(str(platform["variant"]))
            attestation = (
                annotations.get("vnd.docker.reference.type") == _ATTESTATION_TYPE
                or words[0] == "unknown"
            )
            children.append(
                Child(
                    digest=entry["digest"],
                    media_type=entry.get("mediaType")
                    if isinstance(entry.get("mediaType"), str)
                    else None,
                    platform="/".join(w for w in words if w) or "unknown",
                    size=_size(entry),
                    attestation=attestation,
                )
            )
        return Manifest(media_type=kind, children=tuple(children))
    if kind not in (OCI_MANIFEST, DOCKER_MANIFEST):
        raise BadManifest(f"unsupported manifest kind {kind_word(kind)}")
    config = data.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("digest"), str):
        raise BadManifest(f"{kind_word(kind)} without a config descriptor")
    layers = data.get("layers")
    layers_size = (
        sum(_size(x) for x in layers if isinstance(x, dict)) if isinstance(layers, list) else 0
    )
    return Manifest(
        media_type=kind,
        config_digest=config["digest"],
        config_size=_size(config),
        layers_size=layers_size,
    )


def pick_platform(manifest: Manifest, platform: str = "linux/amd64") -> Child | None:
    """The entry of a list for `platform` (`linux/amd64`; a variant matches its base), never an
    attestation; the only image entry when there is just one."""
    images = [c for c in manifest.children if not c.attestation]
    for child in images:
        if child.platform == platform or child.platform.startswith(platform + "/"):
            return child
    return images[0] if len(images) == 1 and platform == "linux/amd64" else None


class ImageConfig(Struct, frozen=True):
    """What an image's config blob says that the matrix shows."""

    labels: dict[str, str]
    created: str | None  # RFC 3339 as written
    platform: str | None


def parse_config(body: bytes) -> ImageConfig:
    """Labels, creation time and platform from an image config blob."""
    try:
        data = json.loads(body)
    except ValueError:
        raise BadManifest("image config is not JSON") from None
    if not isinstance(data, dict):
        raise BadManifest("image config is not a JSON object")
    raw = _table(_table(data.get("config")).get("Labels"))
    labels = {str(k): str(v) for k, v in raw.items() if isinstance(v, str | int | float)}
    created = data.get("created") if isinstance(data.get("created"), str) else None
    os_name, arch = data.get("os"), data.get("architecture")
    platform = f"{os_name}/{arch}" if isinstance(os_name, str) and isinstance(arch, str) else None
    return ImageConfig(labels=labels, created=created, platform=platform)
