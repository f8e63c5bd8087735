"""What the registry holds under each tag of the plan: one HEAD per tag, bounded, one deadline.

Per tag the answer is a `TagAnswer`: the registry's lookup word, and for a tag it holds its
digest and kind plus the image's facts (labels, creation time, size), read through an index or
manifest list to the plan's platform. Facts are kept by digest (a digest's manifest never
changes), so a matrix refreshed with nothing pushed costs one HEAD per tag. A tag the registry
lacks is followed by one tag listing of its repository (shared by the tags of that repository):
it tells a missing repository from a missing tag and names the tags that are there.

Never a request outside the fleet's registry, and never one for a tag the distribution spec
forbids: those are answers too, with their reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import Struct

from rocmtui.core.registry.client import Lookup, LookupFailed, RegistryClient
from rocmtui.core.registry.media import (
    BadManifest,
    kind_word,
    parse_config,
    parse_manifest,
    pick_platform,
)
from rocmtui.core.registry.refs import BadReference, parse_ref, registry_url_for

INVALID = "invalid tag"
ELSEWHERE = "other registry"
SHOW_OTHER_TAGS = 3


class ImageFacts(Struct, frozen=True):
    """An image's facts, read once per digest."""

    labels: Mapping[str, str] = msgspec.field(default_factory=dict)
    created: str | None = None
    size: int | None = None
    note: str | None = None


class TagAnswer(Struct, frozen=True):
    """The registry's answer for one tag."""

    lookup: str  # a client.Lookup word, INVALID or ELSEWHERE
    reason: str | None = None
    digest: str | None = None
    media_type: str | None = None
    facts: ImageFacts | None = None
    other_tags: tuple[str, ...] = ()  # for a missing tag: some the repository does hold


@dataclass
class FillResult:
    """Every tag's answer, and what it cost."""

    answers: dict[str, TagAnswer]
    requests: int = 0
    seconds: float = 0.0


class _Facts:
    """Image facts by digest: the cache first, the registry once."""

    def __init__(self, cache: Any | None) -> None:
        self.cache = cache
        self.memo: dict[str, asyncio.Task[ImageFacts]] = {}

    def get(
        self,
        client: RegistryClient,
        repository: str,
        digest: str,
        platform: str,
        deadline_at: float,
    ) -> asyncio.Task[ImageFacts]:
        key = f"{digest}@{platform}"
        task = self.memo.get(key)
        if task is None:
            task = asyncio.ensure_future(
                self._load(client, repository, digest, platform, deadline_at)
            )
            self.memo[key] = task
        return task

    async def _load(
        self,
        client: RegistryClient,
        repository: str,
        digest: str,
        platform: str,
        deadline_at: float,
    ) -> ImageFacts:
        key = f"image-facts:{digest}@{platform}"
        if self.cache is not None:
            kept = self.cache.get(key)
            if kept is not None:
                try:  # what `put` below wrote; anything else is read again
                    return msgspec.convert(kept[0], ImageFacts)
                except msgspec.ValidationError:
                    pass
        facts = await _read_facts(client, repository, digest, platform, deadline_at)
        # a digest's facts never change; a failure to read them may (keep only what was read)
        if self.cache is not None and "not read" not in (facts.note or ""):
            self.cache.put(key, msgspec.to_builtins(facts))
        return facts


async def _read_facts(
    client: RegistryClient, repository: str, digest: str, platform: str, deadline_at: float
) -> ImageFacts:
    """Manifest (through a list to `platform`), then its config blob: labels, created, size.
    A problem is a note on the facts, never an exception."""
    top = await client.manifest(repository, digest, deadline_at, method="GET")
    if top.state != Lookup.FOUND or top.body is None:
        return ImageFacts(note=f"manifest not read: {top.state}: {top.reason}")
    try:
        manifest = parse_manifest(top.body, top.media_type)
        note = None
        if manifest.is_list:
            child = pick_platform(manifest, platform)
            if child is None:
                return ImageFacts(note=f"{kind_word(manifest.media_type)} has no {platform} image")
            note = (
                f"read through the {kind_word(manifest.media_type)} to its {child.platform} image"
            )
            image = await client.manifest(repository, child.digest, deadline_at, method="GET")
            if image.state != Lookup.FOUND or image.body is None:
                return ImageFacts(
                    note=f"{child.platform} manifest not read: {image.state}: {image.reason}"
                )
            manifest = parse_manifest(image.body, image.media_type)
        if manifest.config_digest is None:
            return ImageFacts(note="manifest names no config")
        config = parse_config(await client.blob(repository, manifest.config_digest, deadline_at))
    except BadManifest as exc:
        return ImageFacts(note=str(exc))
    except LookupFailed as exc:
        return ImageFacts(note=f"image config not read: {exc.state}: {exc.reason}")
    return ImageFacts(
        labels=config.labels, created=config.created, size=manifest.image_size, note=note
    )


class _Listings:
    """One tag listing per repository, shared by every missing tag of it."""

    def __init__(self) -> None:
        self.memo: dict[str, asyncio.Task[Any]] = {}

    def get(self, client: RegistryClient, repository: str, deadline_at: float) -> asyncio.Task[Any]:
        task = self.memo.get(repository)
        if task is None:
            task = asyncio.ensure_future(client.tags(repository, deadline_at))
            self.memo[repository] = task
        return task


async def _answer(
    tag: str,
    platform: str,
    client: RegistryClient,
    facts: _Facts,
    listings: _Listings,
    deadline_at: float,
) -> TagAnswer:
    ref = parse_ref(tag)
    head = await client.manifest(ref.repository, ref.tag, deadline_at)
    if head.state == Lookup.FOUND and head.digest:
        image = await facts.get(client, ref.repository, head.digest, platform, deadline_at)
        return TagAnswer(str(Lookup.FOUND), None, head.digest, head.media_type, image)
    if head.state != Lookup.NOT_FOUND:
        return TagAnswer(str(head.state), head.reason)
    listing = await listings.get(client, ref.repository, deadline_at)
    if listing.state == Lookup.NO_REPOSITORY:
        return TagAnswer(
            str(Lookup.NO_REPOSITORY), f"repository {ref.repository} is not in the registry"
        )
    others = (
        tuple(sorted(listing.tags, reverse=True)[:SHOW_OTHER_TAGS])
        if listing.state == Lookup.FOUND
        else ()
    )
    said = f"tag {ref.tag} is not in the registry"
    if listing.state == Lookup.FOUND:
        count = len(listing.tags)
        said += f" ({count} other tag{'s' if count != 1 else ''} of {ref.repository})"
    return TagAnswer(str(Lookup.NOT_FOUND), said, other_tags=others)


async def fill_tags(
    tags: Mapping[str, str],
    registry_url: str,
    *,
    deadline: float,
    concurrency: int = 8,
    timeout: float = 5.0,
    cache: Any | None = None,
) -> FillResult:
    """Ask the registry about every tag (`tag -> platform`) within `deadline` seconds in all."""
    started = time.monotonic()
    deadline_at = started + deadline
    answers: dict[str, TagAnswer] = {}
    asked: list[tuple[str, str]] = []
    for tag, platform in tags.items():
        try:
            ref = parse_ref(tag)
        except BadReference as exc:
            answers[tag] = TagAnswer(INVALID, str(exc))
            continue
        if registry_url_for(ref.host, registry_url) is None:
            answers[tag] = TagAnswer(
                ELSEWHERE, f"the tag names {ref.host}; the fleet's registry is {registry_url}"
            )
            continue
        asked.append((tag, platform))
    client = RegistryClient(registry_url, concurrency=concurrency, timeout=timeout)
    facts, listings = _Facts(cache), _Listings()
    try:
        results = await asyncio.gather(
            *(_answer(t, p, client, facts, listings, deadline_at) for t, p in asked),
            return_exceptions=True,
        )
    finally:
        await client.aclose()
    for (tag, _), result in zip(asked, results, strict=True):
        if isinstance(result, BaseException):
            answers[tag] = TagAnswer(str(Lookup.ERROR), f"{type(result).__name__}: {result}")
        else:
            answers[tag] = result
    return FillResult(answers, client.requests, time.monotonic() - started)


def platforms_of(cells: Iterable[Any]) -> dict[str, str]:
    """`tag -> platform` of planned cells."""
    return {cell.tag: cell.platform for cell in cells}
